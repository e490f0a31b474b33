import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AutoRange,
  colorT,
  type HistogramFetch,
  LOG_DECADES,
  LOG_PASSES,
  locate,
  percentileRange,
  percentileRanks,
  RANGE_BINS,
  RANGE_PASSES,
  RESOLUTION,
  ROBUST_PERCENTILES,
  scaleEnds,
  shaderScale,
} from "../../src/render/colorrange";

/** The server's 1-D histogram, by brute force: numpy.histogram's edges and bins over `values`, counting the asks. */
function histogrammer(values: ArrayLike<number>, firstQuality = 1) {
  const asks: { range: [number, number]; quality: number | null }[] = [];
  const fetch: HistogramFetch = async (range, quality) => {
    asks.push({ range, quality });
    const [lo, hi] = range;
    const n = RANGE_BINS;
    const step = (hi - lo) / n;
    const edges = Array.from({ length: n + 1 }, (_, k) => (k === n ? hi : k * step + lo));
    const counts = new Array<number>(n).fill(0);
    for (let j = 0; j < values.length; j++) {
      const v = values[j];
      if (!(v >= lo && v <= hi)) continue;
      let i = Math.min(n - 1, Math.floor(((v - lo) / (hi - lo)) * n));
      while (i > 0 && v < edges[i]) i--;
      while (i < n - 1 && v >= edges[i + 1]) i++;
      counts[i]++;
    }
    return { counts, quality: quality ?? firstQuality };
  };
  return { fetch, asks };
}

/** The exact percentiles (the ranks percentileRanks gives) of values, sorted. */
function exact(values: number[]): [number, number] {
  const s = Float64Array.from(values).sort();
  const [k0, k1] = percentileRanks(s.length, ROBUST_PERCENTILES);
  return [s[k0], s[k1]];
}

/** A seeded generator of normal deviates (Box–Muller over a 32-bit LCG). */
function normals(n: number, seed: number): number[] {
  let s = seed >>> 0;
  const u = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) + 0.5) / 2 ** 32;
  return Array.from({ length: n }, () => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u()));
}

/** The range holds the exact percentiles, each end within its allowed error (a fine bin). */
function expectBrackets(range: [number, number] | null, values: number[], log = false) {
  const [q0, q1] = exact(values);
  expect(range).not.toBeNull();
  const [lo, hi] = range!;
  const extent = Math.max(...values) - Math.max(log ? 0 : -Infinity, Math.min(...values));
  const finest = log ? 0 : extent / RANGE_BINS ** RANGE_PASSES;
  expect(lo).toBeLessThanOrEqual(q0);
  expect(hi).toBeGreaterThanOrEqual(q1);
  const slack = 1 + 1e-9;
  expect(q0 - lo).toBeLessThanOrEqual(Math.max(RESOLUTION * (log ? q0 : hi - lo), finest) * slack);
  expect(hi - q1).toBeLessThanOrEqual(Math.max(RESOLUTION * (log ? hi : hi - lo), finest) * slack);
}

describe("the default colour range (robust percentiles)", () => {
  it("ignores one extreme outlier", async () => {
    const values = normals(50_000, 7).map((z) => 10 + z);
    values.push(10_000); // 1000× the typical value
    const { fetch, asks } = histogrammer(values, 0.25);
    const range = await percentileRange(fetch, [Math.min(...values), Math.max(...values)], false);
    expectBrackets(range, values);
    const [q0, q1] = exact(values);
    expect(range![1] - range![0]).toBeLessThan((q1 - q0) * 1.01); // min–max would be 2000× wider
    expect(asks.length).toBeLessThanOrEqual(1 + 2 * (RANGE_PASSES - 1));
    expect(asks[0].quality).toBeNull(); // the first at the server's pick, the later at its quality
    expect(asks.slice(1).every((a) => a.quality === 0.25)).toBe(true);
  });

  it("brackets the percentiles of any data", async () => {
    const value = fc.oneof(fc.double({ min: -1e6, max: 1e6, noNaN: true }).filter((v) => v === 0 || Math.abs(v) > 1e-200), fc.integer({ min: -3, max: 3 }));
    await fc.assert(
      fc.asyncProperty(fc.array(value, { minLength: 2, maxLength: 400 }), async (values) => {
        const lo = Math.min(...values);
        const hi = Math.max(...values);
        const range = await percentileRange(histogrammer(values).fetch, [lo, hi], false);
        const [q0, q1] = exact(values);
        if (range === null) expect(q1 - q0).toBeLessThanOrEqual((hi - lo) / RANGE_BINS ** RANGE_PASSES);
        else expectBrackets(range, values);
      }),
      { numRuns: 200 },
    );
  });

  it("keeps a two-valued column's values as the ends", async () => {
    const values = Array.from({ length: 1000 }, (_, i) => i % 2);
    expect(await percentileRange(histogrammer(values).fetch, [0, 1], false)).toEqual([0, 1]);
  });

  it("gives none when the percentiles are one value", async () => {
    const values = Array.from({ length: 1000 }, (_, i) => (i < 995 ? 1 : i));
    expect(await percentileRange(histogrammer(values).fetch, [1, 999], false)).toBeNull();
    expect(await percentileRange(histogrammer([]).fetch, [0, 1], false)).toBeNull();
    expect(await percentileRange(histogrammer([]).fetch, [2, 2], false)).toBeNull(); // asks nothing
  });

  it("on a log scale, finds the percentiles of the positive values to a relative precision", async () => {
    const all = normals(20_000, 3).map((z) => Math.exp(4 * z)); // about 7 decades either side of 1
    all.push(0, 0, -5, 1e12);
    const positive = all.filter((v) => v > 0); // what the app's `where: column > 0` counts
    const { fetch, asks } = histogrammer(positive);
    const range = await percentileRange(fetch, [Math.min(...all), Math.max(...all)], true);
    expect(range![0]).toBeGreaterThan(0);
    expectBrackets(range, positive, true);
    expect(asks.length).toBeLessThanOrEqual(2 * LOG_PASSES);
  });
});

