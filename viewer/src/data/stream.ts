// Progressive loading: while the camera rests (REST_MS after its last move), ask for the
// cells the planner picks, one request at a time, until the view is refined or the point
// budget is spent. A camera move aborts the request in flight (its cells keep their
// quality: a frame is taken whole or not at all).

import { type Api, ApiError, isAbort } from "./api";
import { cellParam } from "./cells";
import type { Camera } from "../render/camera";
import type { FrameLoader } from "./loader";
import { DEFAULT_REFINE, plan, type RefineRequest } from "./refine";
import type { Scene } from "../render/scene";

export const REST_MS = 150;
/** below the server's 16 KiB limit on URLs */
const MAX_URL = 15_000;
/** tries with a smaller budget after the server found too many points (413) */
const MAX_RETRIES = 6;

export interface StreamSettings {
  pointBudget: number;
  firstBudget: number;
}

export interface StreamHooks {
  scene(): Scene | null;
  settings(): StreamSettings;
  /** a chunk arrived */
  loaded(): void;
  /** nothing more to load for this view (or an error stopped it) */
  idle(): void;
  failed(e: unknown): void;
}

export class Streamer {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private ctl: AbortController | null = null;
  private running = false;
  private generation = 0;
  /** the most points to ask for at once: lowered when the server answers 413 (its --max-points is not published) */
  private cap = Infinity;
  busy = false;

  constructor(
    private readonly api: Api,
    private readonly loader: FrameLoader,
    private readonly camera: Camera,
    private readonly hooks: StreamHooks,
  ) {}

  /** The camera moved: drop what is in flight, go on once it rests. */
  moved(): void {
    this.stop();
    this.schedule(REST_MS);
  }

  /** Starts (again) soon, e.g. on a new scene. */
  schedule(ms = 0): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.running) this.schedule(20); // an aborted request is still settling
      else void this.run();
    }, ms);
  }

  stop(): void {
    this.generation++;
    this.ctl?.abort();
    this.ctl = null;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private url(scene: Scene, req: RefineRequest): string {
    const k = scene.key;
    const make = (n: number) =>
      this.api.pointsUrl(k.ds, k.step, k.species, {
        columns: k.columns.join(","),
        where: k.where,
        cells: req.cells.slice(0, n).map((c, i) => cellParam(c.box, req.q0s[i])).join(";"),
        budget: req.budget,
        dtype: "f32",
      });
    let n = req.cells.length;
    let url = make(n);
    while (url.length > MAX_URL && n > 1) url = make((n = Math.max(1, Math.floor(n * 0.75))));
    req.cells.length = n;
    req.q0s.length = n;
    return url;
  }

  private async run(): Promise<void> {
    const gen = this.generation;
    this.running = true;
    this.busy = true;
    let retries = 0;
    try {
      while (gen === this.generation) {
        const scene = this.hooks.scene();
        if (!scene) break;
        const { pointBudget, firstBudget } = this.hooks.settings();
        const view = this.camera.viewTest();
        const density = pointBudget / Math.max(1, this.camera.width * this.camera.height);
        const settings = {
          ...DEFAULT_REFINE,
          density,
          firstBudget: Math.min(firstBudget, this.cap),
          maxRequestPoints: Math.min(DEFAULT_REFINE.maxRequestPoints, this.cap),
        };
        const count = (leaf: Parameters<Scene["countOctants"]>[0]) => scene.countOctants(leaf);
        const points = () => ({ loaded: scene.loaded, room: pointBudget - scene.loaded });
        let p = plan(scene.tree, scene.ladder, view, settings, points(), count);
        if (p.kind === "full") {
          scene.evict(view, p.needed);
          p = plan(scene.tree, scene.ladder, view, settings, points(), count);
        }
        if (p.kind !== "request") break;
        const req = p.request;
        this.ctl = new AbortController();
        let frame;
        try {
          frame = await this.loader.load(this.url(scene, req), this.api.headers(), this.ctl.signal);
        } catch (e) {
          if (!(e instanceof ApiError && e.status === 413 && req.budget > 1 && retries < MAX_RETRIES)) throw e;
          this.cap = Math.max(1, Math.floor(req.budget / 4));
          retries++;
          continue;
        }
        if (gen !== this.generation || scene !== this.hooks.scene()) break;
        scene.add(frame, req);
        this.hooks.loaded();
      }
    } catch (e) {
      if (!isAbort(e) && gen === this.generation) this.hooks.failed(e);
    } finally {
      this.running = false;
      this.ctl = null;
      if (gen === this.generation) {
        this.busy = false;
        this.hooks.idle();
      }
    }
  }
}
