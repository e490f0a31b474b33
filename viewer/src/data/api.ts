// The HTTP API of `motes serve` (docs/http-api.md) as the viewer uses it: URLs, the token,
// JSON calls and errors. The worker that fetches frames shares the error handling.

import type { Box } from "./cells";
import { boxParam } from "./cells";
import type { FieldInfo, FieldSummary } from "./slice";

export const API_PREFIX = "api/v1";

export interface DatasetSummary {
  name: string;
  steps: number;
  species: string[];
  particles: number;
}

export interface StepInfo {
  index: number;
  time: number;
  attributes: Record<string, unknown>;
  species: Record<string, { count: number; bounds: { min: number[]; max: number[] } }>;
}

export interface DatasetInfo {
  name: string;
  attributes: Record<string, unknown>;
  steps: StepInfo[];
}

export interface ColumnInfo {
  name: string;
  dtype: string;
  unit: string;
  unit_label: string;
  index: string;
  min: number | null;
  max: number | null;
  nan_count: number;
}

export interface SpeciesInfo {
  dataset: string;
  step: number;
  time: number;
  species: string;
  count: number;
  bounds: { min: number[]; max: number[] };
  columns: ColumnInfo[];
  ladder: { quality: number[]; count: number[] };
}

export interface Histogram {
  x: { column: string; bins: number; range: [number, number] };
  y?: { column: string; bins: number; range: [number, number] };
  counts: number[] | number[][];
  quality: number;
  exact: boolean;
  total: number;
  query_ms: number;
}

/** An error answer of the server (or none: status 0 when it could not be reached). */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: number,
    readonly kind: string,
    message: string,
  ) {
    super(message);
  }

  /** What to tell the user. */
  explain(): string {
    switch (this.status) {
      case 0:
        return `Cannot reach the server (${this.message}). Is \`motes serve\` still running?`;
      case 401:
        return "The server needs a token: open the address `motes serve` printed (it ends in ?token=...).";
      case 413:
        return `Too much asked at once: ${this.message.replace(/[.\s]*$/, ".")} Lower the point budget or narrow the filter.`;
      case 408:
        return `The query took too long and was stopped: ${this.message}`;
      default:
        return this.message;
    }
  }
}

export function isAbort(e: unknown): boolean {
  return e instanceof DOMException && e.name === "AbortError";
}

/** The ApiError of a response that is not ok (the server's JSON error, or its status line). */
export async function errorFromResponse(res: Response): Promise<ApiError> {
  let kind = "http";
  let message = `${res.status} ${res.statusText}`.trim();
  try {
    const body = await res.json();
    if (body && body.error) {
      kind = String(body.error.kind ?? kind);
      message = String(body.error.message ?? message);
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(res.status, kind, message);
}

export type Params = Record<string, string | number | undefined | null>;

export class Api {
  /** `base`: the app's address (where / is served); `token`: from ?token= of the page, for a
   * page served elsewhere (the dev server). `motes serve` itself moves the token into a cookie
   * and sends the browser to the page without it, so its requests carry the cookie only. */
  constructor(
    readonly base: string,
    readonly token: string | null,
  ) {}

  /** The API of the page at `loc`. A token in its address is kept for the requests' header
   * and taken out of the address bar (`hist`), so it is never shown, bookmarked or shared. */
  static fromLocation(loc: Location, hist?: History): Api {
    const params = new URLSearchParams(loc.search);
    const token = params.get("token");
    if (token !== null && hist) {
      params.delete("token");
      const search = params.toString();
      hist.replaceState(hist.state, "", `${loc.pathname}${search ? `?${search}` : ""}${loc.hash}`);
    }
    return new Api(new URL(".", loc.href).href, token);
  }

  headers(): Record<string, string> {
    return this.token ? { Authorization: `Bearer ${this.token}` } : {};
  }

  /** An API URL: never with the token (it rides in a header or the server's cookie). */
  url(path: string, params: Params = {}): string {
    const u = new URL(`${API_PREFIX}/${path}`, this.base);
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") u.searchParams.set(k, String(v));
    return u.href;
  }

  async json<T>(path: string, params: Params = {}, signal?: AbortSignal): Promise<T> {
    let res: Response;
    try {
      res = await fetch(this.url(path, params), { headers: this.headers(), signal });
    } catch (e) {
      if (isAbort(e)) throw e;
      throw new ApiError(0, "network", (e as Error).message);
    }
    if (!res.ok) throw await errorFromResponse(res);
    return (await res.json()) as T;
  }

  datasets(): Promise<{ datasets: DatasetSummary[] }> {
    return this.json("datasets");
  }

  dataset(ds: string): Promise<DatasetInfo> {
    return this.json(`datasets/${encodeURIComponent(ds)}`);
  }

  /** Long poll: answered when the dataset has a step above `after`, or after `wait` seconds. */
  updates(ds: string, after: number, wait: number, signal?: AbortSignal): Promise<{ steps: number[]; newer: boolean }> {
    return this.json(`datasets/${encodeURIComponent(ds)}/updates`, { after: String(after), wait: String(wait) }, signal);
  }

  speciesPath(ds: string, step: number, sp: string): string {
    return `datasets/${encodeURIComponent(ds)}/steps/${step}/species/${encodeURIComponent(sp)}`;
  }

  species(ds: string, step: number, sp: string): Promise<SpeciesInfo> {
    return this.json(this.speciesPath(ds, step, sp));
  }

  fieldPath(ds: string, step: number, field: string): string {
    return `datasets/${encodeURIComponent(ds)}/steps/${step}/fields/${encodeURIComponent(field)}`;
  }

  /** The grid fields of a step. */
  fields(ds: string, step: number): Promise<{ fields: FieldSummary[] }> {
    return this.json(`datasets/${encodeURIComponent(ds)}/steps/${step}/fields`);
  }

  field(ds: string, step: number, field: string): Promise<FieldInfo> {
    return this.json(this.fieldPath(ds, step, field));
  }

  histogram(ds: string, step: number, sp: string, params: Params, signal?: AbortSignal): Promise<Histogram> {
    return this.json(`${this.speciesPath(ds, step, sp)}/histogram`, params, signal);
  }

  /** The points URL (fetched by the frame worker with headers()). */
  pointsUrl(ds: string, step: number, sp: string, params: Params): string {
    return this.url(`${this.speciesPath(ds, step, sp)}/points`, params);
  }

  /** A download link: a plain navigation, authorised by the cookie `motes serve` set (the
   * token is never put in a link, which could be copied, shared or logged). */
  exportUrl(ds: string, step: number, sp: string, params: Params): string {
    return this.url(`${this.speciesPath(ds, step, sp)}/export`, params);
  }
}

export function boxOrUndefined(box: Box | undefined): string | undefined {
  return box ? boxParam(box) : undefined;
}
