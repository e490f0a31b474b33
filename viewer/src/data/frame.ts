// The binary frame of the points and field samples endpoints (docs/http-api.md, "The
// frame"): its constants, dtype names and parsers, in this one place. Columns are viewed as
// typed arrays into the frame's buffer, never copied.

export const FRAME_MAGIC = "MOTESFRM";
export const FRAME_VERSION = 1;
export const FRAME_ALIGN = 8;
/** magic (8) + version (u32) + header length (u32) */
export const FRAME_PREFIX_BYTES = 16;
export const FRAME_MEDIA_TYPE = "application/vnd.motes.frame";

export const DTYPES = {
  f32: Float32Array,
  f64: Float64Array,
  i8: Int8Array,
  i16: Int16Array,
  i32: Int32Array,
  i64: BigInt64Array,
  u8: Uint8Array,
  u16: Uint16Array,
  u32: Uint32Array,
  u64: BigUint64Array,
} as const;

export type DtypeName = keyof typeof DTYPES;
export type ColumnArray = InstanceType<(typeof DTYPES)[DtypeName]>;

export interface FrameColumn {
  name: string;
  dtype: DtypeName;
  offset: number;
  bytes: number;
}

export interface FrameHeader {
  rows: number;
  columns: FrameColumn[];
  to: number;
  cells: { rows: number }[];
  origin?: [number, number, number];
  estimate?: number;
  query_ms: number;
}

export interface Frame {
  header: FrameHeader;
  buffer: ArrayBuffer;
  columns: Record<string, ColumnArray>;
}

export class FrameError extends Error {
  override name = "FrameError";
}

function fail(message: string): never {
  throw new FrameError(`bad frame: ${message}`);
}

/** The JSON header of a points frame, checked against the buffer (magic, version, bounds, alignment). */
export function parseFrameHeader(buffer: ArrayBuffer): FrameHeader {
  const header = parseHeaderJson(buffer) as FrameHeader;
  checkColumns(header, buffer.byteLength, FRAME_PREFIX_BYTES + new DataView(buffer).getUint32(12, true));
  checkCells(header);
  return header;
}

