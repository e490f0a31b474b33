import { describe, expect, it } from "vitest";
import { encodeFrame, FRAME_ALIGN, FrameError, parseFrame } from "../../src/data/frame";

const header = { rows: 3, to: 0.5, cells: [{ rows: 1 }, { rows: 2 }], origin: [1, 2, 3] as [number, number, number], query_ms: 1.5 };

describe("frame", () => {
  it("views every column in place, 8-byte aligned", () => {
    const x = new Float32Array([1, 2, 3]);
    const id = new BigUint64Array([7n, 8n, 9n]);
    const q = new Int8Array([-1, 0, 1]);
    const buf = encodeFrame(header, { x, id, q });
    const f = parseFrame(buf);
    expect(f.header.rows).toBe(3);
    expect(f.header.cells.map((c) => c.rows)).toEqual([1, 2]);
    expect(Array.from(f.columns.x as Float32Array)).toEqual([1, 2, 3]);
    expect(Array.from(f.columns.id as BigUint64Array)).toEqual([7n, 8n, 9n]);
    expect(Array.from(f.columns.q as Int8Array)).toEqual([-1, 0, 1]);
    for (const c of f.header.columns) expect(c.offset % FRAME_ALIGN).toBe(0);
    expect(f.columns.x.buffer).toBe(buf); // a view, not a copy
  });

  it("reads an empty frame", () => {
    const f = parseFrame(encodeFrame({ ...header, rows: 0, cells: [{ rows: 0 }] }, { x: new Float32Array(0) }));
    expect(f.columns.x.length).toBe(0);
  });

  it("refuses damaged frames", () => {
    const good = encodeFrame(header, { x: new Float32Array([1, 2, 3]) });
    const bad = (mutate: (b: Uint8Array) => void, size = good.byteLength) => {
      const b = new Uint8Array(good.slice(0, size));
      mutate(b);
      return () => parseFrame(b.buffer);
    };
    expect(bad(() => {}, 10)).toThrow(FrameError);
    expect(bad((b) => (b[0] = 0x58))).toThrow(/magic/);
    expect(bad((b) => (b[8] = 2))).toThrow(/version/);
    expect(bad((b) => new DataView(b.buffer).setUint32(12, 1 << 30, true))).toThrow(/past the end/);
    expect(bad(() => {}, good.byteLength - 8)).toThrow(/outside/);
  });

  it("checks that cells add up to the rows", () => {
    const buf = encodeFrame({ ...header, cells: [{ rows: 1 }] }, { x: new Float32Array([1, 2, 3]) });
    expect(() => parseFrame(buf)).toThrow(/cells hold 1 rows/);
  });
});
