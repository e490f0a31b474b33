// The colour legend: the map's gradient, the range's ends and the column's unit, drawn again
// when the colour's keys change in the store or a default range is found.

import { colormapTable } from "../render/colormap";
import { scaleEnds } from "../render/colorrange";
import type { AppStore } from "../state/appstate";
import { COLOR_RANGE_KEYS, type ColorRangeControl } from "../state/colorcontrol";
import { byId, num } from "./dom";

export function drawLegend(map: string, lo: number, hi: number, label: string): void {
  const canvas = byId<HTMLCanvasElement>("legend");
  const table = colormapTable(map);
  const n = table.length / 4;
  canvas.width = n;
  canvas.height = 1;
  const ctx = canvas.getContext("2d")!;
  ctx.putImageData(new ImageData(new Uint8ClampedArray(table), n, 1), 0, 0);
  byId("legend-min").textContent = num(lo);
  byId("legend-max").textContent = num(hi);
  byId("legend-unit").textContent = label;
}

export function bindLegend(store: AppStore, colour: ColorRangeControl): void {
  store.subscribe([...COLOR_RANGE_KEYS, "map", "rangeFound"], (_, s) => {
    const c = s.info?.columns.find((x) => x.name === s.color);
    const [lo, hi] = scaleEnds(...colour.range(), s.log);
    drawLegend(s.map, lo, hi, c ? `${c.name}${c.unit_label ? ` [${c.unit_label}]` : ""}${s.log ? " (log)" : ""}` : "");
    byId("legend-labels").dataset.source = colour.source();
  });
}
