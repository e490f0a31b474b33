// The field slice: which grid fields the step has, the slice the view names (its field
// described by the server, its component checked), and its plane, fetched coarse to fine
// (data/fieldslice.ts) whenever the slice or its field's description changes in the store.

import { type Api, ApiError } from "../data/api";
import { SliceLoader } from "../data/fieldslice";
import { AXIS_NAMES, type Axis, axisPositions, componentRange, type FieldSummary, nearestIndex, type SlicePlane } from "../data/slice";
import type { AppState, AppStore } from "./appstate";
import type { SliceState } from "./viewstate";

export type SliceLoadState = "off" | "loading" | "ready" | "error";

export interface SliceHooks {
  /** the largest texture the renderer takes */
  maxTexture(): number;
  /** the plane to draw (null: none) */
  plane(plane: SlicePlane | null): void;
  colormap(map: string): void;
  /** where the loading is (for the panel and tests) */
  status(state: SliceLoadState, plane: SlicePlane | null): void;
  fail(e: unknown): void;
}

export class SliceControl {
  /** the plane drawn (the finest loaded so far) */
  plane: SlicePlane | null = null;
  private readonly loader: SliceLoader;
  /** what the plane drawn or loading was asked for */
  private asked = "";
  private map = "";

  constructor(
    private readonly store: AppStore,
    private readonly api: Api,
    private readonly hooks: SliceHooks,
  ) {
    this.loader = new SliceLoader(api, {
      loaded: (plane, done) => {
        this.plane = plane;
        hooks.plane(plane);
        hooks.status(done ? "ready" : "loading", plane);
      },
      failed: (e) => {
        hooks.status("error", this.plane);
        hooks.fail(e);
      },
    });
    store.subscribe(["slice", "sliceInfo"], (_, s) => this.apply(s));
  }

  /** The step's grid fields; then the slice the view names, when the step has its field. */
  async openFields(): Promise<void> {
    const { ds, step, slice } = this.store.get();
    let fields: FieldSummary[] = [];
    try {
      fields = (await this.api.fields(ds!, step!)).fields.filter((f) => f.ndim === 3);
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 404)) throw e; // else a server without grid fields
    }
    this.store.set({ fields });
    await this.set(slice && fields.some((f) => f.name === slice.field) ? slice : undefined);
  }

  /** Shows the slice (undefined: none): its field described (asked when another), its component checked. */
  async set(slice: SliceState | undefined): Promise<void> {
    const s = this.store.get();
    if (!slice) {
      this.store.set({ slice: undefined, sliceInfo: null });
      this.apply(this.store.get()); // "off" even when it was off
      return;
    }
    let info = s.sliceInfo;
    if (!info || info.field !== slice.field || info.step !== s.step || info.dataset !== s.ds) {
      this.clear();
      info = await this.api.field(s.ds!, s.step!, slice.field);
    }
    const comps = info.components;
    const component = comps ? (slice.component && comps.includes(slice.component) ? slice.component : comps[0]) : undefined;
    this.store.set({ slice: { ...slice, component }, sliceInfo: info });
  }

  /** Moves the slice to sample `index` of its axis. */
  setIndex(index: number): void {
    const { slice, sliceInfo } = this.store.get();
    if (!sliceInfo || !slice) return;
    this.store.set({ slice: { ...slice, pos: axisPositions(sliceInfo, this.axis())[index] } });
  }

  axis(): Axis {
    return AXIS_NAMES.indexOf(this.store.get().slice?.axis ?? "z") as Axis;
  }

  /** The slice's plane index along its axis (the sample nearest its position; the middle by default). */
  index(): number {
    const { slice, sliceInfo } = this.store.get();
    if (!sliceInfo || !slice) return 0;
    const positions = axisPositions(sliceInfo, this.axis());
    return slice.pos === undefined ? Math.floor((positions.length - 1) / 2) : nearestIndex(positions, slice.pos);
  }

  /** The colour range of the sliced component. */
  range(): [number, number] {
    const { slice, sliceInfo } = this.store.get();
    return sliceInfo ? componentRange(sliceInfo, slice?.component ?? null) : [0, 1];
  }

  /** The plane's corners relative to `origin` and its colour range, for the renderer (null: no plane). */
  drawn(origin: readonly number[]): { corners: Float32Array; colorRange: [number, number] } | null {
    const p = this.plane;
    if (!p || !this.store.get().slice) return null;
    const corners = new Float32Array(12);
    p.corners.forEach((c, i) => {
      for (let a = 0; a < 3; a++) corners[3 * i + a] = c[a] - origin[a];
    });
    return { corners, colorRange: this.range() };
  }

  /** The slice or its field changed: the colour map, and the plane asked anew when it is another. */
  private apply(s: Readonly<AppState>): void {
    const { slice, sliceInfo: info } = s;
    if (!slice || !info) {
      this.clear();
      this.hooks.status("off", null);
      return;
    }
    if (slice.map !== this.map) this.hooks.colormap((this.map = slice.map));
    const req = { ds: s.ds!, step: s.step!, info, component: slice.component ?? null, axis: this.axis(), index: this.index() };
    const asked = JSON.stringify([req.ds, req.step, info.field, req.component, req.axis, req.index]);
    if (asked === this.asked) return;
    this.asked = asked;
    this.hooks.status("loading", this.plane);
    this.loader.load(req, this.hooks.maxTexture());
  }

  private clear(): void {
    this.loader.stop();
    this.asked = "";
    this.plane = null;
    this.hooks.plane(null);
  }
}
