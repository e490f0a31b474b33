// The field slice's loading: when the slice changes (field, component, axis, position), the
// requests for the old one are aborted and the plane is fetched again coarse to fine (the
// levels of slicePlan, one request at a time); each answer replaces the plane drawn.

import { ApiError, errorFromResponse, isAbort, type Api } from "./api";
import { FRAME_MEDIA_TYPE, parseFieldFrame } from "./frame";
import { type Axis, type FieldInfo, type SlicePlane, planeOf, sliceIndexBox, slicePlan } from "./slice";

export interface SliceRequest {
  ds: string;
  step: number;
  info: FieldInfo;
  component: string | null;
  axis: Axis;
  /** the plane's sample index along the axis (level 0) */
  index: number;
}

export interface SliceEvents {
  /** a plane arrived (coarse first; `done` after the finest) */
  loaded: (plane: SlicePlane, done: boolean) => void;
  failed: (e: unknown) => void;
}

export class SliceLoader {
  private ctl: AbortController | null = null;
  busy = false;

  constructor(
    private readonly api: Api,
    private readonly events: SliceEvents,
  ) {}

  stop(): void {
    this.ctl?.abort();
    this.ctl = null;
    this.busy = false;
  }

  /** Fetches the slice coarse to fine (what was asked before is aborted). */
  load(req: SliceRequest, maxTexture = 4096): void {
    this.stop();
    const ctl = new AbortController();
    this.ctl = ctl;
    this.busy = true;
    void this.run(req, ctl.signal, maxTexture).finally(() => {
      if (this.ctl === ctl) {
        this.busy = false;
        this.ctl = null;
      }
    });
  }

  private async run(req: SliceRequest, signal: AbortSignal, maxTexture: number): Promise<void> {
    const { info, axis } = req;
    const plan = slicePlan(info.dims, axis, info.levels, 4096, 4_000_000, maxTexture);
    try {
      for (let i = 0; i < plan.length; i++) {
        const level = plan[i];
        const url = this.api.url(`${this.api.fieldPath(req.ds, req.step, info.field)}/samples`, {
          index_box: sliceIndexBox(info.dims, axis, req.index, level).join(","),
          level,
          component: req.component ?? undefined,
        });
        let res: Response;
        try {
          res = await fetch(url, { headers: { Accept: FRAME_MEDIA_TYPE, ...this.api.headers() }, signal });
        } catch (e) {
          if (isAbort(e)) throw e;
          throw new ApiError(0, "network", (e as Error).message);
        }
        if (!res.ok) throw await errorFromResponse(res);
        const frame = parseFieldFrame(await res.arrayBuffer());
        if (signal.aborted) return;
        const values = Object.values(frame.columns)[0];
        if (!(values instanceof Float32Array)) throw new ApiError(0, "format", "the samples are not float32");
        this.events.loaded(planeOf(info, axis, frame.header, values), i === plan.length - 1);
      }
    } catch (e) {
      if (!isAbort(e) && !signal.aborted) this.events.failed(e);
    }
  }
}
