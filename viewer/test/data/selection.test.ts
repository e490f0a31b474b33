import { describe, expect, it } from "vitest";
import { gpuCanFilter, whereOf } from "../../src/data/selection";

describe("where", () => {
  it("joins the expression and the ranges", () => {
    expect(whereOf("", [])).toBe("");
    expect(whereOf(" ux < 0 ", [{ column: "energy", lo: 1e-7, hi: 2 }])).toBe("(ux < 0) and energy >= 1e-7 and energy <= 2");
  });
});

describe("where alone", () => {
  it("keeps a lone expression as typed", () => {
    expect(whereOf("ux < 0", [])).toBe("ux < 0");
    expect(whereOf("", [{ column: "w", lo: 0, hi: 1 }])).toBe("w >= 0 and w <= 1");
  });
});

describe("what the GPU can filter", () => {
  const cols = ["x", "y", "z", "w", "v"];
  const w = (lo: number, hi: number) => ({ column: "w", lo, hi });
  it("narrowing a loaded column: yes; widening, removing, or a column not loaded: no", () => {
    expect(gpuCanFilter([w(0.2, 0.5)], [], cols)).toBe(true);
    expect(gpuCanFilter([w(0.2, 0.5)], [w(0, 1)], cols)).toBe(true);
    expect(gpuCanFilter([w(0, 1)], [w(0.2, 0.5)], cols)).toBe(false);
    expect(gpuCanFilter([], [w(0.2, 0.5)], cols)).toBe(false);
    expect(gpuCanFilter([{ column: "energy", lo: 0, hi: 1 }], [], cols)).toBe(false);
  });
});