describe("locate", () => {
  it("finds the bin of a rank", () => {
    expect(locate([2, 0, 3, 1], 0, 4, 0)).toEqual({ a: 0, b: 1, below: 0 });
    expect(locate([2, 0, 3, 1], 0, 4, 2)).toEqual({ a: 2, b: 3, below: 2 });
    expect(locate([2, 0, 3, 1], 0, 4, 5, 0)).toEqual({ a: 3, b: 4, below: 5 });
    expect(locate([2, 0, 3, 1], 10, 14, 7, 5)).toEqual({ a: 12, b: 13, below: 7 });
    expect(locate([1, 1], 0, 2, 9)).toEqual({ a: 1, b: 2, below: 1 }); // past the end: the last bin
  });
});

describe("the colour scale", () => {
  it("maps linearly, clamped", () => {
    fc.assert(
      fc.property(fc.double({ min: -1e3, max: 1e3, noNaN: true }), fc.double({ min: -1e3, max: 1e3, noNaN: true }), fc.double({ min: 1e-3, max: 1e3, noNaN: true }), (v, lo, w) => {
        const want = Math.min(1, Math.max(0, (v - lo) / w));
        expect(colorT(v, lo, lo + w, false)).toBeCloseTo(want, 9);
      }),
    );
  });

  it("maps by decades on a log scale; values ≤ 0 at the low end", () => {
    expect(colorT(10, 1, 1000, true)).toBeCloseTo(1 / 3, 12);
    expect(colorT(100, 1, 1000, true)).toBeCloseTo(2 / 3, 12);
    expect(colorT(Math.sqrt(10), 1, 10, true)).toBeCloseTo(0.5, 12);
    expect(colorT(0, 1, 1000, true)).toBe(0);
    expect(colorT(-3, 1, 1000, true)).toBe(0);
    expect(colorT(NaN, 1, 1000, true)).toBe(0);
    expect(colorT(1e6, 1, 1000, true)).toBe(1);
    // a range from ≤ 0: LOG_DECADES decades under its high end
    expect(scaleEnds(0, 100, true)).toEqual([100 / 10 ** LOG_DECADES, 100]);
    expect(scaleEnds(-5, 100, true)).toEqual([100 / 10 ** LOG_DECADES, 100]);
    expect(colorT(100 / 10 ** (LOG_DECADES / 2), -5, 100, true)).toBeCloseTo(0.5, 12);
    expect(scaleEnds(-5, 100, false)).toEqual([-5, 100]);
  });

  it("gives the shader the same mapping", () => {
    // linear: the range less the column's offset in the chunks; log: the logs, the offset added back per point
    expect(shaderScale(2, 6, false, 1)).toEqual({ range: [1, 5], offset: 1, log: false });
    const s = shaderScale(10, 1000, true, 4);
    expect(s.log).toBe(true);
    expect(s.offset).toBe(4);
    const stored = 96; // the value 100 stored less its offset
    const t = (Math.log(stored + s.offset) - s.range[0]) / (s.range[1] - s.range[0]);
    expect(t).toBeCloseTo(colorT(100, 10, 1000, true), 12);
  });
});

describe("AutoRange", () => {
  it("searches each key once, aborts a search overtaken by another key, keeps a failure as none", async () => {
    const auto = new AutoRange();
    const signals: AbortSignal[] = [];
    const release: ((r: [number, number] | null) => void)[] = [];
    const search = (signal: AbortSignal) => {
      signals.push(signal);
      return new Promise<[number, number] | null>((resolve, reject) => {
        release.push(resolve);
        signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
      });
    };
    const done: unknown[] = [];
    auto.find("a", search, (e) => done.push(e ?? "ok"));
    auto.find("a", search, () => done.push("again")); // under way: not asked twice
    expect(signals.length).toBe(1);
    expect(auto.pending).toBe(true);
    auto.find("b", search, (e) => done.push(e ?? "ok b"));
    expect(signals[0].aborted).toBe(true);
    release[1]([2, 3]);
    await new Promise((r) => setTimeout(r, 0));
    expect(done).toEqual(["ok b"]); // the aborted search reports nothing
    expect(auto.known("b")).toEqual([2, 3]);
    expect(auto.known("a")).toBeNull();
    expect(auto.pending).toBe(false);
    auto.find("b", search, () => done.push("b again")); // found: not asked again
    expect(signals.length).toBe(2);

    const failing = () => Promise.reject(new Error("413"));
    auto.find("c", failing, (e) => done.push((e as Error).message));
    await new Promise((r) => setTimeout(r, 0));
    expect(done.at(-1)).toBe("413");
    expect(auto.known("c")).toBeNull();
    auto.find("c", failing, () => done.push("retried")); // a failure is not retried (no loop of requests)
    await new Promise((r) => setTimeout(r, 0));
    expect(done.at(-1)).toBe("413");
  });
});
