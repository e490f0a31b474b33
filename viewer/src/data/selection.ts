// The selection: the expression and the range filters, as the server's `where`, and which
// changes of the ranges the GPU can show without asking the server again.

import { MAX_GPU_FILTERS } from "../render/renderer";

/** A range of one column: the points with lo <= value <= hi. */
export interface RangeFilter {
  column: string;
  lo: number;
  hi: number;
}

/** The expression and the ranges joined by `and` (the expression in parentheses when joined). */
export function whereOf(expression: string, filters: RangeFilter[]): string {
  const e = expression.trim();
  const ranges = filters.map((f) => `${f.column} >= ${String(f.lo)} and ${f.column} <= ${String(f.hi)}`);
  return (e && ranges.length ? [`(${e})`, ...ranges] : e ? [e] : ranges).join(" and ");
}

/**
 * True when the GPU can show `filters` over a scene loaded with `server` (the ranges in its
 * `where`) and `columns`: every range narrows a server range or the whole column, on a
 * loaded column, among the first MAX_GPU_FILTERS (or equals its server range), and no
 * server range was removed (that widens the selection).
 */
export function gpuCanFilter(filters: RangeFilter[], server: RangeFilter[], columns: string[]): boolean {
  if (server.some((g) => !filters.some((f) => f.column === g.column))) return false;
  return filters.every((f, i) => {
    const g = server.find((s) => s.column === f.column);
    if (g && g.lo === f.lo && g.hi === f.hi) return true;
    return i < MAX_GPU_FILTERS && columns.includes(f.column) && (!g || (f.lo >= g.lo && f.hi <= g.hi));
  });
}
