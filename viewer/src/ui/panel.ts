// The side panel, section by section: each section's controls set keys of the store (or ask
// the app to open what they name), and each section shows the keys it depends on, which it
// subscribes to.

import type { App } from "../app";
import { COLORMAPS, DEFAULT_COLORMAP, colormapTable } from "../render/colormap";
import { colourBy, setExpression, setLogScale, setPointSize, toggleBackground } from "../state/actions";
import { type AppState, columnNames, extent } from "../state/appstate";
import { type ColumnKind, decades } from "../state/colorchoice";
import { axisPositions } from "../data/slice";
import { attachControls } from "./controls";
import { byId as $, num, setOptions } from "./dom";

/** How the panel's note names the kind of column chosen by default. */
const KIND_TEXT: Record<ColumnKind, string> = {
  density: "a density",
  energy: "an energy",
  other: "the first column that is not a position, an id or a velocity",
  velocity: "a velocity (the species has no density, energy or other column)",
  position: "a position (the species has no other column to colour by)",
  id: "an id",
};

export function bindPanel(app: App): void {
  bindOpen(app);
  bindColour(app);
  bindDisplay(app);
  bindSelection(app);
  bindHistogram(app);
  bindSlice(app);
}

/** The dataset, the step (and following new ones), the species. */
function bindOpen(app: App): void {
  const { store } = app;
  const dataset = $<HTMLSelectElement>("dataset");
  const species = $<HTMLSelectElement>("species");
  const step = $<HTMLInputElement>("step");
  const stepLabel = $("step-label");
  const follow = $<HTMLInputElement>("follow");
  const steps = () => store.get().dataset?.steps ?? [];
  const showStep = (i: number) => {
    const s = steps()[i];
    stepLabel.textContent = s ? `${s.index} (t = ${num(s.time)})` : "";
  };
  dataset.addEventListener("change", () => void app.openDataset(dataset.value));
  species.addEventListener("change", () => void app.openSpecies(species.value));
  step.addEventListener("input", () => showStep(Number(step.value)));
  step.addEventListener("change", () => {
    const s = steps()[Number(step.value)];
    if (s) void app.openStep(s.index);
  });
  follow.addEventListener("change", () => store.set({ follow: follow.checked }));
  store.subscribe(["datasets", "dataset", "ds", "step", "species", "follow"], (_, v) => {
    setOptions(dataset, v.datasets, v.ds);
    const ss = steps();
    step.max = String(Math.max(0, ss.length - 1));
    step.value = String(Math.max(0, ss.findIndex((s) => s.index === v.step)));
    step.disabled = ss.length < 2;
    follow.checked = v.follow;
    showStep(Number(step.value));
    const st = ss.find((s) => s.index === v.step);
    setOptions(species, st ? Object.keys(st.species) : [], v.species);
  });
}

/** The colour: column, map, range, log scale, and the note on the default choice. */
function bindColour(app: App): void {
  const { store } = app;
  const color = $<HTMLSelectElement>("color");
  const colormap = $<HTMLSelectElement>("colormap");
  const lo = $<HTMLInputElement>("range-lo");
  const hi = $<HTMLInputElement>("range-hi");
  const log = $<HTMLInputElement>("range-log");
  setOptions(colormap, Object.keys(COLORMAPS));
  color.addEventListener("change", () => colourBy(store, color.value));
  colormap.addEventListener("change", () => store.set({ map: colormap.value }));
  const range = () => {
    const a = Number(lo.value);
    const b = Number(hi.value);
    if (lo.value !== "" && hi.value !== "" && Number.isFinite(a) && Number.isFinite(b) && a < b) store.set({ range: [a, b] });
  };
  lo.addEventListener("change", range);
  hi.addEventListener("change", range);
  $("range-auto").addEventListener("click", () => store.set({ range: undefined }));
  $("range-full").addEventListener("click", () => store.set({ range: extent(store.get(), store.get().color ?? "z") }));
  log.addEventListener("change", () => setLogScale(store, log.checked));
  store.subscribe(["info", "ds", "step", "species", "color", "map", "log", "range", "colorChoice", "rangeFound"], (_, v) => {
    const labels = columnNames(v).map((c) => {
      const info = v.info?.columns.find((x) => x.name === c);
      return info?.unit_label ? `${c} [${info.unit_label}]` : c;
    });
    setOptions(color, columnNames(v), v.color, labels);
    colormap.value = v.map;
    log.checked = v.log;
    showChoice(v);
    const [a, b] = app.colour.range();
    if (document.activeElement !== lo) lo.value = String(Number(a.toPrecision(6)));
    if (document.activeElement !== hi) hi.value = String(Number(b.toPrecision(6)));
  });
}

