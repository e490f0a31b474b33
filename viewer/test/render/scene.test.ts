import { describe, expect, it } from "vitest";
import type { SpeciesInfo } from "../../src/data/api";
import type { Box } from "../../src/data/cells";
import { encodeFrame, parseFrame } from "../../src/data/frame";
import { type RefineRequest, type ViewTest, Visibility } from "../../src/data/refine";
import type { GpuChunk, Renderer } from "../../src/render/renderer";
import { Scene } from "../../src/render/scene";

const info = {
  bounds: { min: [0, 0, 0], max: [1, 1, 1] },
  ladder: { quality: [0, 0.5, 1], count: [0, 4, 8] },
} as unknown as SpeciesInfo;

/** A renderer that only counts the chunks it holds. */
function fakeRenderer() {
  const held = new Set<GpuChunk>();
  const r = {
    upload: (_: unknown, count: number) => {
      const c = { count, buffers: new Map(), vao: null, vaoKey: "" } as GpuChunk;
      held.add(c);
      return c;
    },
    release: (c: GpuChunk) => held.delete(c),
  };
  return { renderer: r as unknown as Renderer, held };
}

/** A frame of points at x (y = z = 0.1) for the given cells' row counts. */
function frame(xs: number[], to: number, cells: number[]) {
  const col = (v: number[]) => new Float32Array(v);
  return parseFrame(encodeFrame({ rows: xs.length, to, cells: cells.map((rows) => ({ rows })), origin: [0, 0, 0], query_ms: 1 },
    { x: col(xs), y: col(xs.map(() => 0.1)), z: col(xs.map(() => 0.1)) }));
}

/** Sees the boxes whose x range reaches below xMax. */
const leftOf = (xMax: number): ViewTest => ({
  classify: (b: Box) => (b[0] < xMax ? Visibility.Inside : Visibility.Out),
  area: () => ({ visible: 1, full: 1 }),
});

describe("scene", () => {
  it("drops chunks out of view, the latest refinement first, and keeps the ranges exact", () => {
    const { renderer, held } = fakeRenderer();
    const s = new Scene({ ds: "d", step: 0, species: "p", columns: ["x", "y", "z"], where: "" }, info, renderer);
    const root = s.tree.root;
    const req = (cells = [root], q0s = [0]): RefineRequest => ({ cells, q0s, budget: 4, estimate: 4 });
    s.add(frame([0.1, 0.2, 0.7, 0.8], 0.5, [4]), req());
    expect(s.countOctants(root)).toEqual([2, 2, 0, 0, 0, 0, 0, 0]);
    const kids = s.tree.split(root, s.countOctants(root));
    s.add(frame([0.3, 0.4], 1, [2, 0]), req([kids[0], kids[1]], [0.5, 0.5]));
    s.add(frame([0.6], 1, [1]), req([kids[3]], [0.5]));
    expect(s.loaded).toBe(7);
    expect(held.size).toBe(3);

    // Looking at x < 0.5 only: the chunk of kids[3] (x >= 0.5) goes; the root's chunk stays
    // (it is in view, and under later refinements).
    expect(s.evict(leftOf(0.5), 100)).toBe(1);
    expect(kids[3].q).toBe(0.5);
    expect(kids[0].q).toBe(1);
    expect(s.loaded).toBe(6);
    expect(held.size).toBe(2);

    // Nothing in view: the latest chunk first, then the root's.
    expect(s.evict(leftOf(-1), 1)).toBe(2);
    expect(kids[0].q).toBe(0.5);
    expect(s.evict(leftOf(-1), 100)).toBe(4);
    expect(s.tree.leaves().every((l) => l.q === 0)).toBe(true);
    expect(s.loaded).toBe(0);
    expect(held.size).toBe(0);
  });

  it("counts the points passing ranges as the GPU does (float32)", () => {
    const { renderer } = fakeRenderer();
    const s = new Scene({ ds: "d", step: 0, species: "p", columns: ["x", "y", "z"], where: "" }, info, renderer);
    s.add(frame([0.1, 0.2, 0.7, 0.8], 0.5, [4]), { cells: [s.tree.root], q0s: [0], budget: 4, estimate: 4 });
    expect(s.countPassing([{ column: "x", lo: 0.15, hi: 0.75 }])).toBe(2);
    expect(s.countPassing([{ column: "x", lo: 0.1, hi: 0.1 }])).toBe(1); // 0.1 as float32 both sides
    expect(s.countPassing([{ column: "energy", lo: 0, hi: 0 }])).toBe(4); // not loaded: not filtered here
  });
});
