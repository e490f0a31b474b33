import { describe, expect, it } from "vitest";
import { encodeFrame, FrameError, parseFieldFrame, parseFrame } from "../../src/data/frame";
import { type FieldInfo, axisPositions, levelCount, nearestIndex, planeIndex, planeOf, planeSamples, sliceIndexBox, slicePlan } from "../../src/data/slice";

const info: FieldInfo = {
  dataset: "run",
  step: 0,
  field: "ramp",
  dtype: "f32",
  ndim: 3,
  dims: [64, 32, 16],
  levels: 6,
  level_dims: [],
  components: null,
  centering: "node",
  unit: "",
  origin: [1, 2, 3],
  spacing: [0.5, 0.25, 1],
  bounds: { min: [1, 2, 3], max: [32.5, 9.75, 18] },
  ranges: [{ component: null, min: 0, max: 63 }],
};

describe("slice planning", () => {
  it("counts the samples of a level as the server does (every 2^k-th from 0)", () => {
    expect([0, 1, 2, 3, 6].map((k) => levelCount(37, k))).toEqual([37, 19, 10, 5, 1]);
    expect(planeSamples([64, 32, 16], 2, 0)).toBe(2048);
    expect(planeSamples([64, 32, 16], 0, 1)).toBe(16 * 8);
  });

  it("starts at the finest level whose plane fits 4096 samples, then goes to level 0", () => {
    expect(slicePlan([64, 32, 16], 2, 6)).toEqual([0]); // 2048 samples: full resolution at once
    expect(slicePlan([1024, 512, 256], 2, 10)).toEqual([4, 3, 2, 1, 0]); // 64 x 32 at level 4
    expect(slicePlan([1024, 512, 256], 0, 10)).toEqual([3, 2, 1, 0]); // 64 x 32 at level 3
    for (const dims of [[5, 7, 9], [4097, 3, 1000], [100000, 100000, 2]]) {
      for (const axis of [0, 1, 2] as const) {
        const plan = slicePlan(dims, axis, 17, 4096, 4_000_000, 4096);
        const first = plan[0];
        expect(planeSamples(dims, axis, first) <= 4096 || first === 17).toBe(true);
        if (first > 0) expect(planeSamples(dims, axis, first - 1)).toBeGreaterThan(4096);
        plan.forEach((k, i) => i > 0 && expect(k).toBe(plan[i - 1] - 1)); // coarse to fine, one level at a time
        const last = plan[plan.length - 1];
        expect(planeSamples(dims, axis, last)).toBeLessThanOrEqual(Math.max(4_000_000, planeSamples(dims, axis, first)));
      }
    }
    // a plane too large for a texture stops before level 0
    expect(slicePlan([100000, 100000, 2], 2, 17).at(-1)).toBe(6); // 1563² samples: level 5 has 3125² > 4M
  });

  it("puts the plane on a sample the level holds", () => {
    expect(planeIndex(16, 7, 0)).toBe(7);
    expect(planeIndex(16, 7, 2)).toBe(8);
    expect(planeIndex(16, 5, 2)).toBe(4);
    expect(planeIndex(16, 15, 3)).toBe(8); // 16 would be past the last sample
    expect(planeIndex(16, 15, 6)).toBe(0);
    expect(sliceIndexBox([64, 32, 16], 2, 7, 2)).toEqual([0, 0, 8, 64, 32, 9]);
    expect(sliceIndexBox([64, 32, 16], 0, 33, 0)).toEqual([33, 0, 0, 34, 32, 16]);
  });

  it("finds the sample nearest a position", () => {
    const xs = axisPositions(info, 0);
    expect(xs.length).toBe(64);
    expect(xs[0]).toBe(1);
    expect(xs[63]).toBe(32.5);
    expect(nearestIndex(xs, -5)).toBe(0);
    expect(nearestIndex(xs, 99)).toBe(63);
    expect(nearestIndex(xs, 1.74)).toBe(1);
    expect(nearestIndex(xs, 1.76)).toBe(2);
    expect(nearestIndex(axisPositions({ ...info, centering: "cell" }, 2), 3.6)).toBe(0);
    expect(nearestIndex(axisPositions({ ...info, origin: undefined, spacing: undefined, coords: [[0, 1, 10], [0], [0]] }, 0), 6)).toBe(2);
  });
});

