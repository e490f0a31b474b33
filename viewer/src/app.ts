// The viewer: which dataset, step and species are open, what is drawn and how, and what
// the server is asked. The panel's controls (panel.ts) call its methods; the streamer
// (stream.ts) fills its scene; the URL's fragment (viewstate.ts) mirrors its view.

import { Analysis } from "./ui/analysis";
import { Api, ApiError, type DatasetInfo, isAbort, type SpeciesInfo } from "./data/api";
import { Camera } from "./render/camera";
import { type ColorChoice, columnKind, defaultColor, suggestLog } from "./state/colorchoice";
import { colormapTable } from "./render/colormap";
import { AutoRange, type HistogramFetch, percentileRange, RANGE_BINS, RANGE_BUDGET, scaleEnds, shaderScale } from "./render/colorrange";
import { SliceLoader } from "./data/fieldslice";
import { FrameLoader } from "./data/loader";
import { Renderer } from "./render/renderer";
import { POSITION_COLUMNS, Scene, type SceneKey } from "./render/scene";
import { Streamer } from "./data/stream";
import { byId } from "./ui/dom";
import { FilterPanel } from "./ui/filters";
import { drawLegend } from "./ui/legend";
import { statusText } from "./ui/status";
import { gpuCanFilter, type RangeFilter, whereOf } from "./data/selection";
import { AXIS_NAMES, type Axis, axisPositions, componentRange, type FieldInfo, type FieldSummary, nearestIndex, type SlicePlane } from "./data/slice";
import { decodeView, encodeView, type SliceState, type ViewState } from "./state/viewstate";

const BACKGROUNDS = { dark: [0.067, 0.075, 0.094], light: [1, 1, 1] } as const;

export class App {
  readonly api = Api.fromLocation(window.location, window.history);
  readonly camera = new Camera();
  readonly renderer: Renderer;
  readonly streamer: Streamer;
  readonly filters: FilterPanel;
  /** the panels the server computes: filter histograms, the 2-D histogram, the export */
  readonly analysis = new Analysis(this);
  view: ViewState = decodeView(window.location.hash);
  datasetNames: string[] = [];
  dataset: DatasetInfo | null = null;
  info: SpeciesInfo | null = null;
  scene: Scene | null = null;
  /** the 3-D grid fields of the step (those a slice can cut) */
  fieldList: FieldSummary[] = [];
  /** the sliced field's description, and the plane drawn (the finest loaded so far) */
  sliceInfo: FieldInfo | null = null;
  slicePlane: SlicePlane | null = null;
  readonly slicer: SliceLoader;
  /** the filters in the scene's server-side `where` (the GPU narrows within them) */
  private serverFilters: RangeFilter[] = [];
  /** the colour column and scale chosen by default (colorchoice.ts), until the user changes them */
  colorChoice: ColorChoice | null = null;
  /** the default colour range of the view's column and scale (the robust percentiles) */
  private readonly autoRange = new AutoRange();
  private bytesTotal = 0;
  private drawPending = false;
  private restTimer: ReturnType<typeof setTimeout> | null = null;
  private hashTimer: ReturnType<typeof setTimeout> | null = null;
  private lastHash = "";
  private failed = false;
  /** stops the long poll of the dataset's new steps (follow) */
  private following: AbortController | null = null;
  /** called when what the panel shows changed (panel.ts syncs its controls) */
  onUpdate: () => void = () => {};

  constructor(readonly canvas: HTMLCanvasElement) {
    this.renderer = new Renderer(canvas);
    this.filters = new FilterPanel(byId("filters"), {
      changed: (f, final) => this.setFilters(f, final),
      removed: (c) => this.setFilters(this.view.filters.filter((f) => f.column !== c), true),
    });
    this.streamer = new Streamer(this.api, new FrameLoader(), this.camera, {
      scene: () => this.scene,
      settings: () => ({ pointBudget: this.view.budget, firstBudget: this.view.first }),
      loaded: () => {
        this.failed = false;
        this.message(null);
        this.status(); // now, not at the next frame: every step of the refinement shows
        byId("status").dataset.loadedAt = String(performance.now());
        this.requestDraw();
      },
      idle: () => this.rested(),
      failed: (e) => this.fail(e),
    });
    this.slicer = new SliceLoader(this.api, {
      loaded: (plane, done) => {
        this.slicePlane = plane;
        this.renderer.setSliceValues(plane.values, plane.width, plane.height);
        this.sliceStatus(done ? "ready" : "loading");
        this.requestDraw();
      },
      failed: (e) => {
        this.sliceStatus("error");
        this.fail(e);
      },
    });
    canvas.addEventListener("webglcontextlost", (e) => {
      e.preventDefault();
      this.message("The graphics context was lost; reload the page.");
    });
    new ResizeObserver(() => this.requestDraw()).observe(canvas);
  }

