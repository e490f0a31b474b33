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
