// An orbit camera (target, distance, yaw, pitch) in the data's own coordinates, computed in
// double precision; what it sees as a ViewTest for the planner; the matrix the GPU gets for
// positions relative to the frame's origin (float32 stays precise near the data).

import { glMatrix, mat4, vec3, vec4 } from "gl-matrix";
import type { Box } from "../data/cells";
import { type ViewTest, Visibility } from "../data/refine";

glMatrix.setMatrixArrayType(Array); // doubles on the CPU; float32 only for the GPU

// The eye is at target + distance × (cos pitch sin yaw, sin pitch, cos pitch cos yaw), looking
// at the target, the screen's up the way pitch grows (the +y side of the view at pitch 0).
// Face-on views of the coordinate planes (docs/guide.md, "The viewer"):
//   x-y plane (a slab thin in z): yaw 0, pitch 0 (from +z: x right, y up); yaw 180: from -z
//   y-z plane (thin in x): yaw -90, pitch 0 (from -x: z right, y up); yaw 90: from +x, -z right
//   x-z plane (thin in y): pitch -90, yaw 0 (from -y: x right, z up); pitch 90: from +y, -z up
export interface CameraState {
  target: [number, number, number];
  distance: number;
  /** degrees about the y axis, turning the eye from +z towards +x (0: looking down -z, x to the right) */
  yaw: number;
  /** degrees above the x-z plane, within ±90 (90: looking down -y) */
  pitch: number;
}

/** Pitch within ±90 degrees (past a pole the view would turn upside down). */
export function clampPitch(pitch: number): number {
  return Math.max(-90, Math.min(90, pitch));
}

export const DEFAULT_YAW = 30;
export const DEFAULT_PITCH = 20;
const FOV = (45 * Math.PI) / 180;
const DEG = Math.PI / 180;

export class Camera {
  state: CameraState = { target: [0, 0, 0], distance: 1, yaw: DEFAULT_YAW, pitch: DEFAULT_PITCH };
  /** viewport in CSS pixels */
  width = 1;
  height = 1;
  /** radius of the data, for the clipping planes */
  radius = 1;

  /** Looks at the whole box from the default direction. */
  fit(box: Box, yaw = DEFAULT_YAW, pitch = DEFAULT_PITCH): void {
    const c: [number, number, number] = [(box[0] + box[3]) / 2, (box[1] + box[4]) / 2, (box[2] + box[5]) / 2];
    this.radius = Math.max(1e-30, Math.hypot(box[3] - box[0], box[4] - box[1], box[5] - box[2]) / 2);
    const aspect = Math.min(1, this.width / this.height);
    this.state = { target: c, distance: (this.radius / Math.sin(FOV / 2) / aspect) * 1.02, yaw, pitch };
  }

  eye(): vec3 {
    const { target, distance, yaw, pitch } = this.state;
    const cp = Math.cos(pitch * DEG);
    return vec3.fromValues(
      target[0] + distance * cp * Math.sin(yaw * DEG),
      target[1] + distance * Math.sin(pitch * DEG),
      target[2] + distance * cp * Math.cos(yaw * DEG),
    );
  }

  /**
   * The screen's up in the data's coordinates: the way the eye moves as pitch grows. Unlike
   * a fixed +y, it stays defined at pitch ±90, where the view looks along y; there yaw turns
   * the picture about the view's axis.
   */
  up(): vec3 {
    const { yaw, pitch } = this.state;
    const sp = Math.sin(pitch * DEG);
    return vec3.fromValues(-sp * Math.sin(yaw * DEG), Math.cos(pitch * DEG), -sp * Math.cos(yaw * DEG));
  }

  /** projection × view, for points in the data's coordinates */
  viewProj(): mat4 {
    const d = this.state.distance;
    const near = Math.max(d * 1e-3, d - this.radius * 4);
    const far = d + this.radius * 4;
    const proj = mat4.perspective(mat4.create(), FOV, this.width / this.height, Math.min(near, d * 0.5), far);
    const view = mat4.lookAt(mat4.create(), this.eye(), vec3.fromValues(...this.state.target), this.up());
    return mat4.multiply(mat4.create(), proj, view);
  }

