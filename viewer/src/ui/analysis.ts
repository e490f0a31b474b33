// The panels the server computes for the view: the histograms under the filters' sliders,
// the 2-D histogram of the view box with the selection, and the export link with its line of
// Python. Each subscribes to the keys of the store it depends on, and asks again when the
// view settles (the streamer rests: `settled`).

import type { Api, Histogram } from "../data/api";
import { type Box, boxParam } from "../data/cells";
import { type AppStore, extent, selectionWhere } from "../state/appstate";
import { byId } from "./dom";
import { pythonLine } from "./export";
import { drawHist2d } from "./hist2d";

const HIST_BINS = 64;
const HIST2D_BINS = 128;
/** ms after the streamer rests before the panels that depend on the view box ask again */
const SETTLE_MS = 100;

export interface AnalysisHooks {
  /** the box of the points in view (undefined: no scene) */
  viewBox(): Box | undefined;
  /** a filter's histogram arrived */
  histogram(column: string, counts: number[]): void;
  fail(e: unknown): void;
}

export class Analysis {
  private ctl: AbortController | null = null;
  private settleTimer: ReturnType<typeof setTimeout> | null = null;
  /** what the filters' histograms were last asked for: the species' description, the expression, the columns */
  private asked: [unknown, string, string] | null = null;

  constructor(
    private readonly store: AppStore,
    private readonly api: Pick<Api, "histogram" | "exportUrl">,
    private readonly hooks: AnalysisHooks,
  ) {
    store.subscribe(["info", "where", "filters"], () => this.histograms());
    store.subscribe(["info", "where", "filters", "map", "hist"], () => this.hist2d());
    store.subscribe(["info", "ds", "step", "species", "where", "filters"], () => this.exportLink());
  }

  /** The view settled (the streamer rests): the panels of the view box ask again. */
  settled(): void {
    if (this.settleTimer !== null) clearTimeout(this.settleTimer);
    this.settleTimer = setTimeout(() => {
      this.hist2d();
      this.exportLink();
    }, SETTLE_MS);
  }

  /** The histograms under the filters' sliders, when the species, the expression or the filtered columns changed. */
  private histograms(): void {
    const s = this.store.get();
    const asked: [unknown, string, string] = [s.info, s.where, s.filters.map((f) => f.column).join("\n")];
    if (!s.info || (this.asked && asked.every((x, i) => x === this.asked![i]))) return;
    this.asked = asked;
    const { ds, step, species } = s;
    for (const f of s.filters) {
      const [lo, hi] = extent(s, f.column);
      this.api
        .histogram(ds!, step!, species!, { x: f.column, bins: HIST_BINS, range: `${lo},${hi}`, where: s.where })
        .then((h) => this.hooks.histogram(f.column, h.counts as number[]))
        .catch((e) => this.hooks.fail(e));
    }
  }

  /** The 2-D histogram of the view box with the selection. */
  hist2d(): void {
    const s = this.store.get();
    if (!s.info || !s.hist) return;
    this.ctl?.abort();
    const ctl = (this.ctl = new AbortController());
    const [x, y] = s.hist;
    const box = this.hooks.viewBox();
    const { ds, step, species, map } = s;
    this.api
      .histogram(ds!, step!, species!, {
        x, y, bins: HIST2D_BINS, ybins: HIST2D_BINS,
        range: extent(s, x).join(","), yrange: extent(s, y).join(","),
        where: selectionWhere(s), box: box ? boxParam(box) : undefined,
      }, ctl.signal)
      .then((h: Histogram) => drawHist2d(byId<HTMLCanvasElement>("hist2d"), byId("hist2d-info"), h, map))
      .catch((e) => this.hooks.fail(e));
  }

  /** The export link and the Python line of the selection. */
  exportLink(): void {
    const s = this.store.get();
    if (!s.info) return;
    const { ds, step, species } = s;
    const useBox = byId<HTMLInputElement>("export-view").checked;
    const box = useBox ? this.hooks.viewBox() : undefined;
    const format = byId<HTMLSelectElement>("export-format").value;
    const where = selectionWhere(s);
    const a = byId<HTMLAnchorElement>("export");
    a.href = this.api.exportUrl(ds!, step!, species!, { format, where, box: box ? boxParam(box) : undefined });
    a.download = `${ds}-step${step}-${species}.${format}`;
    byId("python").textContent = pythonLine({ ds: ds!, step: step!, species: species!, where, box });
  }
}
