// What is loaded for one species of one step, one set of columns and one server filter:
// the cell tree, the chunks (a frame each, on the CPU as views and on the GPU as buffers),
// and what is derived from them (points passing the GPU filters, the view's box, quality).

import type { SpeciesInfo } from "../data/api";
import { type Box, Cell, CellTree, type ChunkRecord, contains, Ladder, midpoint } from "../data/cells";
import type { Frame } from "../data/frame";
import type { RefineRequest, ViewTest } from "../data/refine";
import { Visibility } from "../data/refine";
import type { RangeFilter } from "../data/selection";
import type { GpuChunk, Renderer } from "./renderer";

export const POSITION_COLUMNS = ["x", "y", "z"] as const;

/** What a scene was loaded with: any change means new requests from scratch. */
export interface SceneKey {
  ds: string;
  step: number;
  species: string;
  /** columns requested, x, y, z first */
  columns: string[];
  /** the server-side filter ('' for none) */
  where: string;
}

export function sameKey(a: SceneKey, b: SceneKey): boolean {
  return a.ds === b.ds && a.step === b.step && a.species === b.species && a.where === b.where && a.columns.join() === b.columns.join();
}

/** True when a scene loaded for `loaded` can show `wanted`: the same points, and every column wanted. */
export function canShow(loaded: SceneKey, wanted: SceneKey): boolean {
  return loaded.ds === wanted.ds && loaded.step === wanted.step && loaded.species === wanted.species && loaded.where === wanted.where && wanted.columns.every((c) => loaded.columns.includes(c));
}

export interface Chunk {
  record: ChunkRecord;
  gpu: GpuChunk;
  columns: Record<string, Float32Array>;
  rows: number;
}

export class Scene {
  readonly tree: CellTree;
  readonly ladder: Ladder;
  readonly bounds: Box;
  origin: [number, number, number];
  chunks: Chunk[] = [];
  loaded = 0;
  bytes = 0;
  lastQueryMs: number | null = null;

  constructor(
    readonly key: SceneKey,
    readonly info: SpeciesInfo,
    private readonly renderer: Renderer,
  ) {
    const { min, max } = info.bounds;
    this.bounds = [min[0], min[1], min[2], max[0], max[1], max[2]];
    this.tree = new CellTree(this.bounds);
    this.ladder = new Ladder(info.ladder.quality, info.ladder.count);
    this.origin = [min[0], min[1], min[2]];
  }

  /** Takes the answer to a request: a chunk tagged with its cells, the cells' new quality. */
  add(frame: Frame, req: RefineRequest): Chunk {
    const h = frame.header;
    if (h.cells.length !== req.cells.length) throw new Error(`the server answered ${h.cells.length} cells for ${req.cells.length}`);
    const columns: Record<string, Float32Array> = {};
    for (const name of this.key.columns) {
      const col = frame.columns[name];
      if (!(col instanceof Float32Array)) throw new Error(`the frame lacks float32 column '${name}'`);
      columns[name] = col;
    }
    if (h.origin && this.chunks.length === 0) this.origin = [h.origin[0], h.origin[1], h.origin[2]];
    else if (h.origin && h.origin.some((v, i) => v !== this.origin[i])) throw new Error("frames of one scene have different origins");
    const record = this.tree.apply(req.cells, req.q0s, h.to, h.cells.map((c) => c.rows), this.ladder);
    const chunk: Chunk = { record, gpu: this.renderer.upload(columns, h.rows), columns, rows: h.rows };
    this.chunks.push(chunk);
    this.loaded += h.rows;
    this.bytes += frame.buffer.byteLength;
    this.lastQueryMs = h.query_ms;
    return chunk;
  }

  private chunkVisible(c: Chunk, view: ViewTest): boolean {
    return c.record.cells.some((cc) => view.classify(cc.cell.box) !== Visibility.Out);
  }

