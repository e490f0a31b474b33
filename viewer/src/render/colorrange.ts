// The points' colour scale: its default range, from the 1st to the 99th percentile of the
// colour column in the step (so that a few outliers do not wash the picture into one
// colour), found from the server's histograms; and the log scale's mapping of values to
// the colour map.
//
// The percentiles come from 1-D histograms (GET .../histogram): one over the column's
// min–max, then, for each end, one over the bin that holds it, until that bin is fine
// enough (RESOLUTION) or RANGE_PASSES histograms were asked (on a log scale the low end
// goes on to LOG_PASSES: it is found relative to its own value, however far under the top). Each end is the edge of its bin
// on the outer side, so the range holds the percentiles and errs by at most one fine bin.

/** The default range: from the ROBUST_PERCENTILES[0]-th to the [1]-th percentile (of the positive values on a log scale). */
export const ROBUST_PERCENTILES: readonly [number, number] = [1, 99];
/** bins of each histogram (the server's default limit is 4096) */
export const RANGE_BINS = 1024;
/** histograms asked per end at most (the first shared): a bin of 1/1024⁴ of the min–max at the finest */
export const RANGE_PASSES = 4;
/** on a log scale, the low end is refined on (up to this many histograms) until found to RESOLUTION of its value: 1/1024¹² reaches across float32's range */
export const LOG_PASSES = 12;
/** particles the first histogram reads at most (the server picks the quality; the later ones read the same particles) */
export const RANGE_BUDGET = 200_000;
/** an end is found when its bin is at most this share of the range (on a log scale: of the end's value) */
export const RESOLUTION = 1e-3;
/** on a log scale, a range whose low end is ≤ 0 starts this many decades under its high end */
export const LOG_DECADES = 6;

/** A histogram's answer, as much of it as the search needs. */
export interface BinCounts {
  counts: number[];
  /** the quality read (the later histograms ask for the same) */
  quality: number;
}

/** Asks for the histogram of the colour column over `range` (at `quality`; null: the server picks by RANGE_BUDGET). */
export type HistogramFetch = (range: [number, number], quality: number | null) => Promise<BinCounts>;

/** Where a rank lies: the bin [a, b] that holds the value of that rank, and the values under a. */
export interface Bracket {
  a: number;
  b: number;
  below: number;
}

/**
 * The bin of `counts` (over [lo, hi], equal bins) that holds the value of rank `k` (0-based,
 * in ascending order), given `below` values under lo. Past the last count (a later
 * histogram can count a few values fewer than the bin it refines): the last bin.
 */
export function locate(counts: readonly number[], lo: number, hi: number, k: number, below = 0): Bracket {
  const n = counts.length;
  const step = (hi - lo) / n;
  const edge = (i: number) => (i === n ? hi : i * step + lo); // the server's edges (numpy.histogram's)
  let c = below;
  for (let i = 0; i < n; i++) {
    if (c + counts[i] > k) return { a: edge(i), b: edge(i + 1), below: c };
    c += counts[i];
  }
  return { a: edge(n - 1), b: hi, below: c - (counts[n - 1] ?? 0) };
}

/** The ranks (0-based) of percentiles p0 and p1 (in %) among n values: the lower rounded down, the upper up. */
export function percentileRanks(n: number, [p0, p1]: readonly [number, number]): [number, number] {
  return [Math.floor((p0 / 100) * (n - 1)), Math.ceil((p1 / 100) * (n - 1))];
}

function fine(end: Bracket, width: number, log: boolean, low: boolean): boolean {
  const size = end.b - end.a;
  if (log) return low ? end.a > 0 && size <= RESOLUTION * end.a : size <= RESOLUTION * end.b;
  return size <= RESOLUTION * width;
}

/**
 * The default colour range: [the low percentile, the high one] of the column's values that
 * `fetch` counts (on a log scale it counts the positive ones only), each end rounded
 * outwards to a bin; `extent` is the column's [min, max]. Null when there is nothing to
 * count, or when the two percentiles are one value (fewer than 1 in 50 values differ from
 * it): the caller keeps the min–max then.
 */
