// Perceptual colour maps (d3-scale-chromatic) as 256-entry RGBA tables, the lookup texture
// the points are coloured with, and the legend and histograms drawn with the same table.

import { rgb } from "d3-color";
import {
  interpolateCividis,
  interpolateInferno,
  interpolateMagma,
  interpolatePlasma,
  interpolateTurbo,
  interpolateViridis,
} from "d3-scale-chromatic";

export const COLORMAPS: Record<string, (t: number) => string> = {
  viridis: interpolateViridis,
  magma: interpolateMagma,
  inferno: interpolateInferno,
  plasma: interpolatePlasma,
  cividis: interpolateCividis,
  turbo: interpolateTurbo,
};

export const DEFAULT_COLORMAP = "viridis";
export const COLORMAP_SIZE = 256;

const cache = new Map<string, Uint8Array>();

/** The map's 256 colours, RGBA bytes (the 256×1 lookup texture). */
export function colormapTable(name: string): Uint8Array {
  let t = cache.get(name);
  if (!t) {
    const f = COLORMAPS[name] ?? COLORMAPS[DEFAULT_COLORMAP];
    t = new Uint8Array(COLORMAP_SIZE * 4);
    for (let i = 0; i < COLORMAP_SIZE; i++) {
      const c = rgb(f(i / (COLORMAP_SIZE - 1)));
      t.set([Math.round(c.r), Math.round(c.g), Math.round(c.b), 255], 4 * i);
    }
    cache.set(name, t);
  }
  return t;
}

/** The colour of t in [0, 1] (clamped) as [r, g, b] bytes, the texture's nearest entry. */
export function colormapAt(name: string, t: number): [number, number, number] {
  const table = colormapTable(name);
  const i = 4 * Math.round(Math.min(1, Math.max(0, t)) * (COLORMAP_SIZE - 1));
  return [table[i], table[i + 1], table[i + 2]];
}