/** The note under the colour controls while the column and scale are the ones chosen by default. */
function showChoice(v: Readonly<AppState>): void {
  const colorAuto = $("color-auto");
  const choice = v.color === v.colorChoice?.column ? v.colorChoice : null;
  const c = v.info?.columns.find((x) => x.name === choice?.column);
  colorAuto.hidden = !choice?.kind || !c;
  colorAuto.dataset.kind = choice?.kind ?? "";
  colorAuto.textContent =
    choice?.kind && c
      ? `Chosen for this data: ${c.name}, ${KIND_TEXT[choice.kind]}` +
        (choice.log ? `, on a log scale (it spans ${(decades(c) ?? 0).toFixed(1)} decades)` : "") +
        ". Pick another column or untick log scale to change it."
      : "";
}

/** Point size, point budget, background, the camera's reset; the mouse, touch and keys on the view. */
function bindDisplay(app: App): void {
  const { store } = app;
  const size = $<HTMLInputElement>("size");
  const budget = $<HTMLSelectElement>("budget");
  const background = $<HTMLButtonElement>("background");
  size.addEventListener("input", () => setPointSize(store, Number(size.value)));
  budget.addEventListener("change", () => store.set({ budget: Number(budget.value) }));
  background.addEventListener("click", () => toggleBackground(store));
  $("reset").addEventListener("click", () => app.resetCamera());
  attachControls(app.canvas, app.camera, {
    moved: () => app.cameraMoved(),
    reset: () => app.resetCamera(),
    pointSize: (d) => setPointSize(store, store.get().size + d),
    toggleBackground: () => toggleBackground(store),
  });
  store.subscribe(["size", "budget", "bg"], (_, v) => {
    size.value = String(v.size);
    budget.value = String(v.budget);
    if (budget.value !== String(v.budget)) {
      budget.append(new Option(`${num(v.budget / 1e6)} M`, String(v.budget)));
      budget.value = String(v.budget);
    }
    background.textContent = v.bg === "dark" ? "light background" : "dark background";
  });
}

/** The selection: a filter added on a column, the expression (its error hidden when it changes). */
function bindSelection(app: App): void {
  const { store } = app;
  const filterColumn = $<HTMLSelectElement>("filter-column");
  const where = $<HTMLInputElement>("where");
  $("filter-add").addEventListener("click", () => {
    const c = filterColumn.value;
    const { filters } = store.get();
    if (!c || filters.some((f) => f.column === c)) return;
    const [a, b] = extent(store.get(), c);
    app.setFilters([...filters, { column: c, lo: a, hi: b }], true);
  });
  where.addEventListener("change", () => setExpression(store, where.value));
  store.subscribe(["where"], () => ($("where-error").hidden = true));
  store.subscribe(["info", "filters", "where"], (_, v) => {
    setOptions(filterColumn, columnNames(v).filter((c) => !v.filters.some((f) => f.column === c)));
    if (document.activeElement !== where) where.value = v.where;
  });
}

/** The 2-D histogram's axes; the export's format and box. */
function bindHistogram(app: App): void {
  const { store } = app;
  const histX = $<HTMLSelectElement>("hist-x");
  const histY = $<HTMLSelectElement>("hist-y");
  const hist = () => store.set({ hist: [histX.value, histY.value] });
  histX.addEventListener("change", hist);
  histY.addEventListener("change", hist);
  $("export-format").addEventListener("change", () => app.analysis.exportLink());
  $("export-view").addEventListener("change", () => app.analysis.exportLink());
  store.subscribe(["info", "hist"], (_, v) => {
    setOptions(histX, columnNames(v), v.hist?.[0]);
    setOptions(histY, columnNames(v), v.hist?.[1]);
  });
}

