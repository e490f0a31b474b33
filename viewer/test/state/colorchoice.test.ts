import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ColumnStats, columnKind, decades, defaultColor, KIND_ORDER, LOG_RATIO, nameTokens, suggestLog, unitKind } from "../../src/state/colorchoice";

/** Columns as the server describes them: name [min, max] (default a varying float column). */
function cols(spec: Record<string, [number | null, number | null] | Partial<ColumnStats>>): ColumnStats[] {
  return Object.entries(spec).map(([name, s]) => (Array.isArray(s) ? { name, dtype: "float32", min: s[0], max: s[1] } : { name, dtype: "float32", min: -1, max: 1, ...s }));
}

const POS: Record<"x" | "y" | "z", [number, number]> = { x: [0, 100], y: [0, 100], z: [0, 100] };

describe("defaultColor", () => {
  it("colours a cosmology run by its density, on a log scale when it spans more than three decades", () => {
    const c = cols({ ...POS, vx: [-900, 900], vy: [-900, 900], vz: [-900, 900], rho: [1e-2, 1e4], id: { dtype: "uint64", min: 0, max: 99999 } });
    expect(defaultColor(c)).toEqual({ column: "rho", log: true, kind: "density" });
  });

  it("keeps a linear scale for a density of a narrow spread, or one with zeros", () => {
    expect(defaultColor(cols({ ...POS, vx: [-1, 1], rho: [1, 500] }))).toEqual({ column: "rho", log: false, kind: "density" });
    expect(defaultColor(cols({ ...POS, vx: [-1, 1], rho: [0, 1e6] }))).toEqual({ column: "rho", log: false, kind: "density" });
  });

  it("colours a VPIC-like plasma by its energy", () => {
    const vpic = cols({ ...POS, ux: [-3, 3], uy: [-3, 3], uz: [-3, 3], energy: [0, 12], q: [-1, 1] });
    expect(defaultColor(vpic)).toEqual({ column: "energy", log: false, kind: "energy" });
    const named = cols({ ...POS, px: [-3, 3], py: [-3, 3], pz: [-3, 3], w: [0, 1], E: [1e-4, 50] });
    expect(defaultColor(named)).toEqual({ column: "E", log: true, kind: "energy" });
    expect(defaultColor(cols({ ...POS, ux: [-1, 1], gamma: [1, 30] })).column).toBe("gamma");
  });

  it("takes something sane from positions and ids alone: z, never the id", () => {
    const c = cols({ id: { dtype: "uint64", min: 0, max: 9 }, ...POS });
    expect(defaultColor(c)).toEqual({ column: "z", log: false, kind: "position" });
    const openpmd = cols({ particle_id: { dtype: "uint64", min: 0, max: 9 }, position_x: [0, 1], position_y: [0, 1], position_z: [0, 1] });
    expect(defaultColor(openpmd).column).toBe("position_z");
    expect(defaultColor(cols({ ids: { dtype: "int64", min: 0, max: 9 } }))).toEqual({ column: undefined, log: false, kind: undefined });
    expect(defaultColor([])).toEqual({ column: undefined, log: false, kind: undefined });
  });

  it("prefers any other column to a velocity, and a velocity to a position", () => {
    expect(defaultColor(cols({ ...POS, vx: [-1, 1], vy: [-1, 1], mass: [1, 2] })).column).toBe("mass");
    expect(defaultColor(cols({ ...POS, vx: [-1, 1], vy: [-1, 1], pid: { dtype: "int64", min: 0, max: 5 } })).column).toBe("vx");
    // floats before integers (labels, flags)
    expect(defaultColor(cols({ ...POS, jet: { dtype: "int8", min: -1, max: 2 }, smoothing_length: [0.1, 2] })).column).toBe("smoothing_length");
  });

  it("passes over a column that does not vary", () => {
    expect(defaultColor(cols({ ...POS, vx: [-1, 1], rho: [3, 3], energy: [0, 1] })).column).toBe("energy");
    expect(defaultColor(cols({ ...POS, vx: [-1, 1], mass: [1, 1] })).column).toBe("vx"); // a dark-matter run's equal masses
    expect(defaultColor(cols({ ...POS, rho: [null, null], vx: [-1, 1] })).column).toBe("vx"); // all NaN
    expect(defaultColor(cols({ x: [0, 0], y: [0, 0], z: [0, 0], rho: [2, 2] })).column).toBe("rho"); // nothing varies
  });

  it("reads Gadget's and openPMD's names", () => {
    const gadget = cols({ ...POS, ParticleIDs: { dtype: "uint64", min: 1, max: 9 }, Masses: [1, 2], Density: [1e-8, 1e-1], InternalEnergy: [10, 1e6] });
    expect(defaultColor(gadget)).toEqual({ column: "Density", log: true, kind: "density" });
    const si = (dims: number[]) => JSON.stringify({ unitSI: 1, unitDimension: dims });
    const openpmd = cols({
      ...POS,
      momentum_x: { unit: si([1, 1, -1, 0, 0, 0, 0]) },
      weighting: { min: 1, max: 1 },
      id: { dtype: "uint64", min: 0, max: 9 },
      charge: { min: -1, max: -1 },
      q_dens: { unit: si([-3, 0, 1, 1, 0, 0, 0]), min: -5, max: 0 },
    });
    expect(defaultColor(openpmd)).toEqual({ column: "q_dens", log: false, kind: "density" });
  });

  it("knows a density by its unit", () => {
    expect(defaultColor(cols({ ...POS, energy: [0, 1], q: { unit: "cm^-3", min: 1, max: 1e5 } }))).toEqual({ column: "q", log: true, kind: "density" });
    expect(defaultColor(cols({ ...POS, w: [0, 1], f: { unit: JSON.stringify({ unitSI: 1, unitDimension: [2, 1, -2, 0, 0, 0, 0] }), min: 0, max: 1 } })).column).toBe("f");
  });

  it("never picks an id or a position while another column varies, and always picks a column given", () => {
    const names = ["x", "y", "z", "id", "pid", "particle_id", "ParticleIDs", "position_x", "vx", "ux", "momentum_y", "rho", "n_e", "energy", "E", "mass", "w", "tag", "jet"];
    const column = fc.record({ name: fc.constantFrom(...names), lo: fc.double({ min: -1e6, max: 1e6, noNaN: true }), span: fc.double({ min: 0, max: 1e6, noNaN: true }) });
    fc.assert(
      fc.property(fc.uniqueArray(column, { selector: (c) => c.name, maxLength: names.length }), (spec) => {
        const c: ColumnStats[] = spec.map((s) => ({ name: s.name, dtype: "float64", min: s.lo, max: s.lo + s.span }));
        const choice = defaultColor(c);
        const kinds = c.map(columnKind);
        const usable = c.filter((_, i) => kinds[i] !== "id");
        if (usable.length === 0) {
          expect(choice.column).toBeUndefined();
          return;
        }
        const picked = c.find((x) => x.name === choice.column)!;
        expect(picked).toBeDefined();
        expect(columnKind(picked)).not.toBe("id");
        expect(choice.kind).toBe(columnKind(picked));
        expect(choice.log).toBe(suggestLog(picked));
        // no varying column of a preferred kind was passed over
        const varying = (x: ColumnStats) => x.max! > x.min!;
        const better = usable.filter((x) => varying(x) && KIND_ORDER.indexOf(columnKind(x)) < KIND_ORDER.indexOf(choice.kind!));
        expect(better).toEqual([]);
        if (usable.some(varying)) expect(varying(picked)).toBe(true);
      }),
    );
  });
});

