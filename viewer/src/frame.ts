// The binary frame of the points endpoint (docs/http-api.md, "The frame"): its constants,
// dtype names and parser, in this one place. Columns are viewed as typed arrays into the
// frame's buffer, never copied.

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

/** The JSON header of a frame, checked against the buffer (magic, version, bounds, alignment). */
export function parseFrameHeader(buffer: ArrayBuffer): FrameHeader {
  if (buffer.byteLength < FRAME_PREFIX_BYTES) fail(`${buffer.byteLength} bytes, shorter than its prefix`);
  const magic = new TextDecoder("ascii").decode(new Uint8Array(buffer, 0, 8));
  if (magic !== FRAME_MAGIC) fail(`magic ${JSON.stringify(magic)}, expected ${FRAME_MAGIC}`);
  const dv = new DataView(buffer);
  const version = dv.getUint32(8, true);
  if (version !== FRAME_VERSION) fail(`version ${version}; this viewer reads version ${FRAME_VERSION}`);
  const h = dv.getUint32(12, true);
  if (FRAME_PREFIX_BYTES + h > buffer.byteLength) fail(`header of ${h} bytes runs past the end`);
  let header: FrameHeader;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(buffer, FRAME_PREFIX_BYTES, h)));
  } catch (e) {
    fail(`header is not JSON (${(e as Error).message})`);
  }
  checkHeader(header, buffer.byteLength, FRAME_PREFIX_BYTES + h);
  return header;
}

function checkHeader(header: FrameHeader, size: number, dataStart: number): void {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObject(header)) fail("header is not a JSON object");
  if (!Number.isSafeInteger(header.rows) || header.rows < 0) fail(`rows ${JSON.stringify(header.rows)}`);
  if (!Array.isArray(header.columns)) fail("no columns");
  if (!Array.isArray(header.cells)) fail("no cells");
  let cellRows = 0;
  for (const c of header.cells) {
    if (!isObject(c) || !Number.isSafeInteger(c.rows) || (c.rows as number) < 0) fail(`cell ${JSON.stringify(c)}`);
    cellRows += c.rows as number;
  }
  if (cellRows !== header.rows) fail(`cells hold ${cellRows} rows, the frame ${header.rows}`);
  if (typeof header.to !== "number") fail("no 'to'");
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

/** Typed-array views of the columns (no copy). */
export function viewColumns(buffer: ArrayBuffer, header: FrameHeader): Record<string, ColumnArray> {
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
export function encodeFrame(header: Omit<FrameHeader, "columns">, columns: Record<string, ColumnArray>): ArrayBuffer {
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
