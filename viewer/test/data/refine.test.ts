import { describe, expect, it } from "vitest";
import { type Box, CellTree, Ladder } from "../../src/data/cells";
import { DEFAULT_REFINE, plan, type ViewTest, Visibility } from "../../src/data/refine";

const ladder = new Ladder([0, 0.25, 0.5, 0.75, 1], [0, 1000, 3000, 7000, 15000]);
const settings = { ...DEFAULT_REFINE, density: 1, firstBudget: 1000, minSplitPoints: 10 };

/** A view of the x range [x0, x1) of the unit cube, seen face on: area = visible x-extent × y-extent × 1e4 px². */
function slab(x0: number, x1: number): ViewTest {
  return {
    classify(b: Box) {
      if (b[3] <= x0 || b[0] >= x1) return Visibility.Out;
      return b[0] >= x0 && b[3] <= x1 ? Visibility.Inside : Visibility.Partial;
    },
    area(b: Box) {
      const full = (b[3] - b[0]) * (b[4] - b[1]) * 1e4;
      const vis = Math.max(0, Math.min(b[3], x1) - Math.max(b[0], x0)) * (b[4] - b[1]) * 1e4;
      return { visible: vis, full };
    },
  };
}
const even = () => new Array(8).fill(1);

describe("plan", () => {
  it("starts with the whole species at q0 = 0 and the first budget", () => {
    const t = new CellTree([0, 0, 0, 1, 1, 1]);
    const p = plan(t, ladder, slab(0, 1), settings, { loaded: 1000, room: 1e6 }, even);
    expect(p.kind).toBe("request");
    if (p.kind !== "request") return;
    expect(p.request.cells).toEqual([t.root]);
    expect(p.request.q0s).toEqual([0]);
    expect(p.request.budget).toBe(1000);
  });

  it("refines what is in view only, splitting cells mostly off screen", () => {
    const t = new CellTree([0, 0, 0, 1, 1, 1]);
    t.apply([t.root], [0], 0.25, [1000], ladder);
    const p = plan(t, ladder, slab(0, 0.3), settings, { loaded: 1000, room: 1e6 }, even);
    expect(p.kind).toBe("request");
    if (p.kind !== "request") return;
    expect(t.root.leaf).toBe(false);
    for (const c of p.request.cells) expect(c.box[0]).toBeLessThan(0.3);
    expect(p.request.q0s.every((q) => q === 0.25)).toBe(true);
  });

  it("stops when the view holds enough, and when the budget is spent", () => {
    const t = new CellTree([0, 0, 0, 1, 1, 1]);
    t.apply([t.root], [0], 1, [15000], ladder);
    expect(plan(t, ladder, slab(0, 1), settings, { loaded: 1000, room: 1e6 }, even).kind).toBe("done");
    const u = new CellTree([0, 0, 0, 1, 1, 1]);
    u.apply([u.root], [0], 0.25, [1000], ladder);
    const full = plan(u, ladder, slab(0, 1), settings, { loaded: 1000, room: 10 }, even);
    expect(full.kind).toBe("full");
  });

  it("goes coarse to fine: the lowest quality in view first", () => {
    const t = new CellTree([0, 0, 0, 1, 1, 1]);
    t.apply([t.root], [0], 0.25, [1000], ladder);
    const kids = t.split(t.root, even());
    t.apply([kids[1]], [0.25], 0.5, [250], ladder);
    const p = plan(t, ladder, slab(0, 1), { ...settings, density: 100 }, { loaded: 1250, room: 1e6 }, even);
    expect(p.kind).toBe("request");
    if (p.kind !== "request") return;
    expect(p.request.q0s.every((q) => q === 0.25)).toBe(true);
    expect(p.request.cells).not.toContain(kids[1]);
  });

  it("asks for at most as many points as are loaded: each step about doubles the detail", () => {
    const t = new CellTree([0, 0, 0, 1, 1, 1]);
    t.apply([t.root], [0], 0.25, [1000], ladder);
    const p = plan(t, ladder, slab(0, 1), { ...settings, density: 1e3, firstBudget: 500 }, { loaded: 1000, room: 1e9 }, even);
    expect(p.kind).toBe("request");
    if (p.kind === "request") expect(p.request.budget).toBeLessThanOrEqual(1000);
  });
});