  // --- what is open ---------------------------------------------------------------------
  async start(): Promise<void> {
    this.renderer.setColormap(colormapTable(this.view.map));
    this.renderer.setSliceColormap(colormapTable(this.view.slice?.map ?? this.view.map));
    this.applyBackground();
    await this.run(async () => {
      const { datasets } = await this.api.datasets();
      if (datasets.length === 0) throw new ApiError(404, "not_found", "The server has no dataset.");
      const names = datasets.map((d) => d.name);
      this.datasetNames = names;
      await this.openDataset(this.view.ds && names.includes(this.view.ds) ? this.view.ds : names[0]);
    });
    if (this.view.follow) this.setFollow(true);
  }

  async openDataset(name: string): Promise<void> {
    await this.run(async () => {
      if (this.dataset && this.dataset.name !== name) {
        this.info = null; // another dataset: its own bounds, so the camera looks at it anew
        this.view.cam = undefined;
      }
      this.dataset = await this.api.dataset(name);
      this.view.ds = name;
      const steps = this.dataset.steps;
      if (steps.length === 0) throw new ApiError(404, "not_found", `Dataset '${name}' has no steps.`);
      const step = steps.find((s) => s.index === this.view.step) ?? steps[steps.length - 1]; // the last, as motes.open
      await this.openStep(step.index);
    });
  }

  async openStep(index: number): Promise<void> {
    await this.run(async () => {
      const step = this.dataset!.steps.find((s) => s.index === index);
      if (!step) throw new ApiError(404, "not_found", `no step ${index}`);
      this.view.step = index;
      const names = Object.keys(step.species);
      await this.openSpecies(this.view.species && names.includes(this.view.species) ? this.view.species : names[0]);
      await this.openFields();
    });
  }

