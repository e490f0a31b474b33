import { describe, expect, it } from "vitest";
import { decodeView, DEFAULT_VIEW, encodeView } from "../../src/state/viewstate";

describe("view in the fragment", () => {
  it("round-trips", () => {
    const v = {
      ...DEFAULT_VIEW,
      ds: "run",
      step: 3,
      species: "ions",
      color: "ux",
      map: "magma",
      range: [-0.5, 0.25] as [number, number],
      log: true,
      filters: [{ column: "energy", lo: 0.5, hi: 2 }, { column: "ux", lo: -1e-3, hi: 0.1 }],
      where: "q < 0 and (x > 5)",
      cam: { target: [1, 2, 3] as [number, number, number], distance: 40, yaw: -15, pitch: 10 },
      size: 3,
      bg: "light" as const,
      budget: 1_000_000,
      first: 5000,
      hist: ["ux", "uy"] as [string, string],
      follow: true,
    };
    expect(encodeView(v)).toContain("follow=1");
    expect(decodeView(encodeView(v))).toEqual(v);
    expect(encodeView({ ...v, follow: false })).not.toContain("follow");
  });

  it("takes defaults for what is missing or wrong", () => {
    const v = decodeView("#map=nope&size=-1&cam=1,2&step=x&filter=bad");
    expect(v.map).toBe(DEFAULT_VIEW.map);
    expect(v.size).toBe(DEFAULT_VIEW.size);
    expect(v.cam).toBeUndefined();
    expect(v.step).toBeUndefined();
    expect(v.filters).toEqual([]);
  });

  it("keeps the field slice", () => {
    const v = { ...DEFAULT_VIEW, filters: [], ds: "run", slice: { field: "E", component: "x", axis: "y" as const, pos: 12.5, map: "magma" } };
    const hash = encodeView(v);
    expect(hash).toContain("slice=E&scomp=x&saxis=y&spos=12.5&smap=magma");
    expect(decodeView(hash)).toEqual(v);
    const plain = decodeView("#slice=rho");
    expect(plain.slice).toEqual({ field: "rho", axis: "z", map: DEFAULT_VIEW.map });
    expect(decodeView("#slice=rho&saxis=w&spos=nope&smap=nope").slice).toEqual({ field: "rho", axis: "z", map: DEFAULT_VIEW.map });
    expect(decodeView("#ds=run").slice).toBeUndefined();
  });

  it("keeps the colour scale: a range set, or the default; linear, or log", () => {
    // an old link's range is kept as it was written: the same view
    const old = decodeView("#ds=run&step=0&color=energy&range=0.001,2");
    expect(old.range).toEqual([0.001, 2]);
    expect(old.log).toBe(false);
    expect(encodeView(old)).toContain("range=0.001,2");
    expect(encodeView(old)).not.toContain("scale");
    // no range: the default (the percentiles); no step: the last (app.ts)
    const plain = decodeView("#ds=run&color=energy");
    expect(plain.range).toBeUndefined();
    expect(plain.step).toBeUndefined();
    expect(encodeView(plain)).not.toContain("range");
    const log = decodeView("#ds=run&color=energy&scale=log");
    expect(log.log).toBe(true);
    expect(encodeView(log)).toContain("scale=log");
    expect(decodeView("#scale=nope").log).toBe(false);
  });

  it("keeps the pitch within the poles", () => {
    expect(decodeView("#cam=0,0,0,5,30,90").cam?.pitch).toBe(90);
    expect(decodeView("#cam=0,0,0,5,30,-120").cam?.pitch).toBe(-90);
    expect(decodeView("#cam=0,0,0,5,30,45").cam?.pitch).toBe(45);
  });
});
