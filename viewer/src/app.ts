// The viewer: the store of its state (state/appstate.ts) and what subscribes to it. Opening
// a dataset, a step or a species asks the server and sets the store once; the panel's
// controls (ui/panel.ts) set keys of the store; the streamer's scene (data/stream.ts), the
// analysis panels (ui/analysis.ts), the colour range and the slice (state/), the legend, the
// URL's fragment (state/hash.ts) and the panel follow the keys they depend on.

import { Api, ApiError, type DatasetInfo, isAbort, type SpeciesInfo } from "./data/api";
import { FrameLoader } from "./data/loader";
import { gpuCanFilter, type RangeFilter } from "./data/selection";
import { Streamer } from "./data/stream";
import { Camera } from "./render/camera";
import { colormapTable } from "./render/colormap";
import { shaderScale } from "./render/colorrange";
import { Renderer } from "./render/renderer";
import { canShow, Scene } from "./render/scene";
import { copyFilters, speciesView } from "./state/actions";
import { type AppState, type AppStore, createStore, drawnFilters, extent, sceneKeyOf, stateOf } from "./state/appstate";
import { ColorRangeControl } from "./state/colorcontrol";
import { StepFollower } from "./state/follow";
import { HashSync } from "./state/hash";
import { SliceControl } from "./state/slicecontrol";
import { Analysis } from "./ui/analysis";
import { byId } from "./ui/dom";
import { FilterPanel } from "./ui/filters";
import { bindLegend } from "./ui/legend";
import { showSliceStatus, showStatus } from "./ui/status";

const BACKGROUNDS = { dark: [0.067, 0.075, 0.094], light: [1, 1, 1] } as const;

/** The keys a scene is loaded for: a change asks for a new scene unless the loaded one can show the view. */
const SCENE_KEYS = ["info", "ds", "step", "species", "color", "filters", "where", "serverFilters"] as const satisfies readonly (keyof AppState)[];

/** Where a species is opened: its dataset and step; `fresh`: another dataset, whose bounds the camera fits anew. */
interface Opening {
  dataset: DatasetInfo;
  step: number;
  fresh: boolean;
}

export class App {
  readonly api = Api.fromLocation(window.location, window.history);
  readonly camera = new Camera();
  readonly store: AppStore = createStore(window.location.hash);
  readonly renderer: Renderer;
  readonly streamer: Streamer;
  readonly colour: ColorRangeControl;
  readonly slices: SliceControl;
  readonly filters: FilterPanel;
  /** the panels the server computes: filter histograms, the 2-D histogram, the export */
  readonly analysis: Analysis;
  private readonly hash: HashSync;
  scene: Scene | null = null;
  private bytesTotal = 0;
  private drawPending = false;
  private failed = false;
  private readonly follower: StepFollower;

  constructor(readonly canvas: HTMLCanvasElement) {
    this.renderer = new Renderer(canvas);
    this.streamer = new Streamer(this.api, new FrameLoader(), this.camera, {
      scene: () => this.scene,
      settings: () => ({ pointBudget: this.store.get().budget, firstBudget: this.store.get().first }),
      loaded: () => this.loaded(),
      idle: () => {
        this.requestDraw();
        this.analysis.settled();
      },
      failed: (e) => this.fail(e),
    });
    this.subscribeScene();
    this.colour = new ColorRangeControl(this.store, this.api, (e) => this.fail(e));
    this.slices = new SliceControl(this.store, this.api, {
      maxTexture: () => this.renderer.gl.getParameter(this.renderer.gl.MAX_TEXTURE_SIZE) as number,
      plane: (p) => {
        this.renderer.setSliceValues(p ? p.values : null, p?.width, p?.height);
        this.requestDraw();
      },
      colormap: (map) => this.renderer.setSliceColormap(colormapTable(map)),
      status: (state, plane) => showSliceStatus(byId("slice-info"), state, plane),
      fail: (e) => this.fail(e),
    });
    this.filters = new FilterPanel(byId("filters"), {
      changed: (f, final) => this.setFilters(f, final),
      removed: (c) => this.setFilters(this.store.get().filters.filter((f) => f.column !== c), true),
    });
    this.subscribeFilterRows();
    this.analysis = new Analysis(this.store, this.api, {
      viewBox: () => this.scene?.viewBox(this.camera.viewTest()),
      histogram: (column, counts) => this.filters.setHistogram(column, counts),
      fail: (e) => this.fail(e),
    });
    bindLegend(this.store, this.colour);
    this.hash = new HashSync(this.store, window);
    this.follower = new StepFollower(this.store, this.api, (index, dataset) => this.openStep(index, dataset));
    this.subscribeDrawing();
    canvas.addEventListener("webglcontextlost", (e) => {
      e.preventDefault();
      this.message("The graphics context was lost; reload the page.");
    });
    new ResizeObserver(() => this.requestDraw()).observe(canvas);
  }