describe("suggestLog", () => {
  it("is on for a positive column over more than three decades", () => {
    expect(suggestLog({ name: "rho", min: 1e-2, max: 1e4 })).toBe(true);
    expect(suggestLog({ name: "rho", min: 1, max: LOG_RATIO })).toBe(false); // exactly three decades
    expect(suggestLog({ name: "rho", min: 1, max: LOG_RATIO * 1.001 })).toBe(true);
    expect(suggestLog({ name: "rho", min: 0, max: 1e9 })).toBe(false);
    expect(suggestLog({ name: "vx", min: -1e-3, max: 1e6 })).toBe(false);
    expect(suggestLog({ name: "rho", min: null, max: null })).toBe(false);
    expect(suggestLog(undefined)).toBe(false);
    expect(decades({ name: "rho", min: 1e-2, max: 1e4 })).toBeCloseTo(6);
    expect(decades({ name: "vx", min: -1, max: 1 })).toBeNull();
  });
});

describe("columnKind", () => {
  const kind = (name: string, unit?: string) => columnKind({ name, unit, min: 0, max: 1 });
  it.each([
    ["x", "position"], ["Z", "position"], ["position_x", "position"], ["positionOffset_y", "position"], ["pos", "position"], ["Coordinates", "position"], ["xpos", "position"],
    ["id", "id"], ["ids", "id"], ["ID", "id"], ["pid", "id"], ["particle_id", "id"], ["particleid", "id"], ["ParticleIDs", "id"], ["tracer_ids", "id"], ["halo_index", "id"],
    ["vx", "velocity"], ["v_x", "velocity"], ["uz", "velocity"], ["px", "velocity"], ["velocity_x", "velocity"], ["momentum_z", "velocity"], ["Velocities", "velocity"],
    ["rho", "density"], ["RHO", "density"], ["density", "density"], ["Density", "density"], ["gas_density", "density"], ["rho_dm", "density"], ["dens", "density"],
    ["n", "density"], ["ne", "density"], ["ni", "density"], ["n_e", "density"], ["n_i", "density"], ["nH", "density"],
    ["energy", "energy"], ["E", "energy"], ["ekin", "energy"], ["kinetic_energy", "energy"], ["InternalEnergy", "energy"], ["gamma", "energy"], ["temperature", "energy"],
    ["mass", "other"], ["w", "other"], ["q", "other"], ["weighting", "other"], ["jet", "other"], ["u", "other"], ["fluid", "other"], ["time", "other"],
  ])("%s is a %s column", (name, want) => expect(kind(name)).toBe(want));

  it("takes the unit when the name tells nothing", () => {
    expect(kind("f", "g/cm^3")).toBe("density");
    expect(kind("f", "1/cc")).toBe("density");
    expect(kind("f", "kg m^-3")).toBe("density");
    expect(kind("f", "Msun/kpc^3")).toBe("density");
    expect(kind("f", "keV")).toBe("energy");
    expect(kind("vx", "cm^-3")).toBe("velocity"); // the name first
  });

  it("splits names into words", () => {
    expect(nameTokens("ParticleIDs")).toEqual(["particle", "ids"]);
    expect(nameTokens("positionOffset_x")).toEqual(["position", "offset", "x"]);
    expect(nameTokens("n_e")).toEqual(["n", "e"]);
  });
});