  /**
   * Drops chunks out of view, the latest refinement first, until `needed` points are free.
   * Returns the points freed.
   */
  evict(view: ViewTest, needed: number): number {
    let freed = 0;
    for (;;) {
      const victim = this.chunks
        .filter((c) => !this.chunkVisible(c, view) && this.tree.canDrop(c.record))
        .sort((a, b) => b.record.seq - a.record.seq)[0];
      if (!victim || freed >= needed) return freed;
      this.tree.drop(victim.record);
      this.renderer.release(victim.gpu);
      this.chunks.splice(this.chunks.indexOf(victim), 1);
      this.loaded -= victim.rows;
      freed += victim.rows;
    }
  }

  dispose(): void {
    for (const c of this.chunks) this.renderer.release(c.gpu);
    this.chunks = [];
    this.loaded = 0;
  }

  /** The loaded points of a leaf in each of its octants (the shares of its children). */
  countOctants(leaf: Cell): number[] {
    const counts = new Array<number>(8).fill(0);
    const mid = midpoint(leaf.box);
    const b = leaf.box;
    const [ox, oy, oz] = this.origin;
    const top = [this.bounds[3], this.bounds[4], this.bounds[5]];
    for (const chunk of this.chunks) {
      const { x, y, z } = chunk.columns;
      for (const cc of chunk.record.cells) {
        if (!contains(cc.cell.box, b)) continue;
        for (let i = cc.begin; i < cc.end; i++) {
          const px = ox + x[i];
          const py = oy + y[i];
          const pz = oz + z[i];
          if (px < b[0] || py < b[1] || pz < b[2]) continue;
          if ((px >= b[3] && b[3] < top[0]) || (py >= b[4] && b[4] < top[1]) || (pz >= b[5] && b[5] < top[2])) continue;
          counts[(px >= mid[0] ? 1 : 0) | (py >= mid[1] ? 2 : 0) | (pz >= mid[2] ? 4 : 0)]++;
        }
      }
    }
    return counts;
  }

  /** The offset of a column's values in the chunks (positions are relative to the origin). */
  offsetOf(column: string): number {
    const a = (POSITION_COLUMNS as readonly string[]).indexOf(column);
    return a >= 0 ? this.origin[a] : 0;
  }

  private passing = { key: "", count: 0 };

  /** Points that pass the ranges (as the GPU tests them: float32 values and bounds); kept until the chunks or ranges change. */
  countPassing(filters: RangeFilter[]): number {
    const active = filters.filter((f) => this.key.columns.includes(f.column));
    if (active.length === 0) return this.loaded;
    const key = JSON.stringify([active, this.chunks.map((c) => c.record.seq)]);
    if (this.passing.key !== key) this.passing = { key, count: this.count(active) };
    return this.passing.count;
  }

  private count(active: RangeFilter[]): number {
    const bounds = active.map((f) => [Math.fround(f.lo - this.offsetOf(f.column)), Math.fround(f.hi - this.offsetOf(f.column))]);
    let n = 0;
    for (const chunk of this.chunks) {
      const cols = active.map((f) => chunk.columns[f.column]);
      rows: for (let i = 0; i < chunk.rows; i++) {
        for (let k = 0; k < cols.length; k++) {
          const v = cols[k][i];
          if (v < bounds[k][0] || v > bounds[k][1]) continue rows;
        }
        n++;
      }
    }
    return n;
  }

  visibleChunks(view: ViewTest): GpuChunk[] {
    return this.chunks.filter((c) => this.chunkVisible(c, view)).map((c) => c.gpu);
  }

  /** The lowest and highest quality of the leaves in view. */
  qualityInView(view: ViewTest): [number, number] | null {
    const qs = this.tree.leaves().filter((l) => view.classify(l.box) !== Visibility.Out).map((l) => l.q);
    return qs.length ? [Math.min(...qs), Math.max(...qs)] : null;
  }

  /** The box around the leaves in view, or undefined when that is the whole species. */
  viewBox(view: ViewTest): Box | undefined {
    const inView = this.tree.leaves().filter((l) => view.classify(l.box) !== Visibility.Out);
    if (inView.length === 0) return undefined;
    const box = [0, 1, 2].map((a) => Math.min(...inView.map((l) => l.box[a]))).concat([0, 1, 2].map((a) => Math.max(...inView.map((l) => l.box[3 + a])))) as unknown as Box;
    return box.every((v, i) => v === this.bounds[i]) ? undefined : box;
  }
}