  // --- what follows the store ----------------------------------------------------------------
  /** The streamer: a new scene when the loaded one cannot show the view; a camera move or a new budget restarts it. */
  private subscribeScene(): void {
    this.store.subscribe([...SCENE_KEYS, "cam", "budget"], (changed) => {
      if (SCENE_KEYS.some((k) => changed.has(k)) && this.rebuild(changed.has("info"))) return;
      if (changed.has("cam")) this.streamer.moved();
      else if (changed.has("budget")) this.streamer.schedule(0);
    });
  }

  /** The filters' rows: made anew for another species or another set of filtered columns. */
  private subscribeFilterRows(): void {
    let rows: [unknown, string] | null = null;
    this.store.subscribe(["info", "filters"], (_, s) => {
      const now: [unknown, string] = [s.info, s.filters.map((f) => f.column).join("\n")];
      if (rows && rows[0] === now[0] && rows[1] === now[1]) return;
      rows = now;
      this.filters.set(s.filters, (c) => extent(s, c));
    });
  }

  /** The colour map, the background; any change is drawn. */
  private subscribeDrawing(): void {
    const s = this.store.get();
    this.renderer.setColormap(colormapTable(s.map));
    this.applyBackground(s.bg);
    this.store.subscribe(["map"], (_, v) => this.renderer.setColormap(colormapTable(v.map)));
    this.store.subscribe(["bg"], (_, v) => this.applyBackground(v.bg));
    this.store.subscribe("*", () => this.requestDraw());
  }

  private applyBackground(bg: "dark" | "light"): void {
    document.body.classList.toggle("light", bg === "light");
  }

  // --- what is open ---------------------------------------------------------------------
  async start(): Promise<void> {
    await this.run(async () => {
      const { datasets } = await this.api.datasets();
      if (datasets.length === 0) throw new ApiError(404, "not_found", "The server has no dataset.");
      const names = datasets.map((d) => d.name);
      this.store.set({ datasets: names });
      const ds = this.store.get().ds;
      await this.openDataset(ds && names.includes(ds) ? ds : names[0]);
    });
    if (this.store.get().follow) this.follower.restart(true);
  }

  async openDataset(name: string): Promise<void> {
    await this.run(async () => {
      const dataset = await this.api.dataset(name);
      const steps = dataset.steps;
      if (steps.length === 0) throw new ApiError(404, "not_found", `Dataset '${name}' has no steps.`);
      const s = this.store.get();
      const step = steps.find((x) => x.index === s.step) ?? steps[steps.length - 1]; // the last, as motes.open
      await this.openStep(step.index, dataset, s.dataset !== null && s.dataset.name !== name);
    });
  }

  async openStep(index: number, dataset = this.store.get().dataset!, fresh = false): Promise<void> {
    await this.run(async () => {
      const step = dataset.steps.find((s) => s.index === index);
      if (!step) throw new ApiError(404, "not_found", `no step ${index}`);
      const names = Object.keys(step.species);
      const species = this.store.get().species;
      await this.openSpecies(species && names.includes(species) ? species : names[0], { dataset, step: index, fresh });
      await this.slices.openFields();
    });
  }

  /** Opens a species (of the open step, or of `at`): one change of the store, its dataset, step, species and view. */
  async openSpecies(name: string, at?: Opening): Promise<void> {
    await this.run(async () => {
      const before = this.store.get();
      const { dataset, step, fresh } = at ?? { dataset: before.dataset!, step: before.step!, fresh: false };
      const info = await this.api.species(dataset.name, step, name);
      const s = this.store.get();
      const cam = this.placeCamera(info, fresh || before.info === null, fresh ? undefined : s.cam);
      this.store.set({ dataset, ds: dataset.name, step, species: name, ...speciesView(s, info), cam });
    });
  }

  /** The camera for a species: as the link has it, or fitted to the bounds (`first`: the first species of a dataset). */
  private placeCamera(info: SpeciesInfo, first: boolean, cam: AppState["cam"]): AppState["cam"] {
    this.sizeCamera();
    if (first && cam) this.camera.state = structuredClone(cam);
    else if (first) this.fitCamera(info);
    const { min, max } = info.bounds;
    this.camera.radius = Math.max(1e-30, Math.hypot(max[0] - min[0], max[1] - min[1], max[2] - min[2]) / 2);
    return structuredClone(this.camera.state);
  }

  private fitCamera(info: SpeciesInfo): void {
    const { min, max } = info.bounds;
    this.camera.fit([min[0], min[1], min[2], max[0], max[1], max[2]]);
  }