/** The JSON header of any frame (points or field samples): magic, version, length. */
function parseHeaderJson(buffer: ArrayBuffer): unknown {
  if (buffer.byteLength < FRAME_PREFIX_BYTES) fail(`${buffer.byteLength} bytes, shorter than its prefix`);
  const magic = new TextDecoder("ascii").decode(new Uint8Array(buffer, 0, 8));
  if (magic !== FRAME_MAGIC) fail(`magic ${JSON.stringify(magic)}, expected ${FRAME_MAGIC}`);
  const dv = new DataView(buffer);
  const version = dv.getUint32(8, true);
  if (version !== FRAME_VERSION) fail(`version ${version}; this viewer reads version ${FRAME_VERSION}`);
  const h = dv.getUint32(12, true);
  if (FRAME_PREFIX_BYTES + h > buffer.byteLength) fail(`header of ${h} bytes runs past the end`);
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(buffer, FRAME_PREFIX_BYTES, h)));
  } catch (e) {
    fail(`header is not JSON (${(e as Error).message})`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function checkCells(header: FrameHeader): void {
  if (!Array.isArray(header.cells)) fail("no cells");
  let cellRows = 0;
  for (const c of header.cells) {
    if (!isObject(c) || !Number.isSafeInteger(c.rows) || (c.rows as number) < 0) fail(`cell ${JSON.stringify(c)}`);
    cellRows += c.rows as number;
  }
  if (cellRows !== header.rows) fail(`cells hold ${cellRows} rows, the frame ${header.rows}`);
  if (typeof header.to !== "number") fail("no 'to'");
}

/** The header's rows and columns against the buffer: dtypes, sizes, 8-aligned offsets inside. */
function checkColumns(header: { rows: number; columns: FrameColumn[] }, size: number, dataStart: number): void {
  if (!isObject(header)) fail("header is not a JSON object");
  if (!Number.isSafeInteger(header.rows) || header.rows < 0) fail(`rows ${JSON.stringify(header.rows)}`);
  if (!Array.isArray(header.columns)) fail("no columns");
  const names = new Set<string>();
  for (const c of header.columns) {
    if (!isObject(c) || typeof c.name !== "string") fail(`column ${JSON.stringify(c)}`);
    if (names.has(c.name)) fail(`column '${c.name}' given twice`);
    names.add(c.name);
    const T = typeof c.dtype === "string" && Object.hasOwn(DTYPES, c.dtype) ? DTYPES[c.dtype] : undefined;
    if (!T) fail(`column '${c.name}' has unknown dtype '${String(c.dtype)}'`);
    if (!Number.isSafeInteger(c.offset) || !Number.isSafeInteger(c.bytes)) fail(`column '${c.name}' has no offset and size`);
    if (c.offset % FRAME_ALIGN !== 0) fail(`column '${c.name}' at offset ${c.offset}, not a multiple of ${FRAME_ALIGN}`);
    if (c.offset < dataStart || c.offset + c.bytes > size) fail(`column '${c.name}' lies outside the frame`);
    if (c.bytes !== header.rows * T.BYTES_PER_ELEMENT) fail(`column '${c.name}' has ${c.bytes} bytes for ${header.rows} rows`);
  }
}

/**
 * The header of a field samples frame (docs/http-api.md, "Samples of a grid field"): the
 * lattice of a level in a box, its samples in C order of (z, y, x) (x fastest).
 */
export interface FieldFrameHeader {
  rows: number;
  columns: FrameColumn[];
  field: string;
  level: number;
  /** samples per axis (x, y, z; as many as the field has axes) */
  dims: number[];
  /** index (at level 0) of the first sample per axis */
  first: number[];
  /** 2^level: indexes between samples */
  stride: number;
  index_box: { lo: number[]; hi: number[] };
  /** position of the first sample per axis (null along an axis with no sample) */
  origin: (number | null)[];
  /** positions between samples per axis (uniform grids), or null (rectilinear: positions) */
  step: number[] | null;
  positions?: number[][];
  query_ms: number;
}

export interface FieldFrame {
  header: FieldFrameHeader;
  buffer: ArrayBuffer;
  columns: Record<string, ColumnArray>;
}

function integers(v: unknown, n: number, min: number): v is number[] {
  return Array.isArray(v) && v.length === n && v.every((x) => Number.isSafeInteger(x) && x >= min);
}

export function parseFieldFrameHeader(buffer: ArrayBuffer): FieldFrameHeader {
  const header = parseHeaderJson(buffer) as FieldFrameHeader;
  checkColumns(header, buffer.byteLength, FRAME_PREFIX_BYTES + new DataView(buffer).getUint32(12, true));
  if (typeof header.field !== "string") fail("no field");
  if (!Number.isSafeInteger(header.level) || header.level < 0 || header.level > 62) fail(`level ${JSON.stringify(header.level)}`);
  const n = Array.isArray(header.dims) ? header.dims.length : 0;
  if (n < 1 || n > 3 || !integers(header.dims, n, 0)) fail(`dims ${JSON.stringify(header.dims)}`);
  if (header.dims.reduce((a, b) => a * b, 1) !== header.rows) fail(`dims ${JSON.stringify(header.dims)} hold other than ${header.rows} rows`);
  if (!integers(header.first, n, 0)) fail(`first ${JSON.stringify(header.first)}`);
  if (header.stride !== 2 ** header.level) fail(`stride ${JSON.stringify(header.stride)} of level ${header.level}`);
  if (!Array.isArray(header.origin) || header.origin.length !== n || !header.origin.every((v, k) => (v === null ? header.dims[k] === 0 : Number.isFinite(v)))) {
    fail(`origin ${JSON.stringify(header.origin)}`);
  }
  if (header.step === null) {
    const p = header.positions;
    if (!Array.isArray(p) || p.length !== n || !p.every((a, k) => Array.isArray(a) && a.length === header.dims[k] && a.every(Number.isFinite))) fail("no step nor positions");
  } else if (!Array.isArray(header.step) || header.step.length !== n || !header.step.every((v) => Number.isFinite(v) && v > 0)) {
    fail(`step ${JSON.stringify(header.step)}`);
  }
  return header;
}

export function parseFieldFrame(buffer: ArrayBuffer): FieldFrame {
  const header = parseFieldFrameHeader(buffer);
  return { header, buffer, columns: viewColumns(buffer, header) };
}

/** Typed-array views of the columns (no copy). */
export function viewColumns(buffer: ArrayBuffer, header: { columns: FrameColumn[] }): Record<string, ColumnArray> {
  const out: Record<string, ColumnArray> = {};
  for (const c of header.columns) {
    const T = DTYPES[c.dtype];
    out[c.name] = new T(buffer, c.offset, c.bytes / T.BYTES_PER_ELEMENT);
  }
  return out;
}

export function parseFrame(buffer: ArrayBuffer): Frame {
  const header = parseFrameHeader(buffer);
  return { header, buffer, columns: viewColumns(buffer, header) };
}

/** A frame's bytes from a header and columns: the server's layout, for tests and tools. */
export function encodeFrame(header: Omit<FrameHeader, "columns"> | Omit<FieldFrameHeader, "columns">, columns: Record<string, ColumnArray>): ArrayBuffer {
  const names = Object.keys(columns);
  const enc = new TextEncoder();
  const round = (n: number) => Math.ceil(n / FRAME_ALIGN) * FRAME_ALIGN;
  let cols: FrameColumn[] = names.map((name) => ({ name, dtype: dtypeOf(columns[name]), offset: 0, bytes: columns[name].byteLength }));
  let json = enc.encode(JSON.stringify({ ...header, columns: cols }));
  let end = 0;
  for (;;) {  // the header's length depends on the offsets it holds: place until they agree
    let offset = round(FRAME_PREFIX_BYTES + json.length);
    cols = cols.map((c) => {
      const placed = { ...c, offset };
      offset = round(offset + c.bytes);
      return placed;
    });
    end = offset;
    const again = enc.encode(JSON.stringify({ ...header, columns: cols }));
    const fits = round(FRAME_PREFIX_BYTES + again.length) === round(FRAME_PREFIX_BYTES + json.length);
    json = again;
    if (fits) break;
  }
  if (cols.length === 0) end = round(FRAME_PREFIX_BYTES + json.length);
  const out = new ArrayBuffer(end);
  const bytes = new Uint8Array(out);
  bytes.set(enc.encode(FRAME_MAGIC), 0);
  new DataView(out).setUint32(8, FRAME_VERSION, true);
  new DataView(out).setUint32(12, json.length, true);
  bytes.set(json, FRAME_PREFIX_BYTES);
  for (const c of cols) bytes.set(new Uint8Array(columns[c.name].buffer, columns[c.name].byteOffset, c.bytes), c.offset);
  return out;
}

function dtypeOf(a: ColumnArray): DtypeName {
  for (const [name, T] of Object.entries(DTYPES)) if (a instanceof T) return name as DtypeName;
  throw new FrameError("unknown typed array");
}
