// Fetches and parses points frames off the main thread. The main thread posts
// {id, url, headers} (or {cancel: id}); the worker answers {id, header, buffer} with the
// buffer transferred (the columns are then viewed, not copied), or {id, error}.

import { ApiError, errorFromResponse, isAbort } from "./api";
import { FRAME_MEDIA_TYPE, FrameError, parseFrameHeader } from "./frame";
import type { FrameReply, FrameRequest } from "./loader";

const inflight = new Map<number, AbortController>();

function reply(msg: FrameReply, transfer: Transferable[] = []): void {
  (self as unknown as Worker).postMessage(msg, transfer);
}

async function load(req: FrameRequest & { url: string }): Promise<void> {
  const ctl = new AbortController();
  inflight.set(req.id, ctl);
  try {
    let res: Response;
    try {
      res = await fetch(req.url, { headers: { Accept: FRAME_MEDIA_TYPE, ...req.headers }, signal: ctl.signal });
    } catch (e) {
      if (isAbort(e)) throw e;
      throw new ApiError(0, "network", (e as Error).message);
    }
    if (!res.ok) throw await errorFromResponse(res);
    const buffer = await res.arrayBuffer();
    const header = parseFrameHeader(buffer);
    reply({ id: req.id, header, buffer }, [buffer]);
  } catch (e) {
    if (isAbort(e)) reply({ id: req.id, aborted: true });
    else if (e instanceof ApiError) reply({ id: req.id, error: { status: e.status, kind: e.kind, message: e.message } });
    else if (e instanceof FrameError) reply({ id: req.id, error: { status: 0, kind: "format", message: e.message } });
    else reply({ id: req.id, error: { status: 0, kind: "internal", message: String(e) } });
  } finally {
    inflight.delete(req.id);
  }
}

self.onmessage = (ev: MessageEvent<FrameRequest>) => {
  const m = ev.data;
  if (m.cancel !== undefined) inflight.get(m.cancel)?.abort();
  else if (m.url !== undefined) void load(m as FrameRequest & { url: string });
};
