import { describe, expect, it } from "vitest";
import { type Box, cellParam, CellTree, Ladder, midpoint } from "../../src/data/cells";

const bounds: Box = [0, 0, 0, 0.3, 1, 7];
const ladder = new Ladder([0, 0.25, 0.5, 0.75, 1], [0, 100, 300, 700, 1500]);

describe("cells", () => {
  it("split at the same double-precision midpoints every time, tiling the parent", () => {
    const a = new CellTree(bounds);
    const b = new CellTree(bounds);
    const ca = a.split(a.root);
    const cb = b.split(b.root);
    expect(ca.map((c) => c.box)).toEqual(cb.map((c) => c.box));
    expect(midpoint(bounds)[0]).toBe(0.15);
    // children share faces exactly and cover the parent
    for (let axis = 0; axis < 3; axis++) {
      const los = new Set(ca.map((c) => c.box[axis]));
      const his = new Set(ca.map((c) => c.box[3 + axis]));
      expect([...los].sort()).toEqual([bounds[axis], midpoint(bounds)[axis]].sort());
      expect([...his].sort()).toEqual([midpoint(bounds)[axis], bounds[3 + axis]].sort());
    }
    expect(ca.every((c) => c.q === 0 && c.depth === 1)).toBe(true);
  });

  it("sends boxes and qualities in shortest round-trip form", () => {
    const q = 1 / 29;
    const p = cellParam([0.1, 0.2, 0.30000000000000004, 1, 2, 3], q);
    expect(p).toBe("0.1,0.2,0.30000000000000004,1,2,3,0.034482758620689655");
    expect(p.split(",").map(Number)).toEqual([0.1, 0.2, 0.30000000000000004, 1, 2, 3, q]);
  });

  it("children inherit the quality; chained ranges stay exact through drops", () => {
    const t = new CellTree(bounds);
    const c0 = t.apply([t.root], [0], 0.25, [100], ladder);
    expect(t.root.q).toBe(0.25);
    expect(t.root.share).toBe(1);
    const kids = t.split(t.root, [50, 10, 10, 10, 10, 5, 5, 0]);
    expect(kids.map((k) => k.q)).toEqual(new Array(8).fill(0.25));
    expect(kids[0].share).toBeCloseTo(0.5);
    const c1 = t.apply([kids[0], kids[1]], [0.25, 0.25], 0.5, [90, 20], ladder);
    expect(kids[0].q).toBe(0.5);
    expect(kids[2].q).toBe(0.25);
    // the root's chunk is under a later refinement: it cannot go first
    expect(t.canDrop(c0)).toBe(false);
    expect(t.canDrop(c1)).toBe(true);
    t.drop(c1);
    expect(kids.map((k) => k.q)).toEqual(new Array(8).fill(0.25));
    expect(t.canDrop(c0)).toBe(true);
    t.drop(c0);
    expect(t.leaves().every((l) => l.q === 0)).toBe(true);
    expect(() => t.drop(c1)).toThrow(/later refinement/); // its leaves are no longer at its `to`
  });

  it("refuses a cell that changed while its request was in flight", () => {
    const t = new CellTree(bounds);
    t.apply([t.root], [0], 0.25, [100], ladder);
    expect(() => t.apply([t.root], [0], 0.5, [1], ladder)).toThrow(/in flight/);
  });

  it("a cell already past the answer's quality keeps its own", () => {
    const t = new CellTree(bounds);
    t.apply([t.root], [0], 0.5, [300], ladder);
    const [a, b] = t.split(t.root);
    t.apply([a], [0.5], 0.75, [50], ladder);
    const c = t.apply([a, b], [0.75, 0.5], 0.75, [0, 40], ladder);
    expect(a.q).toBe(0.75);
    expect(b.q).toBe(0.75);
    expect(c.cells[0].q0).toBe(c.cells[0].to);
  });

  it("ladder counts and rungs", () => {
    expect(ladder.countAt(0.5)).toBe(300);
    expect(ladder.countAt(0.625)).toBe(500);
    expect(ladder.next(0.25)).toBe(0.5);
    expect(ladder.next(0.3)).toBe(0.5);
    expect(ladder.next(1)).toBe(1);
  });
});
