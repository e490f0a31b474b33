// The side panel: each control calls the app; sync() shows the app's state in the controls.

import type { App } from "../app";
import { COLORMAPS, DEFAULT_COLORMAP, colormapTable } from "../render/colormap";
import { type ColumnKind, decades } from "../state/colorchoice";
import { axisPositions } from "../data/slice";

/** How the panel's note names the kind of column chosen by default. */
const KIND_TEXT: Record<ColumnKind, string> = {
  density: "a density",
  energy: "an energy",
  other: "the first column that is not a position, an id or a velocity",
  velocity: "a velocity (the species has no density, energy or other column)",
  position: "a position (the species has no other column to colour by)",
  id: "an id",
};
import { attachControls } from "./controls";
import { byId, num, setOptions } from "./dom";

export function bindPanel(app: App): () => void {
  const $ = byId;
  const dataset = $<HTMLSelectElement>("dataset");
  const species = $<HTMLSelectElement>("species");
  const step = $<HTMLInputElement>("step");
  const stepLabel = $("step-label");
  const follow = $<HTMLInputElement>("follow");
  const color = $<HTMLSelectElement>("color");
  const colormap = $<HTMLSelectElement>("colormap");
  const lo = $<HTMLInputElement>("range-lo");
  const hi = $<HTMLInputElement>("range-hi");
  const log = $<HTMLInputElement>("range-log");
  const colorAuto = $("color-auto");
  const size = $<HTMLInputElement>("size");
  const budget = $<HTMLSelectElement>("budget");
  const background = $<HTMLButtonElement>("background");
  const filterColumn = $<HTMLSelectElement>("filter-column");
  const where = $<HTMLInputElement>("where");
  const histX = $<HTMLSelectElement>("hist-x");
  const histY = $<HTMLSelectElement>("hist-y");

  const sliceField = $<HTMLSelectElement>("slice-field");
  const sliceComponent = $<HTMLSelectElement>("slice-component");
  const sliceAxis = $<HTMLSelectElement>("slice-axis");
  const sliceMap = $<HTMLSelectElement>("slice-map");
  const slicePos = $<HTMLInputElement>("slice-pos");
  const slicePosLabel = $("slice-pos-label");

  setOptions(colormap, Object.keys(COLORMAPS));
  setOptions(sliceMap, Object.keys(COLORMAPS));
  const steps = () => app.dataset?.steps ?? [];
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
  follow.addEventListener("change", () => app.setFollow(follow.checked));
  color.addEventListener("change", () => app.setColor(color.value));
  colormap.addEventListener("change", () => app.setColormap(colormap.value));
  const range = () => {
    const a = Number(lo.value);
    const b = Number(hi.value);
    if (lo.value !== "" && hi.value !== "" && Number.isFinite(a) && Number.isFinite(b) && a < b) app.setRange([a, b]);
  };
  lo.addEventListener("change", range);
  hi.addEventListener("change", range);
  $("range-auto").addEventListener("click", () => app.setRange(undefined));
  $("range-full").addEventListener("click", () => app.setRange(app.extent(app.view.color ?? "z")));
  log.addEventListener("change", () => app.setLogScale(log.checked));
  size.addEventListener("input", () => app.setPointSize(Number(size.value)));
  budget.addEventListener("change", () => app.setBudget(Number(budget.value)));
  background.addEventListener("click", () => app.toggleBackground());
  $("reset").addEventListener("click", () => app.resetCamera());
  $("filter-add").addEventListener("click", () => {
    const c = filterColumn.value;
    if (!c || app.view.filters.some((f) => f.column === c)) return;
    const [a, b] = app.extent(c);
    app.setFilters([...app.view.filters, { column: c, lo: a, hi: b }], true);
  });
  where.addEventListener("change", () => app.setExpression(where.value));
  const hist = () => app.setHist2dAxes(histX.value, histY.value);
  histX.addEventListener("change", hist);
  histY.addEventListener("change", hist);
  sliceField.addEventListener("change", () => {
    const s = app.view.slice;
    void app.setSlice(sliceField.value ? { field: sliceField.value, axis: s?.axis ?? "z", map: s?.map ?? DEFAULT_COLORMAP } : undefined);
  });
  sliceComponent.addEventListener("change", () => {
    if (app.view.slice) void app.setSlice({ ...app.view.slice, component: sliceComponent.value });
  });
  sliceAxis.addEventListener("change", () => {
    const axis = sliceAxis.value as "x" | "y" | "z";
    if (app.view.slice) void app.setSlice({ ...app.view.slice, axis, pos: undefined });
  });
  sliceMap.addEventListener("change", () => {
    if (app.view.slice) void app.setSlice({ ...app.view.slice, map: sliceMap.value });
  });
  // Each step of the slider asks anew (coarse first); the requests of the last are aborted.
  slicePos.addEventListener("input", () => app.setSliceIndex(Number(slicePos.value)));
  $("export-format").addEventListener("change", () => app.analysis.exportLink());
  $("export-view").addEventListener("change", () => app.analysis.exportLink());

  attachControls(app.canvas, app.camera, {
    moved: () => app.cameraMoved(),
    reset: () => app.resetCamera(),
    pointSize: (d) => {
      app.setPointSize(app.view.size + d);
      app.requestDraw();
    },
    toggleBackground: () => app.toggleBackground(),
  });

  return function sync(): void {
    const v = app.view;
    const cols = app.columnNames();
    setOptions(dataset, app.datasetNames, v.ds);
    const ss = steps();
    step.max = String(Math.max(0, ss.length - 1));
    step.value = String(Math.max(0, ss.findIndex((s) => s.index === v.step)));
    step.disabled = ss.length < 2;
    follow.checked = v.follow;
    showStep(Number(step.value));
    const st = ss.find((s) => s.index === v.step);
    setOptions(species, st ? Object.keys(st.species) : [], v.species);
    const labels = cols.map((c) => {
      const info = app.info?.columns.find((x) => x.name === c);
      return info?.unit_label ? `${c} [${info.unit_label}]` : c;
    });
    setOptions(color, cols, v.color, labels);
    colormap.value = v.map;
    log.checked = v.log;
    syncChoice();
    const [a, b] = app.colorRange();
    if (document.activeElement !== lo) lo.value = String(Number(a.toPrecision(6)));
    if (document.activeElement !== hi) hi.value = String(Number(b.toPrecision(6)));
    size.value = String(v.size);
    budget.value = String(v.budget);
    if (budget.value !== String(v.budget)) {
      budget.append(new Option(`${num(v.budget / 1e6)} M`, String(v.budget)));
      budget.value = String(v.budget);
    }
    background.textContent = v.bg === "dark" ? "light background" : "dark background";
    setOptions(filterColumn, cols.filter((c) => !v.filters.some((f) => f.column === c)));
    if (document.activeElement !== where) where.value = v.where;
    setOptions(histX, cols, v.hist?.[0]);
    setOptions(histY, cols, v.hist?.[1]);
    syncSlice();
  };

  /** The note under the colour controls while the column and scale are the ones chosen by default. */
  function syncChoice(): void {
    const choice = app.view.color === app.colorChoice?.column ? app.colorChoice : null;
    const c = app.info?.columns.find((x) => x.name === choice?.column);
    colorAuto.hidden = !choice?.kind || !c;
    colorAuto.dataset.kind = choice?.kind ?? "";
    colorAuto.textContent =
      choice?.kind && c
        ? `Chosen for this data: ${c.name}, ${KIND_TEXT[choice.kind]}` +
          (choice.log ? `, on a log scale (it spans ${(decades(c) ?? 0).toFixed(1)} decades)` : "") +
          ". Pick another column or untick log scale to change it."
        : "";
  }

  function syncSlice(): void {
    const s = app.view.slice;
    const info = app.sliceInfo;
    setOptions(sliceField, ["", ...app.fieldList.map((f) => f.name)], s?.field ?? "", ["none", ...app.fieldList.map((f) => f.name)]);
    const comps = info?.components ?? [];
    setOptions(sliceComponent, comps, s?.component);
    sliceComponent.hidden = comps.length === 0;
    for (const e of [sliceAxis, sliceMap, slicePos]) e.disabled = !s || !info;
    sliceAxis.value = s?.axis ?? "z";
    sliceMap.value = s?.map ?? DEFAULT_COLORMAP;
    const legend = $<HTMLCanvasElement>("slice-legend");
    legend.hidden = !s || !info;
    if (!s || !info) {
      slicePosLabel.textContent = "";
      for (const id of ["slice-min", "slice-max", "slice-unit"]) $(id).textContent = "";
      return;
    }
    const axis = app.sliceAxis();
    const positions = axisPositions(info, axis);
    slicePos.max = String(positions.length - 1);
    const index = app.sliceIndex();
    if (document.activeElement !== slicePos) slicePos.value = String(index);
    slicePosLabel.textContent = `${s.axis} = ${num(positions[index])} (sample ${index})`;
    const table = colormapTable(s.map);
    legend.width = table.length / 4;
    legend.height = 1;
    legend.getContext("2d")!.putImageData(new ImageData(new Uint8ClampedArray(table), table.length / 4, 1), 0, 0);
    const [lo, hi] = app.sliceRange();
    $("slice-min").textContent = num(lo);
    $("slice-max").textContent = num(hi);
    $("slice-unit").textContent = info.unit ? `${info.field}${s.component ? `.${s.component}` : ""} [${info.unit}]` : `${info.field}${s.component ? `.${s.component}` : ""}`;
  }
}
