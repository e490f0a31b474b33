import { mat4, vec3, vec4 } from "gl-matrix";
import { describe, expect, it } from "vitest";
import { Camera, type CameraState } from "../../src/render/camera";

/** Where a point lands on the screen, in normalised device coordinates (x right, y up). */
function screen(cam: Camera, p: number[]): [number, number] {
  const v = vec4.transformMat4(vec4.create(), vec4.fromValues(p[0], p[1], p[2], 1), cam.viewProj());
  return [v[0] / v[3], v[1] / v[3]];
}

function camera(state: Partial<CameraState> & { target: [number, number, number] }): Camera {
  const c = new Camera();
  c.width = 800;
  c.height = 600;
  c.radius = 10;
  c.state = { distance: 30, yaw: 0, pitch: 0, ...state };
  return c;
}

/** The screen directions of the data's +x, +y and +z from the target: [dx, dy] each, rounded to the sign. */
function axes(cam: Camera): [number, number][] {
  const t = cam.state.target;
  const o = screen(cam, t);
  return [0, 1, 2].map((a) => {
    const p = [...t];
    p[a] += 1;
    const s = screen(cam, p);
    return [Math.sign(Math.round((s[0] - o[0]) * 1e6)) + 0, Math.sign(Math.round((s[1] - o[1]) * 1e6)) + 0] as [number, number]; // + 0: no -0
  });
}

// The face-on views docs/guide.md (The viewer) and camera.ts list: [yaw, pitch] -> where +x, +y, +z go
// on the screen ([1, 0]: right, [0, 1]: up, [0, 0]: along the view, i.e. the slab's thin axis).
const FACE_ON: [number, number, [number, number][]][] = [
  [0, 0, [[1, 0], [0, 1], [0, 0]]], // x-y plane from +z: x right, y up
  [180, 0, [[-1, 0], [0, 1], [0, 0]]], // from -z
  [-90, 0, [[0, 0], [0, 1], [1, 0]]], // y-z plane from -x: z right, y up
  [90, 0, [[0, 0], [0, 1], [-1, 0]]], // from +x: -z right
  [0, -90, [[1, 0], [0, 0], [0, 1]]], // x-z plane from -y: x right, z up
  [0, 90, [[1, 0], [0, 0], [0, -1]]], // from +y: x right, -z up
];

describe("camera", () => {
  it.each(FACE_ON)("yaw %d, pitch %d looks face-on at a coordinate plane", (yaw, pitch, want) => {
    for (const target of [[0.5, 0.5, 0.5], [3e5, -2e6, 1e6]] as [number, number, number][]) {
      expect(axes(camera({ target, yaw, pitch }))).toEqual(want);
    }
  });

  it("looks straight down y at pitch ±90 far from the origin (was a degenerate matrix)", () => {
    const cam = camera({ target: [1e6, 5e5, 1e6], pitch: 90, distance: 300 });
    const m = cam.viewProj();
    expect([...m].every(Number.isFinite)).toBe(true);
    const [x, z] = [screen(cam, [1e6 + 10, 5e5, 1e6]), screen(cam, [1e6, 5e5, 1e6 + 10])];
    expect(x[0]).toBeGreaterThan(0.01); // +x to the right
    expect(z[1]).toBeLessThan(-0.01); // +z down (seen from +y)
  });

  it("draws what it drew before between the poles (up = +y)", () => {
    for (const [yaw, pitch] of [[30, 20], [-170, 89], [95, -60], [0, 0]]) {
      const cam = camera({ target: [1, 2, 3], yaw, pitch });
      const before = mat4.lookAt(mat4.create(), cam.eye(), vec3.fromValues(1, 2, 3), vec3.fromValues(0, 1, 0));
      const now = mat4.lookAt(mat4.create(), cam.eye(), vec3.fromValues(1, 2, 3), cam.up());
      for (let i = 0; i < 16; i++) expect(now[i]).toBeCloseTo(before[i], 9);
    }
  });

  it("orbits up to the poles, not past them", () => {
    const cam = camera({ target: [0, 0, 0], pitch: 80 });
    cam.orbit(0, 1000);
    expect(cam.state.pitch).toBe(90);
    cam.orbit(0, -5000);
    expect(cam.state.pitch).toBe(-90);
  });
});
