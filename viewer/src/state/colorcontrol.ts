// The colour range of the points: the one set, else the default of the view's column and
// scale (the robust percentiles, colorrange.ts), searched for when those change; until it is
// found, or without it, the column's min–max. The search's end is told through the store
// (`rangeFound`), so that the legend and the panel show the range found.

import type { Api } from "../data/api";
import { AutoRange, type HistogramFetch, percentileRange, RANGE_BINS, RANGE_BUDGET } from "../render/colorrange";
import { type AppState, type AppStore, extent } from "./appstate";

/** The keys the default range depends on. */
export const COLOR_RANGE_KEYS = ["info", "ds", "step", "species", "color", "log", "range"] as const satisfies readonly (keyof AppState)[];

export type RangeSource = "set" | "percentiles" | "pending" | "extent";

export class ColorRangeControl {
  private readonly auto = new AutoRange();

  constructor(
    private readonly store: AppStore,
    private readonly api: Pick<Api, "histogram">,
    private readonly fail: (e: unknown) => void,
  ) {
    store.subscribe(COLOR_RANGE_KEYS, () => this.find());
  }

  /** a search is under way */
  get pending(): boolean {
    return this.auto.pending;
  }

  /** The colour range: the one set, else the default (the percentiles, once found; until then, or without them, the min–max). */
  range(): [number, number] {
    const s = this.store.get();
    return s.range ?? this.auto.known(this.key()) ?? extent(s, s.color ?? "z");
  }

  /** Where the colour range comes from (for tests): set, percentiles, pending (the min–max until they come), extent. */
  source(): RangeSource {
    if (this.store.get().range) return "set";
    if (this.auto.known(this.key())) return "percentiles";
    return this.auto.pending ? "pending" : "extent";
  }

  private key(): string {
    const v = this.store.get();
    return JSON.stringify([v.ds, v.step, v.species, v.color, v.log]);
  }

  /** Finds the default colour range of the view's column and scale, when it is not known yet. */
  private find(): void {
    const { ds, step, species, color, log, range, info } = this.store.get();
    const c = info?.columns.find((x) => x.name === color);
    if (range || !c || c.min === null || c.max === null || !(c.max > c.min)) return;
    const where = log ? `${c.name} > 0` : undefined;
    const key = this.key();
    this.auto.find(
      key,
      (signal) => {
        const fetch: HistogramFetch = (r, quality) =>
          this.api
            .histogram(ds!, step!, species!, { x: c.name, bins: RANGE_BINS, range: r.join(","), where, ...(quality === null ? { budget: RANGE_BUDGET } : { quality }) }, signal)
            .then((h) => ({ counts: h.counts as number[], quality: h.quality }));
        return percentileRange(fetch, [c.min!, c.max!], log);
      },
      (error) => {
        if (error !== undefined) this.fail(error);
        this.store.set({ rangeFound: key });
      },
    );
  }
}
