import { describe, expect, it, vi } from "vitest";
import type { Histogram, SpeciesInfo } from "../../src/data/api";
import { createStore } from "../../src/state/appstate";
import { ColorRangeControl } from "../../src/state/colorcontrol";

/** 1000 values 0 … 999 of `energy`; the server's histogram of them over a range. */
const VALUES = Array.from({ length: 1000 }, (_, i) => i);

function fakeApi() {
  const histogram = vi.fn(async (_ds: string, _step: number, _sp: string, p: Record<string, unknown>): Promise<Histogram> => {
    const [lo, hi] = String(p.range).split(",").map(Number);
    const bins = Number(p.bins);
    const counts = new Array<number>(bins).fill(0);
    for (const v of VALUES) {
      if (v < lo || v > hi) continue;
      counts[Math.min(bins - 1, Math.floor(((v - lo) / (hi - lo)) * bins))]++;
    }
    return { x: { column: String(p.x), bins, range: [lo, hi] }, counts, quality: 1, exact: true, total: 1000, query_ms: 0 };
  });
  return { histogram };
}

const INFO: SpeciesInfo = {
  dataset: "run", step: 0, time: 0, species: "e", count: 1000,
  bounds: { min: [0, 0, 0], max: [1, 1, 1] },
  columns: [
    { name: "energy", dtype: "f4", min: 0, max: 999 },
    { name: "flat", dtype: "f4", min: 5, max: 5 },
  ] as SpeciesInfo["columns"],
  ladder: { quality: [1], count: [1000] },
};

const settle = () => new Promise((r) => setTimeout(r, 0));

describe("ColorRangeControl", () => {
  it("searches the default range when the colour's keys change, and tells the store when found", async () => {
    const store = createStore("#ds=run&step=0&species=e");
    const api = fakeApi();
    const fail = vi.fn();
    const colour = new ColorRangeControl(store, api, fail);
    const found = vi.fn();
    store.subscribe(["rangeFound"], found);
    store.set({ info: INFO, color: "energy" });
    expect(colour.pending).toBe(true);
    expect(colour.source()).toBe("pending");
    expect(colour.range()).toEqual([0, 999]); // the min–max until the percentiles come
    for (let i = 0; i < 20 && colour.pending; i++) await settle();
    expect(found).toHaveBeenCalledTimes(1);
    expect(colour.source()).toBe("percentiles");
    const [lo, hi] = colour.range();
    // the 1st and 99th percentiles (values 9 and 990), each end rounded outwards to a bin of about 1
    expect(lo).toBeGreaterThanOrEqual(8);
    expect(lo).toBeLessThanOrEqual(9);
    expect(hi).toBeGreaterThanOrEqual(990);
    expect(hi).toBeLessThanOrEqual(991);
    expect(fail).not.toHaveBeenCalled();
    // the same keys again: known, no new search
    const asked = api.histogram.mock.calls.length;
    store.set({ color: "flat" });
    store.set({ color: "energy" });
    expect(api.histogram.mock.calls.length).toBe(asked);
    expect(colour.source()).toBe("percentiles");
  });

  it("takes a range set as it is, without searching; a column that does not vary keeps its extent", () => {
    const store = createStore("#ds=run&step=0&species=e");
    const api = fakeApi();
    const colour = new ColorRangeControl(store, api, vi.fn());
    store.set({ info: INFO, color: "energy", range: [1, 2] });
    expect(api.histogram).not.toHaveBeenCalled();
    expect(colour.source()).toBe("set");
    expect(colour.range()).toEqual([1, 2]);
    store.set({ color: "flat", range: undefined });
    expect(api.histogram).not.toHaveBeenCalled();
    expect(colour.source()).toBe("extent");
    expect(colour.range()).toEqual([5, 6]);
  });
});
