// The view in the URL's fragment, so that a link reproduces it:
//   #ds=run&step=0&species=electrons&color=energy&map=viridis&range=0,2&scale=log
//    &filter=energy:0.5:2&filter=ux:-0.1:0.1&where=ux%20%3C%200
//    &cam=100,50,25,300,30,20&size=2&bg=dark&budget=3000000&first=200000&hist=ux,uy
//    &slice=E&scomp=x&saxis=z&spos=12.5&smap=magma&follow=1
// step left out: the last step. follow=1: the viewer opens each new step as the server
// publishes it (a running simulation). range left out: the default range (colorrange.ts: the 1st to
// the 99th percentile); scale=log: a log colour scale (linear when left out).
// cam is target x,y,z, distance, yaw and pitch in degrees (camera.ts: yaw turns about the
// y axis, pitch up from the x-z plane, within ±90); slice names a grid field drawn as
// a plane perpendicular to saxis at position spos (default: the middle), component scomp,
// colour map smap. Keys left out take defaults.

import { type CameraState, clampPitch } from "../render/camera";
import { COLORMAPS, DEFAULT_COLORMAP } from "../render/colormap";
import type { RangeFilter } from "../data/selection";

export interface SliceState {
  field: string;
  component?: string;
  axis: "x" | "y" | "z";
  pos?: number;
  map: string;
}

export interface ViewState {
  ds?: string;
  step?: number;
  species?: string;
  color?: string;
  map: string;
  /** the colour range; undefined: the default (the robust percentiles) */
  range?: [number, number];
  /** a log colour scale */
  log: boolean;
  filters: RangeFilter[];
  where: string;
  cam?: CameraState;
  size: number;
  bg: "dark" | "light";
  budget: number;
  first: number;
  hist?: [string, string];
  slice?: SliceState;
  /** open each new step of the dataset as it is published */
  follow: boolean;
}

export const DEFAULT_VIEW: ViewState = {
  map: DEFAULT_COLORMAP,
  log: false,
  filters: [],
  where: "",
  size: 2,
  bg: "dark",
  budget: 3_000_000,
  first: 200_000,
  follow: false,
};

function numbers(text: string | null, n: number): number[] | undefined {
  if (text === null) return undefined;
  const v = text.split(",").map(Number);
  return v.length === n && v.every(Number.isFinite) ? v : undefined;
}

function positive(text: string | null, fallback: number): number {
  const v = text === null ? NaN : Number(text);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

/** The view a fragment describes (defaults for what it leaves out or gets wrong). */
export function decodeView(hash: string): ViewState {
  const p = new URLSearchParams(hash.replace(/^#/, ""));
  const v: ViewState = { ...DEFAULT_VIEW, filters: [] };
  if (p.get("ds")) v.ds = p.get("ds")!;
  const step = p.get("step");
  if (step !== null && /^-?\d+$/.test(step)) v.step = Number(step);
  if (p.get("species")) v.species = p.get("species")!;
  if (p.get("color")) v.color = p.get("color")!;
  const map = p.get("map");
  if (map && map in COLORMAPS) v.map = map;
  const range = numbers(p.get("range"), 2);
  if (range) v.range = [range[0], range[1]];
  v.log = p.get("scale") === "log";
  for (const f of p.getAll("filter")) {
    const i = f.lastIndexOf(":", f.lastIndexOf(":") - 1);
    const [lo, hi] = f.slice(i + 1).split(":").map(Number);
    if (i > 0 && Number.isFinite(lo) && Number.isFinite(hi)) v.filters.push({ column: f.slice(0, i), lo, hi });
  }
  v.where = p.get("where") ?? "";
  v.follow = p.get("follow") === "1";
  const cam = numbers(p.get("cam"), 6);
  if (cam && cam[3] > 0) v.cam = { target: [cam[0], cam[1], cam[2]], distance: cam[3], yaw: cam[4], pitch: clampPitch(cam[5]) };
  v.size = positive(p.get("size"), DEFAULT_VIEW.size);
  v.bg = p.get("bg") === "light" ? "light" : "dark";
  v.budget = Math.round(positive(p.get("budget"), DEFAULT_VIEW.budget));
  v.first = Math.round(positive(p.get("first"), DEFAULT_VIEW.first));
  const hist = p.get("hist")?.split(",");
  if (hist && hist.length === 2 && hist[0] && hist[1]) v.hist = [hist[0], hist[1]];
  const field = p.get("slice");
  if (field) {
    const axis = p.get("saxis");
    const smap = p.get("smap");
    v.slice = { field, axis: axis === "x" || axis === "y" ? axis : "z", map: smap && smap in COLORMAPS ? smap : DEFAULT_COLORMAP };
    if (p.get("scomp")) v.slice.component = p.get("scomp")!;
    const pos = numbers(p.get("spos"), 1);
    if (pos) v.slice.pos = pos[0];
  }
  return v;
}

/** Shortest decimal that reads back within a millionth of the scale (camera numbers). */
function short(x: number): string {
  return String(Number(x.toPrecision(7)));
}

export function encodeView(v: ViewState): string {
  const p = new URLSearchParams();
  if (v.ds !== undefined) p.set("ds", v.ds);
  if (v.step !== undefined) p.set("step", String(v.step));
  if (v.species !== undefined) p.set("species", v.species);
  if (v.color !== undefined) p.set("color", v.color);
  if (v.map !== DEFAULT_VIEW.map) p.set("map", v.map);
  if (v.range) p.set("range", v.range.map(String).join(","));
  if (v.log) p.set("scale", "log");
  for (const f of v.filters) p.append("filter", `${f.column}:${f.lo}:${f.hi}`);
  if (v.where) p.set("where", v.where);
  if (v.cam) p.set("cam", [...v.cam.target, v.cam.distance, v.cam.yaw, v.cam.pitch].map(short).join(","));
  if (v.size !== DEFAULT_VIEW.size) p.set("size", String(v.size));
  if (v.bg !== DEFAULT_VIEW.bg) p.set("bg", v.bg);
  if (v.budget !== DEFAULT_VIEW.budget) p.set("budget", String(v.budget));
  if (v.first !== DEFAULT_VIEW.first) p.set("first", String(v.first));
  if (v.hist) p.set("hist", v.hist.join(","));
  if (v.follow) p.set("follow", "1");
  if (v.slice) {
    p.set("slice", v.slice.field);
    if (v.slice.component !== undefined) p.set("scomp", v.slice.component);
    p.set("saxis", v.slice.axis);
    if (v.slice.pos !== undefined) p.set("spos", String(v.slice.pos));
    if (v.slice.map !== DEFAULT_COLORMAP) p.set("smap", v.slice.map);
  }
  return "#" + p.toString().replace(/%2C/g, ",").replace(/%3A/g, ":");
}
