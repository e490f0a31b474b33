// The client's octree of cells over a species' bounds, and the bookkeeping that makes
// progressive loading send no particle twice (docs/http-api.md, "Quality ranges").
//
// Every leaf holds the quality q up to which its particles are loaded: the chunks whose
// cells contain the leaf chain the ranges (0, a), (a, b), ... (., q). A leaf splits into 8
// children that inherit its quality, at midpoints computed once, in double precision, so
// that the same boxes are always sent (in shortest round-trip form, String(x)). A chunk is
// the answer to one request: for each cell it names the range (q0, to) it loaded. A chunk
// can be dropped only while it is the last refinement of every leaf under its cells (each
// such leaf still at `to`); dropping it puts those leaves back at q0, so the ranges stay
// exact.

export type Box = readonly [number, number, number, number, number, number];

export class Cell {
  children: Cell[] | null = null;
  constructor(
    readonly box: Box,
    readonly depth: number,
    /** quality loaded (all of the cell's leaves share it while the cell is a leaf) */
    public q: number,
    /** estimated share of the species' (matching) particles inside the cell */
    public share: number,
  ) {}

  get leaf(): boolean {
    return this.children === null;
  }
}

/** Octant i of a box split at mid: bit 0 x, bit 1 y, bit 2 z (1 = upper half). */
export function octant(box: Box, mid: readonly number[], i: number): Box {
  const lo = [0, 1, 2].map((a) => ((i >> a) & 1 ? mid[a] : box[a]));
  const hi = [0, 1, 2].map((a) => ((i >> a) & 1 ? box[3 + a] : mid[a]));
  return [lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]];
}

export function midpoint(box: Box): [number, number, number] {
  return [(box[0] + box[3]) / 2, (box[1] + box[4]) / 2, (box[2] + box[5]) / 2];
}

/** The `cells` parameter entry of a cell: its box and the quality the client has there. */
export function cellParam(box: Box, q0: number): string {
  return [...box, q0].map((v) => String(v)).join(",");
}

/** The box of a cell as `x0,y0,z0,x1,y1,z1` (the `box` parameter). */
export function boxParam(box: Box): string {
  return box.map((v) => String(v)).join(",");
}

export function contains(outer: Box, inner: Box): boolean {
  return outer[0] <= inner[0] && outer[1] <= inner[1] && outer[2] <= inner[2] && inner[3] <= outer[3] && inner[4] <= outer[4] && inner[5] <= outer[5];
}

/** The cells of one chunk: which rows of the chunk each cell's range (q0, to) brought. */
export interface ChunkCell {
  cell: Cell;
  q0: number;
  to: number;
  begin: number;
  end: number;
}

export interface ChunkRecord {
  /** increasing with each chunk applied: the latest refinements have the largest */
  seq: number;
  cells: ChunkCell[];
}

export class CellTree {
  readonly root: Cell;
  private seq = 0;

  constructor(bounds: Box) {
    this.root = new Cell(bounds, 0, 0, 1);
  }

  leaves(under: Cell = this.root): Cell[] {
    const out: Cell[] = [];
    const stack = [under];
    while (stack.length) {
      const c = stack.pop()!;
      if (c.children) stack.push(...c.children);
      else out.push(c);
    }
    return out;
  }

  /**
   * Splits a leaf into 8 children of the same quality. `counts[i]`, the particles loaded in
   * octant i, spread the leaf's share; without any, each child gets an eighth.
   */
  split(cell: Cell, counts?: readonly number[]): Cell[] {
    if (!cell.leaf) throw new Error("only a leaf splits");
    const mid = midpoint(cell.box);
    const total = counts ? counts.reduce((a, b) => a + b, 0) : 0;
    cell.children = Array.from({ length: 8 }, (_, i) =>
      new Cell(octant(cell.box, mid, i), cell.depth + 1, cell.q, total > 0 ? (cell.share * counts![i]) / total : cell.share / 8),
    );
    return cell.children;
  }

  /**
   * Records the answer to a request for `cells` (leaves, each at its q0 when asked): they
   * now hold quality `to`. `rows[i]` particles came for cell i; `ladder` turns qualities
   * into particle counts of the whole species to update each cell's share.
   */
  apply(cells: readonly Cell[], q0s: readonly number[], to: number, rows: readonly number[], ladder: Ladder): ChunkRecord {
    if (cells.length !== rows.length) throw new Error(`${rows.length} cell counts for ${cells.length} cells`);
    let begin = 0;
    const out: ChunkCell[] = cells.map((cell, i) => {
      if (!cell.leaf || cell.q !== q0s[i]) throw new Error("a cell changed while its request was in flight");
      const cc = { cell, q0: q0s[i], to: Math.max(to, q0s[i]), begin, end: begin + rows[i] };
      begin += rows[i];
      const before = ladder.countAt(q0s[i]);
      const after = ladder.countAt(cc.to);
      if (after > 0) cell.share = Math.min(1, (cell.share * before + rows[i]) / after);
      cell.q = cc.to;
      return cc;
    });
    return { seq: ++this.seq, cells: out };
  }

  /** True when the chunk is the last refinement of every leaf under its cells. */
  canDrop(chunk: ChunkRecord): boolean {
    return chunk.cells.every((cc) => cc.q0 === cc.to || this.leaves(cc.cell).every((l) => l.q === cc.to));
  }

  /** Forgets a chunk (canDrop must hold): the leaves under its cells go back to q0. */
  drop(chunk: ChunkRecord): void {
    if (!this.canDrop(chunk)) throw new Error("a chunk under a later refinement cannot be dropped");
    for (const cc of chunk.cells) for (const l of this.leaves(cc.cell)) l.q = cc.q0;
  }

  /** The lowest quality over the leaves (1 when everything is loaded). */
  minQuality(): number {
    return Math.min(...this.leaves().map((l) => l.q));
  }
}

/** The quality ladder of a species: qualities k/K and the particles a read at each returns. */
export class Ladder {
  constructor(
    readonly quality: readonly number[],
    readonly count: readonly number[],
  ) {
    if (quality.length !== count.length || quality.length < 2) throw new Error("a ladder needs matching qualities and counts");
  }

  /** Particles of the whole species up to quality q (interpolated between rungs). */
  countAt(q: number): number {
    const qs = this.quality;
    if (q <= qs[0]) return this.count[0];
    for (let k = 1; k < qs.length; k++) {
      if (q <= qs[k]) {
        const t = (q - qs[k - 1]) / (qs[k] - qs[k - 1]);
        return this.count[k - 1] + t * (this.count[k] - this.count[k - 1]);
      }
    }
    return this.count[this.count.length - 1];
  }

  /** The first rung above q (1 at the top). */
  next(q: number): number {
    for (const r of this.quality) if (r > q) return r;
    return 1;
  }
}