describe("unitKind", () => {
  const json = (dims: number[]) => JSON.stringify({ unitSI: 1e6, unitDimension: dims });
  it.each([
    ["cm^-3", "density"], ["cm**-3", "density"], ["cm-3", "density"], ["m^-3", "density"], ["g/cm^3", "density"], ["kg/m3", "density"], ["h^2 Msun/Mpc^3", "density"],
    ["(Msun/h)/(kpc/h)^3", "density"], ["1/cc", "density"], [json([-3, 0, 0, 0, 0, 0, 0]), "density"], [json([-3, 1, 0, 0, 0, 0, 0]), "density"],
    ["eV", "energy"], ["keV", "energy"], ["MeV", "energy"], ["erg", "energy"], ["J", "energy"], [json([2, 1, -2, 0, 0, 0, 0]), "energy"],
    [json([1, 0, -1, 0, 0, 0, 0]), "velocity"], [json([1, 1, -1, 0, 0, 0, 0]), "velocity"], [json([1, 0, 0, 0, 0, 0, 0]), "position"],
  ])("%s: %s", (unit, want) => expect(unitKind(unit)).toBe(want));

  it.each(["", "c", "m", "m/s", "m/s^3", "m^3", "s^-3", "d_i", "{not json", json([0, 0, 1, 0, 0, 0, 0])])("%s: nothing", (unit) => expect(unitKind(unit)).toBeNull());
});