/** The field slice: field, component, axis, colour map, position. */
function bindSlice(app: App): void {
  const { store } = app;
  const sliceField = $<HTMLSelectElement>("slice-field");
  const sliceComponent = $<HTMLSelectElement>("slice-component");
  const sliceAxis = $<HTMLSelectElement>("slice-axis");
  const sliceMap = $<HTMLSelectElement>("slice-map");
  const slicePos = $<HTMLInputElement>("slice-pos");
  setOptions(sliceMap, Object.keys(COLORMAPS));
  const set = (change: (s: NonNullable<AppState["slice"]>) => AppState["slice"]) => {
    const s = store.get().slice;
    if (s) app.act(() => app.slices.set(change(s)));
  };
  sliceField.addEventListener("change", () => {
    const s = store.get().slice;
    app.act(() => app.slices.set(sliceField.value ? { field: sliceField.value, axis: s?.axis ?? "z", map: s?.map ?? DEFAULT_COLORMAP } : undefined));
  });
  sliceComponent.addEventListener("change", () => set((s) => ({ ...s, component: sliceComponent.value })));
  sliceAxis.addEventListener("change", () => set((s) => ({ ...s, axis: sliceAxis.value as "x" | "y" | "z", pos: undefined })));
  sliceMap.addEventListener("change", () => set((s) => ({ ...s, map: sliceMap.value })));
  // Each step of the slider asks anew (coarse first); the requests of the last are aborted.
  slicePos.addEventListener("input", () => app.slices.setIndex(Number(slicePos.value)));
  store.subscribe(["slice", "sliceInfo", "fields"], (_, v) => {
    setOptions(sliceField, ["", ...v.fields.map((f) => f.name)], v.slice?.field ?? "", ["none", ...v.fields.map((f) => f.name)]);
    const comps = v.sliceInfo?.components ?? [];
    setOptions(sliceComponent, comps, v.slice?.component);
    sliceComponent.hidden = comps.length === 0;
    for (const e of [sliceAxis, sliceMap, slicePos]) e.disabled = !v.slice || !v.sliceInfo;
    sliceAxis.value = v.slice?.axis ?? "z";
    sliceMap.value = v.slice?.map ?? DEFAULT_COLORMAP;
    showSlice(app, v);
  });
}

/** The slice's position, legend and unit (empty without a slice). */
function showSlice(app: App, v: Readonly<AppState>): void {
  const { slice: s, sliceInfo: info } = v;
  const legend = $<HTMLCanvasElement>("slice-legend");
  const slicePos = $<HTMLInputElement>("slice-pos");
  legend.hidden = !s || !info;
  if (!s || !info) {
    $("slice-pos-label").textContent = "";
    for (const id of ["slice-min", "slice-max", "slice-unit"]) $(id).textContent = "";
    return;
  }
  const positions = axisPositions(info, app.slices.axis());
  slicePos.max = String(positions.length - 1);
  const index = app.slices.index();
  if (document.activeElement !== slicePos) slicePos.value = String(index);
  $("slice-pos-label").textContent = `${s.axis} = ${num(positions[index])} (sample ${index})`;
  const table = colormapTable(s.map);
  legend.width = table.length / 4;
  legend.height = 1;
  legend.getContext("2d")!.putImageData(new ImageData(new Uint8ClampedArray(table), table.length / 4, 1), 0, 0);
  const [lo, hi] = app.slices.range();
  $("slice-min").textContent = num(lo);
  $("slice-max").textContent = num(hi);
  const name = `${info.field}${s.component ? `.${s.component}` : ""}`;
  $("slice-unit").textContent = info.unit ? `${name} [${info.unit}]` : name;
}
