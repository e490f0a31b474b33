// What the user's actions change in the store: each one set of keys (their consequences are
// the subscribers', appstate.ts). Those that need the scene, the camera or the server are
// the app's (app.ts).

import type { SpeciesInfo } from "../data/api";
import type { RangeFilter } from "../data/selection";
import type { AppState, AppStore } from "./appstate";
import { columnKind, defaultColor, suggestLog } from "./colorchoice";

/** Colours by `column`, on the scale that suits it (log when it spans more than three decades: colorchoice.ts). */
export function colourBy(store: AppStore, column: string): void {
  const c = store.get().info?.columns.find((x) => x.name === column);
  store.set({ color: column, log: suggestLog(c), range: undefined, colorChoice: null });
}

export function setLogScale(store: AppStore, log: boolean): void {
  store.set({ log, colorChoice: null });
}

export function setPointSize(store: AppStore, size: number): void {
  store.set({ size: Math.max(1, Math.min(10, size)) });
}

export function toggleBackground(store: AppStore): void {
  store.set({ bg: store.get().bg === "dark" ? "light" : "dark" });
}

/** A new expression: the server filters the scene by it and by every range filter. */
export function setExpression(store: AppStore, where: string): void {
  store.set({ where: where.trim(), serverFilters: copyFilters(store.get().filters) });
}

export function copyFilters(filters: readonly RangeFilter[]): RangeFilter[] {
  return filters.map((f) => ({ ...f }));
}

/**
 * What opening a species changes besides the species itself: the colour (the default of the
 * species, colorchoice.ts, unless the view's column is one of its: a link's column wins),
 * the filters on its columns, the 2-D histogram's axes (ux and uy, else its first two
 * columns that are not positions or ids).
 */
export function speciesView(s: Readonly<AppState>, info: SpeciesInfo): Partial<AppState> {
  const cols = info.columns.map((c) => c.name);
  const patch: Partial<AppState> = { info };
  if (!s.color || !cols.includes(s.color)) {
    const choice = defaultColor(info.columns);
    Object.assign(patch, { color: choice.column, log: choice.log, range: undefined, colorChoice: choice });
  }
  const filters = s.filters.filter((f) => cols.includes(f.column));
  Object.assign(patch, { filters, dragFilters: null, serverFilters: copyFilters(filters) });
  if (!s.hist || !s.hist.every((c) => cols.includes(c))) {
    const others = info.columns.filter((c) => !["position", "id"].includes(columnKind(c))).map((c) => c.name);
    patch.hist = cols.includes("ux") && cols.includes("uy") ? ["ux", "uy"] : [others[0] ?? "x", others[1] ?? "y"];
  }
  return patch;
}
