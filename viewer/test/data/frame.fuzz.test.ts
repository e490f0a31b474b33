import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeFrame, FrameError, parseFrame } from "../../src/data/frame";

// The frame parser takes any bytes: a frame either parses into columns that lie inside the
// buffer, or is refused with a FrameError (never a TypeError, a RangeError or a hang).
const good = encodeFrame(
  { rows: 3, to: 0.5, cells: [{ rows: 1 }, { rows: 2 }], query_ms: 1 },
  { x: new Float32Array([1, 2, 3]), id: new BigUint64Array([7n, 8n, 9n]), q: new Int8Array([-1, 0, 1]) },
);

function parsesOrRefuses(buffer: ArrayBuffer): void {
  try {
    const f = parseFrame(buffer);
    for (const c of Object.values(f.columns)) {
      expect(c.byteOffset + c.byteLength).toBeLessThanOrEqual(buffer.byteLength);
      expect(c.length).toBe(f.header.rows);
    }
  } catch (e) {
    if (!(e instanceof FrameError)) throw e;
  }
}

/** A frame whose header is any JSON value: the prefix is right, the JSON is not. */
function withHeader(json: string): ArrayBuffer {
  const text = new TextEncoder().encode(json);
  const out = new Uint8Array(16 + text.length + 64);
  out.set(new Uint8Array(good, 0, 12));
  new DataView(out.buffer).setUint32(12, text.length, true);
  out.set(text, 16);
  return out.buffer;
}

describe("frame parser (fuzz)", () => {
  it("takes damaged frames: bytes changed, cut or added", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(good.byteLength - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
        fc.nat(good.byteLength + 16),
        (edits, size) => {
          const b = new Uint8Array(size);
          b.set(new Uint8Array(good).subarray(0, Math.min(size, good.byteLength)));
          for (const [at, v] of edits) if (at < size) b[at] = v;
          parsesOrRefuses(b.buffer);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("takes any JSON as the header", () => {
    const column = fc.record(
      { name: fc.string(), dtype: fc.constantFrom("f32", "f64", "u64", "i8", "x", 3, null), offset: fc.jsonValue(), bytes: fc.jsonValue() },
      { requiredKeys: [] },
    );
    const header = fc.record(
      {
        rows: fc.oneof(fc.integer({ min: -2, max: 8 }), fc.jsonValue()),
        to: fc.oneof(fc.double(), fc.jsonValue()),
        cells: fc.oneof(fc.array(fc.oneof(fc.record({ rows: fc.jsonValue() }), fc.jsonValue())), fc.jsonValue()),
        columns: fc.oneof(fc.array(fc.oneof(column, fc.jsonValue())), fc.jsonValue()),
      },
      { requiredKeys: [] },
    );
    fc.assert(fc.property(fc.oneof(header, fc.jsonValue()), (h) => parsesOrRefuses(withHeader(JSON.stringify(h) ?? "null"))), {
      numRuns: 3000,
    });
  });

  it("refuses a header that is not an object", () => {
    for (const h of ["null", "3", "[]", '"frame"']) expect(() => parseFrame(withHeader(h))).toThrow(FrameError);
  });
});
