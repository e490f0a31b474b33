// The panels the server computes for the view: the histograms under the filters' sliders,
// the 2-D histogram of the view box with the selection, and the export link with its line of
// Python. Each asks again when the view or the selection settles.

import type { App } from "../app";
import type { Histogram } from "../data/api";
import { boxParam } from "../data/cells";
import { byId } from "./dom";
import { pythonLine } from "./export";
import { drawHist2d } from "./hist2d";

const HIST_BINS = 64;
const HIST2D_BINS = 128;

export class Analysis {
  private ctl: AbortController | null = null;

  constructor(private readonly app: App) {}

  /** The histograms under the filters' sliders (then the 2-D one). */
  histograms(): void {
    if (!this.app.info) return;
    const { ds, step, species } = this.app.view;
    for (const f of this.app.view.filters) {
      const [lo, hi] = this.app.extent(f.column);
      this.app.api
        .histogram(ds!, step!, species!, { x: f.column, bins: HIST_BINS, range: `${lo},${hi}`, where: this.app.view.where })
        .then((h) => this.app.filters.setHistogram(f.column, h.counts as number[]))
        .catch((e) => this.app.fail(e));
    }
    this.hist2d();
  }

  /** The 2-D histogram of the view box with the selection. */
  hist2d(): void {
    if (!this.app.info || !this.app.view.hist) return;
    this.ctl?.abort();
    const ctl = (this.ctl = new AbortController());
    const [x, y] = this.app.view.hist;
    const box = this.app.scene?.viewBox(this.app.camera.viewTest());
    const { ds, step, species } = this.app.view;
    this.app.api
      .histogram(ds!, step!, species!, {
        x, y, bins: HIST2D_BINS, ybins: HIST2D_BINS,
        range: this.app.extent(x).join(","), yrange: this.app.extent(y).join(","),
        where: this.app.selectionWhere(), box: box ? boxParam(box) : undefined,
      }, ctl.signal)
      .then((h: Histogram) => drawHist2d(byId<HTMLCanvasElement>("hist2d"), byId("hist2d-info"), h, this.app.view.map))
      .catch((e) => this.app.fail(e));
  }

  /** The export link and the Python line of the selection. */
  exportLink(): void {
    if (!this.app.info) return;
    const { ds, step, species } = this.app.view;
    const useBox = byId<HTMLInputElement>("export-view").checked;
    const box = useBox ? this.app.scene?.viewBox(this.app.camera.viewTest()) : undefined;
    const format = byId<HTMLSelectElement>("export-format").value;
    const where = this.app.selectionWhere();
    const a = byId<HTMLAnchorElement>("export");
    a.href = this.app.api.exportUrl(ds!, step!, species!, { format, where, box: box ? boxParam(box) : undefined });
    a.download = `${ds}-step${step}-${species}.${format}`;
    byId("python").textContent = pythonLine({ ds: ds!, step: step!, species: species!, where, box });
  }
}
