// The main thread's side of the frame worker: one promise per frame, aborted through an
// AbortSignal (the worker then aborts its fetch, and the server stops the query).

import { ApiError } from "./api";
import { type Frame, type FrameHeader, viewColumns } from "./frame";

export interface FrameRequest {
  id: number;
  url?: string;
  headers?: Record<string, string>;
  cancel?: number;
}

export type FrameReply =
  | { id: number; header: FrameHeader; buffer: ArrayBuffer }
  | { id: number; error: { status: number; kind: string; message: string } }
  | { id: number; aborted: true };

export class FrameLoader {
  private readonly worker: Worker;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (f: Frame) => void; reject: (e: unknown) => void }>();

  constructor() {
    this.worker = new Worker(new URL("./frame.worker.ts", import.meta.url), { type: "module" });
    this.worker.onmessage = (ev: MessageEvent<FrameReply>) => this.settle(ev.data);
  }

  private settle(m: FrameReply): void {
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if ("header" in m) p.resolve({ header: m.header, buffer: m.buffer, columns: viewColumns(m.buffer, m.header) });
    else if ("error" in m) p.reject(new ApiError(m.error.status, m.error.kind, m.error.message));
    else p.reject(new DOMException("the request was aborted", "AbortError"));
  }

  load(url: string, headers: Record<string, string>, signal: AbortSignal): Promise<Frame> {
    const id = this.nextId++;
    return new Promise<Frame>((resolve, reject) => {
      if (signal.aborted) {
        reject(new DOMException("the request was aborted", "AbortError"));
        return;
      }
      this.pending.set(id, { resolve, reject });
      signal.addEventListener("abort", () => this.worker.postMessage({ id: 0, cancel: id } satisfies FrameRequest), { once: true });
      this.worker.postMessage({ id, url, headers } satisfies FrameRequest);
    });
  }
}
