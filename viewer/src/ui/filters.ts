// Range filters: one row per column, a range slider drawn over the column's histogram
// (log counts). Dragging reports ranges as they change (final = false: the GPU follows);
// releasing, or typing a bound, reports a final range (the app may then ask the server).

import type { RangeFilter } from "../data/selection";
import { context2d, el, num } from "./dom";

export interface FilterHooks {
  changed(filters: RangeFilter[], final: boolean): void;
  removed(column: string): void;
}

interface Row {
  filter: RangeFilter;
  extent: [number, number];
  counts: number[] | null;
  canvas: HTMLCanvasElement;
  lo: HTMLInputElement;
  hi: HTMLInputElement;
}

export class FilterPanel {
  private rows: Row[] = [];

  constructor(
    private readonly container: HTMLElement,
    private readonly hooks: FilterHooks,
  ) {}

  filters(): RangeFilter[] {
    return this.rows.map((r) => ({ ...r.filter }));
  }

  columns(): string[] {
    return this.rows.map((r) => r.filter.column);
  }

  /** Rebuilds the rows for these filters; `extent` gives each column's [min, max]. */
  set(filters: RangeFilter[], extent: (column: string) => [number, number]): void {
    this.rows = filters.map((f) => this.row({ ...f }, extent(f.column)));
    this.container.replaceChildren(...this.rows.map((r) => r.canvas.parentElement!));
    this.rows.forEach((r) => this.draw(r));
  }

  setHistogram(column: string, counts: number[]): void {
    const r = this.rows.find((x) => x.filter.column === column);
    if (!r) return;
    r.counts = counts;
    this.draw(r);
  }

  redraw(): void {
    this.rows.forEach((r) => this.draw(r));
  }

  private row(filter: RangeFilter, extent: [number, number]): Row {
    const canvas = el("canvas");
    const lo = el("input", { type: "number", step: "any", value: String(filter.lo), title: "lower bound" });
    const hi = el("input", { type: "number", step: "any", value: String(filter.hi), title: "upper bound" });
    const remove = el("button", { type: "button", textContent: "×", title: "remove the filter" });
    const box = el("div", { className: "filter" }, el("div", { className: "head" }, el("span", { textContent: filter.column }), remove), canvas, el("div", { className: "row" }, lo, hi));
    box.dataset.column = filter.column;
    const r: Row = { filter, extent, counts: null, canvas, lo, hi };
    remove.addEventListener("click", () => this.hooks.removed(filter.column));
    const typed = () => {
      const a = Number(lo.value);
      const b = Number(hi.value);
      if (!Number.isFinite(a) || !Number.isFinite(b) || a > b) return;
      filter.lo = a;
      filter.hi = b;
      this.draw(r);
      this.hooks.changed(this.filters(), true);
    };
    lo.addEventListener("change", typed);
    hi.addEventListener("change", typed);
    this.drag(r);
    return r;
  }

  private drag(r: Row): void {
    let handle: "lo" | "hi" | null = null;
    const value = (e: PointerEvent) => {
      const rect = r.canvas.getBoundingClientRect();
      const t = Math.min(1, Math.max(0, (e.clientX - rect.left) / rect.width));
      return r.extent[0] + t * (r.extent[1] - r.extent[0]);
    };
    r.canvas.addEventListener("pointerdown", (e) => {
      const v = value(e);
      handle = Math.abs(v - r.filter.lo) <= Math.abs(v - r.filter.hi) ? "lo" : "hi";
      r.canvas.setPointerCapture(e.pointerId);
    });
    r.canvas.addEventListener("pointermove", (e) => {
      if (!handle) return;
      const v = Number(value(e).toPrecision(6));
      if (handle === "lo") r.filter.lo = Math.min(v, r.filter.hi);
      else r.filter.hi = Math.max(v, r.filter.lo);
      r.lo.value = String(r.filter.lo);
      r.hi.value = String(r.filter.hi);
      this.draw(r);
      this.hooks.changed(this.filters(), false);
    });
    const end = () => {
      if (!handle) return;
      handle = null;
      this.hooks.changed(this.filters(), true);
    };
    r.canvas.addEventListener("pointerup", end);
    r.canvas.addEventListener("pointercancel", end);
  }

  private draw(r: Row): void {
    if (!r.canvas.isConnected) return;
    const ctx = context2d(r.canvas);
    const { width: w, height: h } = r.canvas;
    ctx.clearRect(0, 0, w, h);
    const [e0, e1] = r.extent;
    const x = (v: number) => ((v - e0) / (e1 - e0 || 1)) * w;
    if (r.counts && r.counts.length) {
      const top = Math.log1p(Math.max(...r.counts));
      const bw = w / r.counts.length;
      r.counts.forEach((c, i) => {
        const mid = e0 + ((i + 0.5) / r.counts!.length) * (e1 - e0);
        ctx.fillStyle = mid >= r.filter.lo && mid <= r.filter.hi ? "#6cb4ff" : "#4a505c";
        const bh = top > 0 ? (Math.log1p(c) / top) * (h - 2) : 0;
        ctx.fillRect(i * bw, h - bh, Math.max(1, bw - 0.5), bh);
      });
    }
    ctx.fillStyle = "rgba(0,0,0,0.45)";
    ctx.fillRect(0, 0, x(r.filter.lo), h);
    ctx.fillRect(x(r.filter.hi), 0, w - x(r.filter.hi), h);
    ctx.fillStyle = "#ffffff";
    for (const v of [r.filter.lo, r.filter.hi]) ctx.fillRect(Math.round(x(v)) - 1, 0, 2, h);
    r.canvas.title = `${r.filter.column}: ${num(r.filter.lo)} … ${num(r.filter.hi)} (drag the handles)`;
  }
}
