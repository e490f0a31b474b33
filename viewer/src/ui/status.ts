// The status line under the view.

import { bytes, count, num } from "./dom";

export interface StatusFacts {
  shown: number;
  total: number;
  bytes: number;
  queryMs: number | null;
  quality: [number, number] | null;
  state: "loading" | "ready" | "error";
}

export function statusText(s: StatusFacts): string {
  const q = s.quality ? (s.quality[0] === s.quality[1] ? num(s.quality[0]) : `${num(s.quality[0])}–${num(s.quality[1])}`) : "–";
  return [
    `${count(s.shown)} / ${count(s.total)} points`,
    `${bytes(s.bytes)} streamed`,
    `query ${s.queryMs === null ? "–" : `${s.queryMs.toFixed(1)} ms`}`,
    `quality ${q}`,
    { loading: "loading…", ready: "ready", error: "stopped" }[s.state],
  ].join(" · ");
}

/** The status line, and its figures as data attributes (for tests/browser and bench/serve_browser.py). */
export function showStatus(el: HTMLElement, s: StatusFacts, loaded: number): void {
  el.textContent = statusText(s);
  el.dataset.shown = String(s.shown);
  el.dataset.loaded = String(loaded);
  el.dataset.total = String(s.total);
  el.dataset.state = s.state;
  el.dataset.qualityInView = s.quality ? String(s.quality[0]) : "";
}

/** The slice's line: where its loading is and the level drawn (data-state and data-level for tests). */
export function showSliceStatus(el: HTMLElement, state: "off" | "loading" | "ready" | "error", plane: { level: number; width: number; height: number } | null): void {
  el.dataset.state = state;
  el.dataset.level = plane ? String(plane.level) : "";
  const what = state === "error" ? "error" : state === "loading" ? "loading…" : "full resolution";
  el.textContent = state === "off" ? "" : `${what}${plane ? ` · level ${plane.level}, ${plane.width} × ${plane.height} samples` : ""}`;
}
