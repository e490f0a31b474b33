// The export link (CSV or Parquet through the export endpoint) and the Python line that
// makes the same selection with motes' API.

import type { Box } from "../data/cells";

export interface Selection {
  ds: string;
  step: number;
  species: string;
  where: string;
  box?: Box;
}

function pyString(s: string): string {
  return JSON.stringify(s); // a JSON string is a valid Python string literal
}

export function pythonLine(s: Selection): string {
  const args: string[] = [];
  if (s.where) args.push(`where=${pyString(s.where)}`);
  if (s.box) args.push(`box=(${s.box.map((v) => String(v)).join(", ")})`);
  args.push(`step=${s.step}`, `species=${pyString(s.species)}`);
  return `motes.open(${pyString(s.ds + ".motes")}).query(${args.join(", ")})`;
}