  /** projection × view × translate(origin), as float32, for positions relative to origin */
  gpuMatrix(origin: readonly number[]): Float32Array {
    const m = mat4.translate(mat4.create(), this.viewProj(), vec3.fromValues(origin[0], origin[1], origin[2]));
    return new Float32Array(m as number[]);
  }

  orbit(dxPx: number, dyPx: number): void {
    this.state.yaw -= dxPx * 0.3;
    this.state.pitch = clampPitch(this.state.pitch + dyPx * 0.3);
  }

  /** Moves the target with the screen by (dx, dy) CSS pixels. */
  pan(dxPx: number, dyPx: number): void {
    const { yaw, distance } = this.state;
    const perPx = (2 * distance * Math.tan(FOV / 2)) / this.height;
    const right = [Math.cos(yaw * DEG), 0, -Math.sin(yaw * DEG)];
    const up = this.up();
    for (let a = 0; a < 3; a++) this.state.target[a] += (-dxPx * right[a] + dyPx * up[a]) * perPx;
  }

  zoom(factor: number): void {
    this.state.distance = Math.max(this.radius * 1e-6, Math.min(this.radius * 1e3, this.state.distance * factor));
  }

  viewTest(): ViewTest {
    return new FrustumTest(this.viewProj(), this.width, this.height);
  }
}

/** Box tests against the frustum of a projection × view matrix. */
export class FrustumTest implements ViewTest {
  private readonly planes: number[][];

  constructor(
    private readonly m: mat4,
    private readonly width: number,
    private readonly height: number,
  ) {
    // Rows of m (column-major storage): plane i = row3 ± row(i).
    const row = (r: number) => [m[r], m[4 + r], m[8 + r], m[12 + r]];
    const r3 = row(3);
    this.planes = [];
    for (let r = 0; r < 3; r++) {
      const ri = row(r);
      this.planes.push(r3.map((v, k) => v + ri[k]), r3.map((v, k) => v - ri[k]));
    }
  }

  classify(box: Box): Visibility {
    let inside = true;
    for (const p of this.planes) {
      // the corner farthest along the plane's normal, and the nearest
      let far = p[3];
      let near = p[3];
      for (let a = 0; a < 3; a++) {
        const hi = p[a] >= 0 ? box[3 + a] : box[a];
        const lo = p[a] >= 0 ? box[a] : box[3 + a];
        far += p[a] * hi;
        near += p[a] * lo;
      }
      if (far < 0) return Visibility.Out;
      if (near < 0) inside = false;
    }
    return inside ? Visibility.Inside : Visibility.Partial;
  }

  area(box: Box): { visible: number; full: number } {
    let x0 = Infinity;
    let y0 = Infinity;
    let x1 = -Infinity;
    let y1 = -Infinity;
    const v = vec4.create();
    for (let i = 0; i < 8; i++) {
      vec4.transformMat4(v, vec4.fromValues(box[i & 1 ? 3 : 0], box[i & 2 ? 4 : 1], box[i & 4 ? 5 : 2], 1), this.m);
      if (v[3] <= 1e-12) return { visible: this.width * this.height, full: Infinity };
      x0 = Math.min(x0, v[0] / v[3]);
      x1 = Math.max(x1, v[0] / v[3]);
      y0 = Math.min(y0, v[1] / v[3]);
      y1 = Math.max(y1, v[1] / v[3]);
    }
    const px = (this.width / 2) * (this.height / 2);
    const full = (x1 - x0) * (y1 - y0) * px;
    const cw = Math.max(0, Math.min(1, x1) - Math.max(-1, x0));
    const ch = Math.max(0, Math.min(1, y1) - Math.max(-1, y0));
    return { visible: cw * ch * px, full };
  }
}
