// The colour legend: the map's gradient, the range's ends and the column's unit.

import { colormapTable } from "../render/colormap";
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