  /** A fragment typed or pasted: open what it names. */
  async followHash(): Promise<void> {
    const view = this.hash.typed();
    if (!view) return;
    const s = this.store.get();
    this.store.set({ ...stateOf(view), datasets: s.datasets, dataset: s.dataset, fields: s.fields, rangeFound: s.rangeFound });
    await this.start();
  }

  // --- what the store cannot decide alone ---------------------------------------------------------
  /**
   * New filter ranges. While a slider is dragged (not `final`) they are only drawn (the GPU
   * drops the points outside); once final, the server is asked again when the GPU cannot
   * show them (a range widened or removed, or on a column not loaded).
   */
  setFilters(filters: RangeFilter[], final: boolean): void {
    if (!final) {
      this.store.set({ dragFilters: filters });
      return;
    }
    const gpu = this.scene !== null && gpuCanFilter(filters, this.store.get().serverFilters, this.scene.key.columns);
    this.store.set({ filters, dragFilters: null, ...(gpu ? {} : { serverFilters: copyFilters(filters) }) });
  }

  resetCamera(): void {
    const info = this.store.get().info;
    if (!info) return;
    this.sizeCamera();
    this.fitCamera(info);
    this.cameraMoved();
  }

  cameraMoved(): void {
    this.store.set({ cam: structuredClone(this.camera.state) });
  }

  // --- the scene ---------------------------------------------------------------------------
  /** A new scene when the loaded one cannot show the view (or `force`); true when there is one. */
  private rebuild(force: boolean): boolean {
    const s = this.store.get();
    if (!s.info) return false;
    const key = sceneKeyOf(s);
    const old = this.scene;
    if (old && canShow(old.key, key) && !force) return false;
    this.streamer.stop();
    old?.dispose();
    this.scene = new Scene(key, s.info, this.renderer);
    if (old) this.bytesTotal += old.bytes;
    this.streamer.schedule(0);
    return true;
  }

  // --- drawing ---------------------------------------------------------------------------
  private sizeCamera(): void {
    this.camera.width = Math.max(1, this.canvas.clientWidth);
    this.camera.height = Math.max(1, this.canvas.clientHeight);
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
    const v = this.store.get();
    const sc = this.scene;
    const color = v.color && sc?.key.columns.includes(v.color) ? v.color : null;
    const off = (c: string) => (sc ? sc.offsetOf(c) : 0);
    const [c0, c1] = this.colour.range();
    const chunks = sc ? sc.visibleChunks(this.camera.viewTest()) : [];
    const origin = sc ? sc.origin : [0, 0, 0];
    this.renderer.draw(chunks, {
      mvp: this.camera.gpuMatrix(origin),
      color,
      colorScale: color ? shaderScale(c0, c1, v.log, off(color)) : shaderScale(0, 1, false, 0),
      filters: sc ? drawnFilters(v).filter((f) => sc.key.columns.includes(f.column)).map((f) => ({ column: f.column, lo: f.lo - off(f.column), hi: f.hi - off(f.column) })) : [],
      pointSize: v.size,
      background: [...BACKGROUNDS[v.bg]],
      slice: this.slices.drawn(origin),
    });
    this.status();
    // For tests/browser and bench/serve_browser.py: what the last frame drew, and when (ms since page load).
    const el = byId("status");
    el.dataset.drawn = String(chunks.reduce((n, c) => n + c.count, 0));
    el.dataset.drawnAt = String(performance.now());
  }

  private status(): void {
    const s = this.scene;
    const v = this.store.get();
    const el = byId("status");
    const shown = s ? s.countPassing(drawnFilters(v)) : 0;
    const state = this.failed ? "error" : this.streamer.busy || this.colour.pending ? "loading" : "ready";
    const quality = s ? s.qualityInView(this.camera.viewTest()) : null;
    showStatus(el, { shown, total: v.info?.count ?? 0, bytes: this.bytesTotal + (s?.bytes ?? 0), queryMs: s?.lastQueryMs ?? null, quality, state }, s?.loaded ?? 0);
  }

  /** A chunk arrived. */
  private loaded(): void {
    this.failed = false;
    this.message(null);
    this.status(); // now, not at the next frame: every step of the refinement shows
    byId("status").dataset.loadedAt = String(performance.now());
    this.requestDraw();
  }

  // --- errors, messages -------------------------------------------------------------------------
  private async run(fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (e) {
      this.fail(e);
    }
  }

  /** Runs an action of the panel that asks the server; its error is shown. */
  act(fn: () => Promise<void>): void {
    void this.run(fn);
  }

  fail(e: unknown): void {
    if (isAbort(e)) return;
    this.failed = true;
    const err = e instanceof ApiError ? e : null;
    if (err && err.status === 422 && this.store.get().where) {
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