  // --- the field slice ---------------------------------------------------------------------
  /** The step's grid fields; the slice the view names, when the step has its field. */
  private async openFields(): Promise<void> {
    try {
      this.fieldList = (await this.api.fields(this.view.ds!, this.view.step!)).fields.filter((f) => f.ndim === 3);
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 404)) throw e;
      this.fieldList = []; // a server without grid fields
    }
    const slice = this.view.slice;
    await this.setSlice(slice && this.fieldList.some((f) => f.name === slice.field) ? slice : undefined);
  }

  /** Shows the slice (undefined: none): its field described, then its plane fetched coarse to fine. */
  async setSlice(slice: SliceState | undefined): Promise<void> {
    await this.run(async () => {
      this.slicer.stop();
      const before = this.sliceInfo;
      this.view.slice = slice;
      if (!slice) {
        this.sliceInfo = null;
        this.clearPlane();
        this.sliceStatus("off");
        this.changed();
        return;
      }
      if (!before || before.field !== slice.field || before.step !== this.view.step || before.dataset !== this.view.ds) {
        this.sliceInfo = null;
        this.clearPlane();
        this.sliceInfo = await this.api.field(this.view.ds!, this.view.step!, slice.field);
      }
      const info = this.sliceInfo!;
      const comps = info.components;
      if (comps && (!slice.component || !comps.includes(slice.component))) slice.component = comps[0];
      if (!comps) slice.component = undefined;
      this.renderer.setSliceColormap(colormapTable(slice.map));
      this.loadSlice();
      this.changed();
    });
  }

  /** The slice's plane index along its axis (the sample nearest its position; the middle by default). */
  sliceIndex(): number {
    const info = this.sliceInfo;
    const slice = this.view.slice;
    if (!info || !slice) return 0;
    const axis = this.sliceAxis();
    const positions = axisPositions(info, axis);
    return slice.pos === undefined ? Math.floor((positions.length - 1) / 2) : nearestIndex(positions, slice.pos);
  }

  sliceAxis(): Axis {
    return AXIS_NAMES.indexOf(this.view.slice?.axis ?? "z") as Axis;
  }

  /** Moves the slice to sample `index` of its axis (the old plane's requests are aborted). */
  setSliceIndex(index: number): void {
    if (!this.sliceInfo || !this.view.slice) return;
    this.view.slice.pos = axisPositions(this.sliceInfo, this.sliceAxis())[index];
    this.loadSlice();
    this.changed();
  }

  private loadSlice(): void {
    const info = this.sliceInfo;
    const slice = this.view.slice;
    if (!info || !slice) return;
    this.sliceStatus("loading");
    const maxTexture = this.renderer.gl.getParameter(this.renderer.gl.MAX_TEXTURE_SIZE) as number;
    this.slicer.load({ ds: this.view.ds!, step: this.view.step!, info, component: slice.component ?? null, axis: this.sliceAxis(), index: this.sliceIndex() }, maxTexture);
  }

  private clearPlane(): void {
    this.slicePlane = null;
    this.renderer.setSliceValues(null);
    this.requestDraw();
  }

  sliceRange(): [number, number] {
    return this.sliceInfo ? componentRange(this.sliceInfo, this.view.slice?.component ?? null) : [0, 1];
  }

  /** For tests: the slice's state and the level drawn. */
  private sliceStatus(state: "off" | "loading" | "ready" | "error"): void {
    const el = byId("slice-info");
    el.dataset.state = state;
    el.dataset.level = this.slicePlane ? String(this.slicePlane.level) : "";
    const p = this.slicePlane;
    el.textContent = state === "off" ? "" : `${state === "error" ? "error" : state === "loading" ? "loading…" : "full resolution"}${p ? ` · level ${p.level}, ${p.width} × ${p.height} samples` : ""}`;
    this.onUpdate();
  }

  async openSpecies(name: string): Promise<void> {
    await this.run(async () => {
      const first = this.info === null;
      this.info = await this.api.species(this.view.ds!, this.view.step!, name);
      this.view.species = name;
      const cols = this.columnNames();
      if (!this.view.color || !cols.includes(this.view.color)) this.chooseColor(); // a link's column wins
      this.view.filters = this.view.filters.filter((f) => cols.includes(f.column));
      if (!this.view.hist || !this.view.hist.every((c) => cols.includes(c))) {
        const others = this.info.columns.filter((c) => !["position", "id"].includes(columnKind(c))).map((c) => c.name);
        this.view.hist = cols.includes("ux") && cols.includes("uy") ? ["ux", "uy"] : [others[0] ?? "x", others[1] ?? "y"];
      }
      this.sizeCamera();
      if (first && this.view.cam) this.camera.state = structuredClone(this.view.cam);
      else if (first) this.resetCamera(false);
      this.camera.radius = this.boundsRadius();
      this.serverFilters = this.view.filters.map((f) => ({ ...f }));
      this.filters.set(this.view.filters, (c) => this.extent(c));
      this.rebuild(true);
      this.legend();
      this.analysis.histograms();
      this.changed();
    });
  }

  /** The default colour column and scale of the species (colorchoice.ts), shown in the panel until the user changes either. */
  private chooseColor(): void {
    const choice = defaultColor(this.info!.columns);
    this.view.color = choice.column;
    this.view.log = choice.log;
    this.view.range = undefined;
    this.colorChoice = choice;
  }

  columnNames(): string[] {
    return this.info ? this.info.columns.map((c) => c.name) : [];
  }

  extent(column: string): [number, number] {
    const c = this.info?.columns.find((x) => x.name === column);
    const lo = c?.min ?? 0;
    const hi = c?.max ?? 1;
    return [lo, hi > lo ? hi : lo + 1];
  }

  // --- the scene ---------------------------------------------------------------------------
  /** Columns the view needs: positions, the colour, the filters. */
  private neededColumns(): string[] {
    const want = [...POSITION_COLUMNS, this.view.color, ...this.view.filters.map((f) => f.column)];
    return [...new Set(want.filter((c): c is string => !!c && this.columnNames().includes(c)))];
  }

  /** A new scene when the loaded one cannot show the view (or `force`). */
  rebuild(force = false): void {
    if (!this.info) return;
    const key: SceneKey = {
      ds: this.view.ds!,
      step: this.view.step!,
      species: this.view.species!,
      columns: this.neededColumns(),
      where: whereOf(this.view.where, this.serverFilters),
    };
    const s = this.scene;
    const fits = s && s.key.ds === key.ds && s.key.step === key.step && s.key.species === key.species && s.key.where === key.where && key.columns.every((c) => s.key.columns.includes(c));
    if (fits && !force) {
      this.requestDraw();
      return;
    }
    this.streamer.stop();
    s?.dispose();
    this.scene = new Scene(key, this.info, this.renderer);
    if (s) this.bytesTotal += s.bytes;
    this.streamer.schedule(0);
    this.requestDraw();
  }

  // --- controls --------------------------------------------------------------------------
  /** Colours by `column`, on the scale that suits it (log when it spans more than three decades: colorchoice.ts). */
  setColor(column: string): void {
    this.view.color = column;
    this.view.log = suggestLog(this.info?.columns.find((c) => c.name === column));
    this.view.range = undefined;
    this.colorChoice = null;
    this.rebuild();
    this.legend();
    this.changed();
  }

  setColormap(map: string): void {
    this.view.map = map;
    this.renderer.setColormap(colormapTable(map));
    this.legend();
    this.analysis.hist2d();
    this.changed();
  }

  setRange(range: [number, number] | undefined): void {
    this.view.range = range;
    this.legend();
    this.changed();
  }

  /** Follows the newest step: each step the server publishes is opened as it comes. */
  setFollow(on: boolean): void {
    this.view.follow = on;
    this.following?.abort();
    this.following = null;
    if (on) void this.follow((this.following = new AbortController()).signal);
    this.changed();
  }

  private async follow(signal: AbortSignal): Promise<void> {
    while (!signal.aborted && this.view.follow) {
      const ds = this.view.ds;
      const steps = this.dataset?.steps ?? [];
      if (!ds) return;
      const newest = steps.length ? Math.max(...steps.map((s) => s.index)) : -1;
      try {
        if (newest >= 0 && this.view.step !== newest) {
          await this.openStep(newest); // following starts at the newest step
          this.changed();
          continue;
        }
        const u = await this.api.updates(ds, newest, 25, signal);
        if (signal.aborted) return;
        if (ds !== this.view.ds) continue; // another dataset was opened meanwhile: follow it
        if (u.newer) {
          this.dataset = await this.api.dataset(ds);
          const last = Math.max(...this.dataset.steps.map((s) => s.index));
          await this.openStep(last);
          this.changed();
        }
      } catch (e) {
        if (isAbort(e)) return;
        await new Promise((r) => setTimeout(r, 2000)); // the server restarting: try again
      }
    }
  }

  setLogScale(log: boolean): void {
    this.view.log = log;
    this.colorChoice = null;
    this.legend();
    this.changed();
  }

  /** The colour range: the one set, else the default (the percentiles, once found; until then, or without them, the min–max). */
  colorRange(): [number, number] {
    return this.view.range ?? this.autoRange.known(this.autoKey()) ?? this.extent(this.view.color ?? "z");
  }

  /** Where the colour range comes from (for tests): set, percentiles, pending (the min–max until they come), extent. */
  colorRangeSource(): string {
    if (this.view.range) return "set";
    if (this.autoRange.known(this.autoKey())) return "percentiles";
    return this.autoRange.pending ? "pending" : "extent";
  }

  private autoKey(): string {
    const v = this.view;
    return JSON.stringify([v.ds, v.step, v.species, v.color, v.log]);
  }

  /** Finds the default colour range of the view's column and scale, when it is not known yet (colorrange.ts). */
  private findAutoRange(): void {
    const { ds, step, species, color, log } = this.view;
    const c = this.info?.columns.find((x) => x.name === color);
    if (this.view.range || !c || c.min === null || c.max === null || !(c.max > c.min)) return;
    const where = log ? `${c.name} > 0` : undefined;
    this.autoRange.find(
      this.autoKey(),
      (signal) => {
        const fetch: HistogramFetch = (range, quality) =>
          this.api
            .histogram(ds!, step!, species!, { x: c.name, bins: RANGE_BINS, range: range.join(","), where, ...(quality === null ? { budget: RANGE_BUDGET } : { quality }) }, signal)
            .then((h) => ({ counts: h.counts as number[], quality: h.quality }));
        return percentileRange(fetch, [c.min!, c.max!], log);
      },
      (error) => {
        if (error !== undefined) this.fail(error);
        this.legend();
        this.onUpdate();
      },
    );
  }

  setPointSize(size: number): void {
    this.view.size = Math.max(1, Math.min(10, size));
    this.changed();
  }

  setBudget(budget: number): void {
    this.view.budget = budget;
    this.streamer.schedule(0);
    this.changed();
  }

  toggleBackground(): void {
    this.view.bg = this.view.bg === "dark" ? "light" : "dark";
    this.applyBackground();
    this.changed();
  }

  private applyBackground(): void {
    document.body.classList.toggle("light", this.view.bg === "light");
    this.requestDraw();
  }

  resetCamera(notify = true): void {
    if (!this.info) return;
    const { min, max } = this.info.bounds;
    this.sizeCamera();
    this.camera.fit([min[0], min[1], min[2], max[0], max[1], max[2]]);
    if (notify) this.cameraMoved();
  }

  cameraMoved(): void {
    this.streamer.moved();
    this.requestDraw();
    this.changed(false);
  }

  setExpression(where: string): void {
    this.view.where = where.trim();
    byId("where-error").hidden = true;
    this.serverFilters = this.view.filters.map((f) => ({ ...f }));
    this.rebuild();
    this.analysis.histograms();
    this.changed();
  }

  /**
   * New filter ranges. Narrowing a range of a loaded column is drawn at once (the GPU drops
   * the points outside); widening one, removing one, or one on a column not loaded asks the
   * server again (once the range is final).
   */
  setFilters(filters: RangeFilter[], final: boolean): void {
    const added = filters.some((f) => !this.view.filters.some((g) => g.column === f.column));
    const removed = this.view.filters.some((g) => !filters.some((f) => f.column === g.column));
    this.view.filters = filters;
    if (added || removed) this.filters.set(filters, (c) => this.extent(c));
    if (!this.scene || !gpuCanFilter(filters, this.serverFilters, this.scene.key.columns)) {
      if (!final) return;
      this.serverFilters = filters.map((f) => ({ ...f }));
      this.rebuild();
    }
    this.requestDraw();
    if (added) this.analysis.histograms();
    if (final) {
      this.analysis.hist2d();
      this.changed();
    }
  }

  /** The selection shown: the expression and every filter (for histograms and export). */
  selectionWhere(): string {
    return whereOf(this.view.where, this.view.filters);
  }

  // --- drawing ---------------------------------------------------------------------------
  private sizeCamera(): void {
    this.camera.width = Math.max(1, this.canvas.clientWidth);
    this.camera.height = Math.max(1, this.canvas.clientHeight);
  }

  private boundsRadius(): number {
    const { min, max } = this.info!.bounds;
    return Math.max(1e-30, Math.hypot(max[0] - min[0], max[1] - min[1], max[2] - min[2]) / 2);
  }

  requestDraw(): void {
    if (this.drawPending) return;
    this.drawPending = true;
    requestAnimationFrame(() => {
      this.drawPending = false;
      this.draw();
    });
  }

  private draw(): void {
    this.renderer.resize();
    this.sizeCamera();
    const s = this.scene;
    const view = this.camera.viewTest();
    const color = this.view.color && s?.key.columns.includes(this.view.color) ? this.view.color : null;
    const off = (c: string) => (s ? s.offsetOf(c) : 0);
    const [c0, c1] = this.colorRange();
    const chunks = s ? s.visibleChunks(view) : [];
    const scale = color ? shaderScale(c0, c1, this.view.log, off(color)) : shaderScale(0, 1, false, 0);
    this.renderer.draw(chunks, {
      mvp: this.camera.gpuMatrix(s ? s.origin : [0, 0, 0]),
      color,
      colorScale: scale,
      filters: s ? this.view.filters.filter((f) => s.key.columns.includes(f.column)).map((f) => ({ column: f.column, lo: f.lo - off(f.column), hi: f.hi - off(f.column) })) : [],
      pointSize: this.view.size,
      background: [...BACKGROUNDS[this.view.bg]],
      slice: this.sliceDraw(s ? s.origin : [0, 0, 0]),
    });
    this.status();
    // For tests/browser and bench/serve_browser.py: what the last frame drew, and when (ms since page load).
    const el = byId("status");
    el.dataset.drawn = String(chunks.reduce((n, c) => n + c.count, 0));
    el.dataset.drawnAt = String(performance.now());
  }

  private sliceDraw(origin: readonly number[]) {
    const p = this.slicePlane;
    if (!p || !this.view.slice) return null;
    const corners = new Float32Array(12);
    p.corners.forEach((c, i) => {
      for (let a = 0; a < 3; a++) corners[3 * i + a] = c[a] - origin[a];
    });
    return { corners, colorRange: this.sliceRange() };
  }

  private status(): void {
    const s = this.scene;
    const el = byId("status");
    const shown = s ? s.countPassing(this.view.filters) : 0;
    const state = this.failed ? "error" : this.streamer.busy || this.autoRange.pending ? "loading" : "ready";
    const quality = s ? s.qualityInView(this.camera.viewTest()) : null;
    el.textContent = statusText({
      shown,
      total: this.info?.count ?? 0,
      bytes: this.bytesTotal + (s?.bytes ?? 0),
      queryMs: s?.lastQueryMs ?? null,
      quality,
      state,
    });
    el.dataset.shown = String(shown);
    el.dataset.loaded = String(s?.loaded ?? 0);
    el.dataset.total = String(this.info?.count ?? 0);
    el.dataset.state = state;
    el.dataset.qualityInView = quality ? String(quality[0]) : "";
  }

  private legend(): void {
    this.findAutoRange();
    const c = this.info?.columns.find((x) => x.name === this.view.color);
    const [lo, hi] = scaleEnds(...this.colorRange(), this.view.log);
    drawLegend(this.view.map, lo, hi, c ? `${c.name}${c.unit_label ? ` [${c.unit_label}]` : ""}${this.view.log ? " (log)" : ""}` : "");
    byId("legend-labels").dataset.source = this.colorRangeSource();
    this.requestDraw();
  }

  // --- after the view settles ---------------------------------------------------------------
  /** The streamer has nothing more to do for now: update what depends on the view. */
  private rested(): void {
    this.requestDraw();
    if (this.restTimer !== null) clearTimeout(this.restTimer);
    this.restTimer = setTimeout(() => {
      this.analysis.hist2d();
      this.analysis.exportLink();
    }, 100);
  }

  setHist2dAxes(x: string, y: string): void {
    this.view.hist = [x, y];
    this.analysis.hist2d();
    this.changed();
  }

  // --- the URL, messages --------------------------------------------------------------------
  /** The view changed: the fragment follows (later, for camera moves). */
  changed(now = true): void {
    if (this.hashTimer !== null) clearTimeout(this.hashTimer);
    this.hashTimer = null;
    if (now) this.writeHash();
    else this.hashTimer = setTimeout(() => this.writeHash(), 300);
    this.onUpdate();
  }

  private writeHash(): void {
    this.view.cam = structuredClone(this.camera.state);
    const hash = encodeView(this.view);
    if (hash !== window.location.hash) history.replaceState(null, "", hash);
    this.lastHash = hash;
    this.analysis.exportLink();
  }

  /** A fragment typed or pasted: open what it names. */
  async followHash(): Promise<void> {
    if (window.location.hash === this.lastHash) return;
    this.view = decodeView(window.location.hash);
    this.info = null;
    this.colorChoice = null;
    this.renderer.setColormap(colormapTable(this.view.map));
    this.sliceInfo = null;
    this.applyBackground();
    await this.start();
  }

  private async run(fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (e) {
      this.fail(e);
    }
  }

  fail(e: unknown): void {
    if (isAbort(e)) return;
    this.failed = true;
    const err = e instanceof ApiError ? e : null;
    if (err && err.status === 422 && this.view.where) {
      const box = byId("where-error");
      box.textContent = err.message;
      box.hidden = false;
    } else {
      this.message(err ? err.explain() : String((e as Error)?.message ?? e));
    }
    this.status();
  }

  message(text: string | null): void {
    const m = byId("message");
    m.hidden = text === null;
    m.textContent = text ?? "";
  }
}