export async function percentileRange(
  fetch: HistogramFetch,
  extent: [number, number],
  log: boolean,
  percentiles: readonly [number, number] = ROBUST_PERCENTILES,
): Promise<[number, number] | null> {
  const lo = log ? Math.max(0, extent[0]) : extent[0];
  const hi = extent[1];
  if (!(hi > lo)) return null;
  const first = await fetch([lo, hi], null);
  const n = first.counts.reduce((s, c) => s + c, 0);
  if (n === 0) return null;
  const ranks = percentileRanks(n, percentiles);
  const ends = ranks.map((k) => locate(first.counts, lo, hi, k));
  for (let pass = 1; pass < LOG_PASSES; pass++) {
    const same = ends[0].a === ends[1].a && ends[0].b === ends[1].b;
    const width = ends[1].b - ends[0].a;
    let todo = same ? [0, 1] : [0, 1].filter((i) => !fine(ends[i], width, log, i === 0));
    if (pass >= RANGE_PASSES) todo = log ? todo.filter((i) => i === 0) : [];
    if (todo.length === 0) break;
    const asks = new Map<string, Promise<BinCounts>>();
    for (const i of todo) {
      const key = `${ends[i].a},${ends[i].b}`;
      if (!asks.has(key)) asks.set(key, fetch([ends[i].a, ends[i].b], first.quality));
    }
    const answers = await Promise.all(todo.map((i) => asks.get(`${ends[i].a},${ends[i].b}`)!));
    todo.forEach((i, j) => {
      const e = ends[i];
      ends[i] = locate(answers[j].counts, e.a, e.b, ranks[i], e.below);
    });
  }
  if (ends[0].a === ends[1].a && ends[0].b === ends[1].b) return null; // one value, to the finest bin
  const low = log && ends[0].a <= 0 ? ends[0].b : ends[0].a;
  const high = ends[1].b;
  return high > low ? [low, high] : null;
}

/** The ends of the scale as drawn: [lo, hi] on a linear scale; on a log scale a low end ≤ 0 becomes hi / 10^LOG_DECADES (and a high end ≤ 0, 1). */
export function scaleEnds(lo: number, hi: number, log: boolean): [number, number] {
  if (!log) return [lo, hi];
  const h = hi > 0 ? hi : 1;
  return [lo > 0 && lo < h ? lo : h / 10 ** LOG_DECADES, h];
}

/**
 * Where a value falls on the colour map, in [0, 1]: (v − lo) / (hi − lo), or on a log scale
 * (ln v − ln lo) / (ln hi − ln lo), values ≤ 0 (and NaN) at 0, the low end's colour; clamped
 * as the renderer's shader does (renderer.ts computes the same in GLSL).
 */
export function colorT(v: number, lo: number, hi: number, log: boolean): number {
  const [a, b] = scaleEnds(lo, hi, log);
  let t: number;
  if (log) t = v > 0 ? (Math.log(v) - Math.log(a)) / (Math.log(b) - Math.log(a)) : 0;
  else t = (v - a) / (b - a);
  return Math.min(1, Math.max(0, t));
}

/** What the shader gets: u_crange ([lo, hi] minus the column's offset in the chunks; on a log scale their natural logs), u_coff (the offset), u_log. */
export function shaderScale(lo: number, hi: number, log: boolean, offset: number): { range: [number, number]; offset: number; log: boolean } {
  const [a, b] = scaleEnds(lo, hi, log);
  return log ? { range: [Math.log(a), Math.log(b)], offset, log } : { range: [a - offset, b - offset], offset, log };
}

/** The default ranges of columns and scales (a key names one), each found once (a failed search, too: then none); a search for another key aborts the one under way. */
export class AutoRange {
  private readonly found = new Map<string, [number, number] | null>();
  private searching: { key: string; ctl: AbortController } | null = null;

  /** a search is under way */
  get pending(): boolean {
    return this.searching !== null;
  }

  /** The range found for `key`; null while searching, or when there is none. */
  known(key: string): [number, number] | null {
    return this.found.get(key) ?? null;
  }

  /** Starts `search` unless `key` was searched already; `done` is called when it ends (with the error when it failed). */
  find(key: string, search: (signal: AbortSignal) => Promise<[number, number] | null>, done: (error?: unknown) => void): void {
    if (this.found.has(key) || this.searching?.key === key) return;
    this.searching?.ctl.abort();
    const me = { key, ctl: new AbortController() };
    this.searching = me;
    const end = (range: [number, number] | null, error?: unknown) => {
      if (this.searching !== me) return; // aborted for another key
      this.searching = null;
      this.found.set(key, range);
      done(error);
    };
    search(me.ctl.signal).then(
      (range) => end(range),
      (e) => end(null, e),
    );
  }
}
