// Which cells to ask for next: the visible leaves that most need detail (their on-screen
// area against the particles they hold), coarse to fine, within the point budget. Leaves
// mostly off screen, or whose next quality step would crowd the screen, split first so that
// detail goes where it is seen.

import { type Box, Cell, CellTree, Ladder } from "./cells";

export const Visibility = { Out: 0, Partial: 1, Inside: 2 } as const;
export type Visibility = (typeof Visibility)[keyof typeof Visibility];

/** What the camera sees: the planner's only view of it. */
export interface ViewTest {
  classify(box: Box): Visibility;
  /** on-screen area in px² of the box: clipped to the viewport, and whole (Infinity when it reaches behind the eye) */
  area(box: Box): { visible: number; full: number };
}

export interface RefineSettings {
  /** points wanted per px² of screen covered */
  density: number;
  /** the budget of the first request (the whole species at a coarse quality) */
  firstBudget: number;
  /** the most points one request may ask for */
  maxRequestPoints: number;
  /** the most cells one request may carry (the server's --max-cells is larger) */
  maxCells: number;
  maxDepth: number;
  /** a leaf holding fewer loaded points than this does not split */
  minSplitPoints: number;
  /** a leaf whose next step would bring this many times its target splits */
  overshoot: number;
}

export const DEFAULT_REFINE: Omit<RefineSettings, "density"> = {
  firstBudget: 200_000,
  maxRequestPoints: 1_000_000,
  maxCells: 512,
  maxDepth: 10,
  minSplitPoints: 512,
  overshoot: 2.5,
};

export interface RefineRequest {
  cells: Cell[];
  q0s: number[];
  budget: number;
  /** the points the next quality step should bring, by the cells' shares */
  estimate: number;
}

export type Plan = { kind: "request"; request: RefineRequest } | { kind: "full"; needed: number } | { kind: "done" };

interface Candidate {
  cell: Cell;
  need: number;
  deficit: number;
  step: number;
}

/** Points held, and room left under the point budget. */
export interface Points {
  loaded: number;
  room: number;
}

/**
 * The next request, or "full" (`needed` more points of room would let it go on), or "done".
 * A request asks for at most as many points as are loaded (or the first budget): each step
 * about doubles the detail, coarse to fine. `countOctants(leaf)` counts the loaded points of
 * a leaf in each of its octants (for the shares of its children when it splits).
 */
export function plan(
  tree: CellTree,
  ladder: Ladder,
  view: ViewTest,
  s: RefineSettings,
  { loaded, room }: Points,
  countOctants: (leaf: Cell) => number[],
): Plan {
  const root = tree.root;
  if (root.leaf && root.q === 0) {
    const budget = Math.min(s.firstBudget, room);
    if (budget <= 0) return { kind: "full", needed: s.firstBudget };
    return { kind: "request", request: { cells: [root], q0s: [0], budget, estimate: ladder.countAt(ladder.next(0)) } };
  }
  const candidates: Candidate[] = [];
  const visit = (cell: Cell): void => {
    const vis = view.classify(cell.box);
    if (vis === Visibility.Out) return;
    if (!cell.leaf) {
      cell.children!.forEach(visit);
      return;
    }
    if (cell.q >= 1) return;
    const { visible, full } = view.area(cell.box);
    const target = visible * s.density;
    const held = cell.share * ladder.countAt(cell.q);
    if (held >= target) return;
    const next = ladder.next(cell.q);
    const step = cell.share * (ladder.countAt(next) - ladder.countAt(cell.q));
    const offScreen = vis === Visibility.Partial && visible < 0.5 * full;
    const crowded = held + step > s.overshoot * target;
    if ((offScreen || crowded) && cell.depth < s.maxDepth && held >= s.minSplitPoints) {
      tree.split(cell, countOctants(cell)).forEach(visit);
      return;
    }
    candidates.push({ cell, need: target / Math.max(held, 1), deficit: target - held, step });
  };
  visit(root);
  if (candidates.length === 0) return { kind: "done" };

  // Coarse to fine: the lowest quality first, the neediest cells first within it.
  candidates.sort((a, b) => a.cell.q - b.cell.q || b.need - a.need);
  const q = candidates[0].cell.q;
  const limit = Math.min(room, s.maxRequestPoints, Math.max(s.firstBudget, loaded));
  if (candidates[0].step > room) return { kind: "full", needed: candidates[0].step - room };
  const cells: Cell[] = [];
  let estimate = 0;
  let deficit = 0;
  for (const c of candidates) {
    if (c.cell.q !== q || cells.length >= s.maxCells) break;
    if (cells.length > 0 && estimate + c.step > limit) break;
    cells.push(c.cell);
    estimate += c.step;
    deficit += c.deficit;
  }
  const budget = Math.max(1, Math.floor(Math.min(limit, Math.max(deficit, estimate))));
  return { kind: "request", request: { cells, q0s: cells.map((c) => c.q), budget, estimate } };
}
