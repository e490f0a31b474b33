// The colour column and scale the viewer starts with on a dataset it knows nothing about,
// from the species' columns as the server describes them (name, dtype, unit, min, max):
// what a user would pick first, and a log scale when the column spans many decades.
//
// The column, in this order of kinds (the first column of the first kind present that
// varies, in the species' column order):
//   density  — a name like rho, density, dens, n, ne, ni, n_e (also inside a longer name:
//              gas_density, rho_dm, Density), or a unit of a density (per volume: cm^-3,
//              g/cm^3, kg m^-3, an openPMD unit of dimension L^-3);
//   energy   — a name like energy, E, ekin, eint, gamma, temperature (InternalEnergy,
//              kinetic_energy), or a unit of an energy (eV, keV, erg, J; openPMD L^2 M T^-2);
//   other    — any column that is not a position, an id or a velocity/momentum (floats
//              before integers, which are mostly labels and flags);
//   velocity — vx, ux, px, v_x, velocity_x, momentum_x, or a unit of a velocity or momentum;
//   position — z (a height gradient, the most a picture of positions alone can show) or the
//              last position column.
// Id-like columns (id, ids, pid, particle_id, ParticleIDs, tag ...) never colour by default.
// A column that does not vary (min = max, or no finite values) is taken only when no column
// varies.
//
// The scale: log when the column is positive (min > 0) and max / min > LOG_RATIO (more
// than three decades), from the min and max the server's species description gives.

/** What the choice reads of a column (the server's species description has these). */
export interface ColumnStats {
  name: string;
  dtype?: string;
  unit?: string;
  min: number | null;
  max: number | null;
}

export type ColumnKind = "density" | "energy" | "other" | "velocity" | "position" | "id";

export interface ColorChoice {
  /** undefined: the species has no column to colour by */
  column: string | undefined;
  log: boolean;
  /** why the column: its kind */
  kind: ColumnKind | undefined;
}

/** A positive column whose max / min exceeds this (three decades) is coloured on a log scale. */
export const LOG_RATIO = 1e3;

/** The kinds, in the order the choice prefers them (id never). */
export const KIND_ORDER: readonly ColumnKind[] = ["density", "energy", "other", "velocity", "position"];

const AXIS = "(?:x|y|z|r|[123])";
const POSITION_TOKENS = new Set(["pos", "position", "positions", "coord", "coords", "coordinate", "coordinates"]);
const ID_TOKENS = new Set(["id", "ids", "pid", "pids", "gid", "uid", "tid", "idx", "tag", "tags", "index"]);
const VELOCITY_TOKENS = new Set(["vel", "velocity", "velocities", "mom", "momentum", "momenta"]);
const DENSITY_TOKENS = new Set(["rho", "dens", "density", "densities", "numdens"]);
/** whole names of densities (number densities of a species, n_e, ni ...) */
const DENSITY_NAMES = /^(n|n_?[eihdbp]|n_?(el|ion|gas|dm|tot|h2?|hi|hii|e-))$/;
const ENERGY_TOKENS = new Set(["e", "en", "ek", "ekin", "eint", "ke", "gamma", "lorentz", "temp", "temperature"]);

/** The words of a name: split at anything not a letter or digit, and where lower case meets upper case (ParticleIDs: particle, ids). */
export function nameTokens(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((t) => t !== "");
}

/** The powers of L, M, T, ... of an openPMD unit (JSON text with unitDimension), else null. */
function dimension(unit: string): number[] | null {
  if (!unit.trimStart().startsWith("{")) return null;
  try {
    const d = JSON.parse(unit) as { unitDimension?: unknown };
    const dims = d.unitDimension;
    return Array.isArray(dims) && dims.length === 7 && dims.every((v) => typeof v === "number") ? (dims as number[]) : null;
  } catch {
    return null;
  }
}

const same = (a: readonly number[], b: readonly number[]) => a.every((v, i) => v === b[i]);
const LENGTH = "(?:[kmgµu]?m|cm|cc|km|au|a?pc|[kmg]pc|ly|r_?sun|mpc/h|kpc/h)";

