// The 2-D histogram panel: counts of two columns (x to the right, y up) on a log colour
// scale with the current colour map; empty bins stay black.

import type { Histogram } from "../data/api";
import { colormapAt } from "../render/colormap";
import { count, num } from "./dom";

export function drawHist2d(canvas: HTMLCanvasElement, info: HTMLElement, h: Histogram, map: string): void {
  const counts = h.counts as number[][];
  const nx = counts.length;
  const ny = nx ? counts[0].length : 0;
  canvas.width = Math.max(1, nx);
  canvas.height = Math.max(1, ny);
  const img = new ImageData(canvas.width, canvas.height);
  let top = 0;
  for (const row of counts) for (const c of row) top = Math.max(top, c);
  const scale = top > 0 ? 1 / Math.log1p(top) : 0;
  for (let i = 0; i < nx; i++) {
    for (let j = 0; j < ny; j++) {
      const c = counts[i][j];
      const p = 4 * ((ny - 1 - j) * nx + i);
      const [r, g, b] = c > 0 ? colormapAt(map, Math.log1p(c) * scale) : [0, 0, 0];
      img.data[p] = r;
      img.data[p + 1] = g;
      img.data[p + 2] = b;
      img.data[p + 3] = 255;
    }
  }
  canvas.getContext("2d")!.putImageData(img, 0, 0);
  const y = h.y!;
  info.textContent =
    `${h.x.column} ${num(h.x.range[0])} … ${num(h.x.range[1])} (→) × ${y.column} ${num(y.range[0])} … ${num(y.range[1])} (↑); ` +
    `${count(h.total)} particles, quality ${num(h.quality)}${h.exact ? " (exact)" : ""}, log scale`;
}