const fieldHeader = {
  rows: 6,
  field: "ramp",
  level: 1,
  dims: [3, 2, 1],
  first: [0, 2, 4],
  stride: 2,
  index_box: { lo: [0, 1, 4], hi: [6, 4, 5] },
  origin: [1, 2.5, 7],
  step: [1, 0.5, 2],
  query_ms: 0.5,
};

describe("field frames", () => {
  it("parses the samples and the lattice", () => {
    const v = new Float32Array([0, 1, 2, 3, 4, NaN]);
    const f = parseFieldFrame(encodeFrame(fieldHeader, { ramp: v }));
    expect(f.header.level).toBe(1);
    expect(f.header.dims).toEqual([3, 2, 1]);
    expect(Array.from(f.columns.ramp as Float32Array)).toEqual([0, 1, 2, 3, 4, NaN]);
    expect(f.columns.ramp.buffer).toBe(f.buffer);
  });

  it("refuses frames whose lattice does not hold the rows", () => {
    const v = new Float32Array(6);
    const bad = (h: object) => () => parseFieldFrame(encodeFrame({ ...fieldHeader, ...h }, { ramp: v }));
    expect(bad({ dims: [3, 3, 1] })).toThrow(/dims/);
    expect(bad({ stride: 4 })).toThrow(/stride/);
    expect(bad({ origin: [1, 2] })).toThrow(/origin/);
    expect(bad({ step: [1, 0, 1] })).toThrow(/step/);
    expect(bad({ step: null })).toThrow(/positions/);
    expect(bad({ level: -1 })).toThrow(FrameError);
    expect(() => parseFieldFrame(encodeFrame({ ...fieldHeader, step: null, positions: [[1, 2, 3], [0, 1], [5]] }, { ramp: v }))).not.toThrow();
    // a points frame is not a field frame, nor the other way round
    expect(() => parseFrame(encodeFrame(fieldHeader, { ramp: v }))).toThrow(/cells/);
  });

  it("places the plane: a cell per sample, clamped to the field's bounds", () => {
    // a z slice at level 1 of the info's grid: 32 x 16 samples from (1, 2) by (1, 0.5)
    const h = { ...fieldHeader, rows: 512, dims: [32, 16, 1], first: [0, 0, 6], origin: [1, 2, 9], step: [1, 0.5, 2], index_box: { lo: [0, 0, 6], hi: [64, 32, 7] } };
    const p = planeOf(info, 2, parseFieldFrame(encodeFrame(h, { ramp: new Float32Array(512) })).header, new Float32Array(512));
    expect([p.width, p.height, p.level]).toEqual([32, 16, 1]);
    expect(p.corners[0]).toEqual([0.75, 1.875, 9]); // the bounds less half a sample of level 0
    expect(p.corners[3]).toEqual([32.5, 9.75, 9]); // the last sample (32, 9.5) plus half a step
    // an x slice: u is y, v is z
    const hx = { ...h, rows: 16 * 32, dims: [1, 32, 16], first: [4, 0, 0], origin: [3, 2, 3], step: [0.5, 0.25, 1] };
    const px = planeOf(info, 0, parseFieldFrame(encodeFrame(hx, { ramp: new Float32Array(512) })).header, new Float32Array(512));
    expect([px.width, px.height]).toEqual([32, 16]);
    expect(px.corners[0]).toEqual([3, 1.875, 2.5]);
    expect(px.corners[3]).toEqual([3, 9.875, 18.5]);
  });
});