/** The kind of a column that its unit tells, if any. */
export function unitKind(unit: string | undefined): ColumnKind | null {
  if (!unit) return null;
  const dims = dimension(unit);
  if (dims) {
    if (dims[0] === -3) return "density"; // per volume: a number or a mass density
    if (same(dims, [2, 1, -2, 0, 0, 0, 0])) return "energy";
    if (same(dims, [1, 0, -1, 0, 0, 0, 0]) || same(dims, [1, 1, -1, 0, 0, 0, 0])) return "velocity";
    if (same(dims, [1, 0, 0, 0, 0, 0, 0])) return "position";
    return null;
  }
  const u = unit.toLowerCase().replace(/\s+/g, " ").trim();
  const compact = u.replace(/[\s()]/g, "");
  // per volume: "cm^-3", "m**-3", "kg m^-3", "g/cm^3", "1/cc", "Msun/kpc^3", "h^2 Msun/Mpc^3"
  if (new RegExp(`${LENGTH}(\\^|\\*\\*)?-3$`).test(compact) || new RegExp(`/[a-z0-9_/]*${LENGTH}(\\^|\\*\\*)?3$`).test(compact) || /\/cc$/.test(compact)) {
    return "density";
  }
  if (/^[kmgtµu]?ev$|^erg$|^[km]?j$|^joules?$/.test(compact)) return "energy";
  return null;
}

function isInteger(dtype: string | undefined): boolean {
  return !!dtype && /^u?int|^[iu]\d|^bool/.test(dtype);
}

/** What a column holds, from its name and unit. */
export function columnKind(c: ColumnStats): ColumnKind {
  const name = c.name.toLowerCase();
  const tokens = nameTokens(c.name);
  const head = tokens[0] ?? "";
  // ids first: "particle_id" is no density however it is spelt; the joined spellings too (particleid, haloids)
  if (tokens.some((t) => ID_TOKENS.has(t)) || /^(particle|tracer|halo|group|parent|global|local|cell|star|gas|dm)_?ids?$/.test(name)) return "id";
  if (/^[xyz]$/.test(name) || POSITION_TOKENS.has(head) || /^positionoffset/.test(name) || new RegExp(`^${AXIS}_?(pos|coord)$`).test(name)) return "position";
  if (new RegExp(`^[vup]_?${AXIS}$`).test(name) || VELOCITY_TOKENS.has(head) || /^(ppar|pperp|vpar|vperp|upar|uperp)$/.test(name)) return "velocity";
  if (tokens.some((t) => DENSITY_TOKENS.has(t)) || DENSITY_NAMES.test(name)) return "density";
  if (tokens.some((t) => ENERGY_TOKENS.has(t) || t.endsWith("energy"))) return "energy";
  return unitKind(c.unit) ?? "other";
}

/** A column that varies in the step (two distinct finite values at least). */
function varies(c: ColumnStats): boolean {
  return c.min !== null && c.max !== null && Number.isFinite(c.min) && Number.isFinite(c.max) && c.max > c.min;
}

/** The log scale suits the column: positive, and its max over its min exceeds LOG_RATIO. */
export function suggestLog(c: ColumnStats | undefined): boolean {
  return !!c && c.min !== null && c.max !== null && c.min > 0 && Number.isFinite(c.max) && c.max / c.min > LOG_RATIO;
}

/** The decades a positive column spans (for the panel's note), else null. */
export function decades(c: ColumnStats): number | null {
  return c.min !== null && c.max !== null && c.min > 0 && c.max > c.min ? Math.log10(c.max / c.min) : null;
}

/** The default colour column and scale of a species (see the top of this file). */
export function defaultColor(columns: readonly ColumnStats[]): ColorChoice {
  const kinds = columns.map((c) => columnKind(c));
  const rank = (c: ColumnStats, i: number): number => {
    const k = kinds[i];
    if (k === "id") return Infinity;
    let r = KIND_ORDER.indexOf(k) * 4;
    if (k === "other" && isInteger(c.dtype)) r += 1;
    if (k === "position" && c.name.toLowerCase() !== "z") r += 2; // z first: a height gradient
    if (!varies(c)) r += 2 * KIND_ORDER.length * 4; // a constant only when nothing varies
    return r;
  };
  let best = -1;
  let bestRank = Infinity;
  columns.forEach((c, i) => {
    const r = rank(c, i);
    // ties: the first column in order, except among positions, where the last (z after x and y)
    if (r < bestRank || (r === bestRank && kinds[i] === "position")) {
      best = i;
      bestRank = r;
    }
  });
  if (best < 0) return { column: undefined, log: false, kind: undefined };
  const c = columns[best];
  return { column: c.name, log: suggestLog(c), kind: kinds[best] };
}
