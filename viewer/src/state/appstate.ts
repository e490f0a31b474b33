// The viewer's state: the view the URL's fragment carries (viewstate.ts) and what the app
// learned from the server for it, in one store (store.ts) whose keys the streamer, the
// analysis panels, the fragment and the panel subscribe to.

import type { DatasetInfo, SpeciesInfo } from "../data/api";
import { type RangeFilter, whereOf } from "../data/selection";
import type { FieldInfo, FieldSummary } from "../data/slice";
import { POSITION_COLUMNS, type SceneKey } from "../render/scene";
import type { ColorChoice } from "./colorchoice";
import { Store } from "./store";
import { decodeView, type ViewState } from "./viewstate";

export interface AppState extends ViewState {
  /** the datasets the server has */
  datasets: string[];
  /** the dataset open (its steps) */
  dataset: DatasetInfo | null;
  /** the species open; a new description (the species opened again) is a change */
  info: SpeciesInfo | null;
  /** while a filter's slider is dragged, the ranges drawn (the GPU narrows); null otherwise */
  dragFilters: RangeFilter[] | null;
  /** the filters in the scene's server-side `where` (the GPU narrows within them) */
  serverFilters: RangeFilter[];
  /** the colour column and scale chosen by default (colorchoice.ts), until the user changes either */
  colorChoice: ColorChoice | null;
  /** the key of the last search of a default colour range that ended (colorcontrol.ts) */
  rangeFound: string | null;
  /** the 3-D grid fields of the step (those a slice can cut) */
  fields: FieldSummary[];
  /** the sliced field's description */
  sliceInfo: FieldInfo | null;
}

export type Key = keyof AppState;
export type AppStore = Store<AppState>;

/** The keys the fragment carries. */
export const VIEW_KEYS = [
  "ds", "step", "species", "color", "map", "range", "log", "filters", "where", "cam",
  "size", "bg", "budget", "first", "hist", "slice", "follow",
] as const satisfies readonly (keyof ViewState)[];

/** What the app knows before the server answers: the fragment's view. */
export function stateOf(view: ViewState): AppState {
  return {
    ...view,
    datasets: [],
    dataset: null,
    info: null,
    dragFilters: null,
    serverFilters: view.filters.map((f) => ({ ...f })),
    colorChoice: null,
    rangeFound: null,
    fields: [],
    sliceInfo: null,
  };
}

export function createStore(hash: string): AppStore {
  return new Store(stateOf(decodeView(hash)), { info: Object.is });
}

/** The view of the state (what the fragment carries). */
export function viewOf(s: Readonly<AppState>): ViewState {
  const v: Partial<ViewState> = {};
  for (const k of VIEW_KEYS) (v as Record<string, unknown>)[k] = s[k];
  return v as ViewState;
}

export function columnNames(s: Readonly<AppState>): string[] {
  return s.info ? s.info.columns.map((c) => c.name) : [];
}

/** A column's [min, max] (max > min). */
export function extent(s: Readonly<AppState>, column: string): [number, number] {
  const c = s.info?.columns.find((x) => x.name === column);
  const lo = c?.min ?? 0;
  const hi = c?.max ?? 1;
  return [lo, hi > lo ? hi : lo + 1];
}

/** The selection shown: the expression and every filter (for histograms and export). */
export function selectionWhere(s: Readonly<AppState>): string {
  return whereOf(s.where, s.filters);
}

/** The ranges drawn: those of a slider being dragged, else the filters. */
export function drawnFilters(s: Readonly<AppState>): RangeFilter[] {
  return s.dragFilters ?? s.filters;
}

/** What the scene of the view is loaded for: positions, the colour and the filtered columns, under the server's filters. */
export function sceneKeyOf(s: Readonly<AppState>): SceneKey {
  const have = columnNames(s);
  const want = [...POSITION_COLUMNS, s.color, ...s.filters.map((f) => f.column)];
  const columns = [...new Set(want.filter((c): c is string => !!c && have.includes(c)))];
  return { ds: s.ds!, step: s.step!, species: s.species!, columns, where: whereOf(s.where, s.serverFilters) };
}
