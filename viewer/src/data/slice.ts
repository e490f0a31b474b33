// The field slice: a plane of a grid field through the particles, perpendicular to x, y or
// z, fetched coarse to fine (docs/http-api.md, "Samples of a grid field"). This file is the
// pure part: which levels to ask for, the index box of the plane at each level, where the
// plane lies in space and how its samples map onto a texture. fieldslice.ts fetches; the
// renderer draws.

import type { FieldFrameHeader } from "./frame";

/** A grid field as `GET .../fields/{field}` describes it. */
export interface FieldInfo {
  dataset: string;
  step: number;
  field: string;
  dtype: string;
  ndim: number;
  /** samples per axis (x, y, z) */
  dims: number[];
  /** the coarsest level (every axis down to one sample) */
  levels: number;
  level_dims: number[][];
  components: string[] | null;
  centering: "node" | "cell";
  unit: string;
  origin?: number[];
  spacing?: number[];
  coords?: number[][];
  bounds: { min: number[]; max: number[] };
  ranges: { component: string | null; min: number | null; max: number | null }[];
}

export interface FieldSummary {
  name: string;
  dtype: string;
  ndim: number;
  dims: number[];
  components: string[] | null;
}

export type Axis = 0 | 1 | 2;
export const AXIS_NAMES = ["x", "y", "z"] as const;

/** The plane's first texture axis (u, fastest in the samples) and second (v). */
export function planeAxes(axis: Axis): [Axis, Axis] {
  return axis === 0 ? [1, 2] : axis === 1 ? [0, 2] : [0, 1];
}

/** Samples of a level along an axis of n samples: every 2^level-th, from sample 0. */
export function levelCount(n: number, level: number): number {
  return Math.ceil(n / 2 ** level);
}

/** Samples of the plane perpendicular to `axis` at a level. */
export function planeSamples(dims: readonly number[], axis: Axis, level: number): number {
  const [u, v] = planeAxes(axis);
  return levelCount(dims[u], level) * levelCount(dims[v], level);
}

/**
 * The levels to fetch, coarse to fine: first the finest level whose plane holds at most
 * `first` samples (or the coarsest), then each finer one down to the finest allowed: level 0
 * unless its plane exceeds `most` samples or `maxSide` along an axis (a texture's limit).
 */
export function slicePlan(dims: readonly number[], axis: Axis, levels: number, first = 4096, most = 4_000_000, maxSide = 4096): number[] {
  const [u, v] = planeAxes(axis);
  const fits = (k: number, budget: number) => planeSamples(dims, axis, k) <= budget;
  let start = levels;
  while (start > 0 && fits(start - 1, first)) start--;
  let finest = 0;
  while (finest < start && !(fits(finest, most) && levelCount(dims[u], finest) <= maxSide && levelCount(dims[v], finest) <= maxSide)) finest++;
  const out: number[] = [];
  for (let k = start; k >= finest; k--) out.push(k);
  return out;
}

/** Positions of the samples along an axis (level 0), from the field's geometry. */
export function axisPositions(info: FieldInfo, axis: Axis): number[] {
  if (info.coords) return info.coords[axis];
  const n = info.dims[axis];
  const shift = info.centering === "cell" ? 0.5 : 0;
  const o = info.origin![axis];
  const s = info.spacing![axis];
  return Array.from({ length: n }, (_, i) => o + (i + shift) * s);
}

/** The index of the sample nearest to a position along an axis (clamped to the grid). */
export function nearestIndex(positions: readonly number[], x: number): number {
  let lo = 0;
  let hi = positions.length - 1;
  if (!(x > positions[0])) return 0;
  if (x >= positions[hi]) return hi;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (positions[mid] <= x) lo = mid;
    else hi = mid;
  }
  return x - positions[lo] <= positions[hi] - x ? lo : hi;
}

/**
 * The plane's index at a level: the multiple of 2^level nearest to `index` (a coarse level
 * holds only those), not past the last sample of the axis.
 */
export function planeIndex(n: number, index: number, level: number): number {
  const s = 2 ** level;
  const last = Math.floor((n - 1) / s) * s;
  return Math.min(last, Math.max(0, Math.round(index / s) * s));
}

/** The `index_box` parameter (x0,y0,z0,x1,y1,z1: sample indexes, half-open) of the plane at a level. */
export function sliceIndexBox(dims: readonly number[], axis: Axis, index: number, level: number): number[] {
  const i = planeIndex(dims[axis], index, level);
  const lo = [0, 0, 0];
  const hi = [dims[0], dims[1], dims[2]];
  lo[axis] = i;
  hi[axis] = i + 1;
  return [...lo, ...hi];
}

/** A plane of samples ready to draw: a width × height texture (u fastest) and its quad. */
export interface SlicePlane {
  level: number;
  width: number;
  height: number;
  values: Float32Array;
  /** corners in data coordinates: (u0, v0), (u1, v0), (u0, v1), (u1, v1) */
  corners: [number, number, number][];
}

/**
 * Where a frame's plane lies: each sample stands for a cell of one step around it along the
 * plane's axes (a single sample along an axis spans the field's bounds there), clamped to the
 * field's bounds widened by half a sample of level 0; the plane sits at the slice's position.
 */
export function planeOf(info: FieldInfo, axis: Axis, h: FieldFrameHeader, values: Float32Array): SlicePlane {
  const [u, v] = planeAxes(axis);
  const extent = (a: Axis): [number, number] => {
    const n = h.dims[a];
    const lo = info.bounds.min[a];
    const hi = info.bounds.max[a];
    const half0 = info.dims[a] > 1 ? (hi - lo) / (info.dims[a] - 1) / 2 : 0.5;
    if (n <= 1) return [lo - half0, hi + half0];
    const first = h.origin[a] as number;
    const last = h.step ? first + (n - 1) * h.step[a] : h.positions![a][n - 1];
    const half = (last - first) / (n - 1) / 2;
    return [Math.max(lo - half0, first - half), Math.min(hi + half0, last + half)];
  };
  const [u0, u1] = extent(u);
  const [v0, v1] = extent(v);
  const at = (pu: number, pv: number): [number, number, number] => {
    const p: [number, number, number] = [0, 0, 0];
    p[axis] = h.origin[axis] as number;
    p[u] = pu;
    p[v] = pv;
    return p;
  };
  return { level: h.level, width: h.dims[u], height: h.dims[v], values, corners: [at(u0, v0), at(u1, v0), at(u0, v1), at(u1, v1)] };
}

/** The colour range of a component: its min and max in the step (or [0, 1]). */
export function componentRange(info: FieldInfo, component: string | null): [number, number] {
  const r = info.ranges.find((x) => x.component === component) ?? info.ranges[0];
  const lo = r?.min ?? 0;
  const hi = r?.max ?? 1;
  return [lo, hi > lo ? hi : lo + 1];
}
