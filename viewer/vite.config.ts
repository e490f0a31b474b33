// Builds the viewer into the Python package, where `motes serve` serves it at / and /assets/.
import { defineConfig } from "vitest/config";

export default defineConfig({
  base: "./",
  build: {
    outDir: "../python/motes/server/app", // relative to this folder
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    chunkSizeWarningLimit: 1024,
  },
  worker: { format: "es" },
  server: {
    // `npm run dev` proxies the API to `motes serve --port 8765`, started separately.
    proxy: { "/api": "http://127.0.0.1:8765" },
  },
  test: { include: ["test/**/*.test.ts"], environment: "node" },
});
