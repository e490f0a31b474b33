// WebGL2 drawing (twgl.js for programs, uniforms and textures): each chunk of points has its
// own buffers (one per column, uploaded straight from the frame's views) and a VAO binding
// x, y, z, the colour column and up to MAX_GPU_FILTERS filter columns. Points outside a
// filter's range are dropped in the vertex shader, so narrowing a range needs no request.

import * as twgl from "twgl.js";
import { COLORMAP_SIZE } from "./colormap";

export const MAX_GPU_FILTERS = 4;
const F32_MAX = 3.4e38;

const VS = `#version 300 es
layout(location = 0) in float a_x;
layout(location = 1) in float a_y;
layout(location = 2) in float a_z;
layout(location = 3) in float a_c;
layout(location = 4) in float a_f0;
layout(location = 5) in float a_f1;
layout(location = 6) in float a_f2;
layout(location = 7) in float a_f3;
uniform mat4 u_mvp;
uniform vec2 u_crange;
uniform float u_coff;
uniform float u_log;
uniform float u_size;
uniform vec4 u_lo;
uniform vec4 u_hi;
out float v_t;
void main() {
  vec4 f = vec4(a_f0, a_f1, a_f2, a_f3);
  if (any(lessThan(f, u_lo)) || any(greaterThan(f, u_hi))) {
    gl_Position = vec4(2.0, 2.0, 2.0, 1.0);  // outside the clip volume: not drawn
    gl_PointSize = 1.0;
    v_t = 0.0;
    return;
  }
  gl_Position = u_mvp * vec4(a_x, a_y, a_z, 1.0);
  gl_PointSize = u_size;
  if (u_log > 0.5) {
    // u_crange holds the logs of the ends; values <= 0 (and NaN) take the low end's colour
    float v = a_c + u_coff;
    v_t = v > 0.0 ? (log(v) - u_crange.x) / (u_crange.y - u_crange.x) : 0.0;
  } else {
    v_t = (a_c - u_crange.x) / (u_crange.y - u_crange.x);
  }
}`;

const FS = `#version 300 es
precision highp float;
uniform sampler2D u_cmap;
uniform float u_round;
in float v_t;
out vec4 o_color;
void main() {
  if (u_round > 0.5) {
    vec2 d = gl_PointCoord - 0.5;
    if (dot(d, d) > 0.25) discard;
  }
  // t in [0, 1] onto the centres of the first and last texels
  float t = clamp(v_t, 0.0, 1.0) * ${(COLORMAP_SIZE - 1).toFixed(1)} / ${COLORMAP_SIZE.toFixed(1)} + ${(0.5 / COLORMAP_SIZE).toString()};
  o_color = texture(u_cmap, vec2(t, 0.5));
}`;

// The field slice: a quad textured with the plane's samples (R32F, one texel per sample,
// nearest), coloured through its own colour map; NaN samples are not drawn.
const SLICE_VS = `#version 300 es
layout(location = 0) in vec3 a_pos;
layout(location = 1) in vec2 a_uv;
uniform mat4 u_mvp;
out vec2 v_uv;
void main() {
  gl_Position = u_mvp * vec4(a_pos, 1.0);
  v_uv = a_uv;
}`;

const SLICE_FS = `#version 300 es
precision highp float;
uniform highp sampler2D u_values;
uniform sampler2D u_cmap;
uniform vec2 u_crange;
in vec2 v_uv;
out vec4 o_color;
void main() {
  float v = texture(u_values, v_uv).r;
  if (isnan(v)) discard;
  float t = clamp((v - u_crange.x) / (u_crange.y - u_crange.x), 0.0, 1.0) * ${(COLORMAP_SIZE - 1).toFixed(1)} / ${COLORMAP_SIZE.toFixed(1)} + ${(0.5 / COLORMAP_SIZE).toString()};
  o_color = texture(u_cmap, vec2(t, 0.5));
}`;

/** The slice as drawn: corners relative to the frame's origin, its colour range. */
export interface SliceDraw {
  /** 4 corners × xyz: (u0, v0), (u1, v0), (u0, v1), (u1, v1), minus the origin */
  corners: Float32Array;
  colorRange: [number, number];
}

export interface GpuChunk {
  count: number;
  buffers: Map<string, WebGLBuffer>;
  vao: WebGLVertexArrayObject | null;
  vaoKey: string;
}

export interface DrawParams {
  /** projection × view × translate(origin): positions are relative to the frame's origin */
  mvp: Float32Array;
  color: string | null;
  /** the colour scale (colorrange.ts, shaderScale): the range in the colour column's values as stored in the chunks (on a log scale, the logs of the values), their offset there */
  colorScale: { range: [number, number]; offset: number; log: boolean };
  /** ranges on columns, in the values as stored in the chunks */
  filters: { column: string; lo: number; hi: number }[];
  pointSize: number;
  background: [number, number, number];
  slice?: SliceDraw | null;
}

export class Renderer {
  readonly gl: WebGL2RenderingContext;
  private readonly program: twgl.ProgramInfo;
  private cmap: WebGLTexture | null = null;
  private readonly sliceProgram: twgl.ProgramInfo;
  private sliceCmap: WebGLTexture | null = null;
  private sliceValues: WebGLTexture | null = null;
  private readonly sliceVao: WebGLVertexArrayObject;
  private readonly sliceCorners: WebGLBuffer;

  constructor(readonly canvas: HTMLCanvasElement) {
    const gl = canvas.getContext("webgl2", { antialias: false, alpha: false, depth: true });
    if (!gl) throw new Error("This browser cannot draw with WebGL2, which the viewer needs.");
    this.gl = gl;
    this.program = twgl.createProgramInfo(gl, [VS, FS]);
    this.sliceProgram = twgl.createProgramInfo(gl, [SLICE_VS, SLICE_FS]);
    this.sliceVao = gl.createVertexArray()!;
    gl.bindVertexArray(this.sliceVao);
    this.sliceCorners = twgl.createBufferFromTypedArray(gl, new Float32Array(12), gl.ARRAY_BUFFER, gl.DYNAMIC_DRAW);
    gl.enableVertexAttribArray(0);
    gl.vertexAttribPointer(0, 3, gl.FLOAT, false, 0, 0);
    twgl.createBufferFromTypedArray(gl, new Float32Array([0, 0, 1, 0, 0, 1, 1, 1]), gl.ARRAY_BUFFER, gl.STATIC_DRAW);
    gl.enableVertexAttribArray(1);
    gl.vertexAttribPointer(1, 2, gl.FLOAT, false, 0, 0);
    gl.bindVertexArray(null);
  }

  setColormap(table: Uint8Array): void {
    const gl = this.gl;
    if (this.cmap) gl.deleteTexture(this.cmap);
    this.cmap = this.colormapTexture(table);
  }

  setSliceColormap(table: Uint8Array): void {
    if (this.sliceCmap) this.gl.deleteTexture(this.sliceCmap);
    this.sliceCmap = this.colormapTexture(table);
  }

  /** The slice's samples: width × height float32, u fastest (null: no slice). */
  setSliceValues(values: Float32Array | null, width = 0, height = 0): void {
    const gl = this.gl;
    if (this.sliceValues) gl.deleteTexture(this.sliceValues);
    this.sliceValues = null;
    if (!values) return;
    gl.pixelStorei(gl.UNPACK_ALIGNMENT, 4);
    this.sliceValues = twgl.createTexture(gl, {
      src: values,
      width,
      height,
      format: gl.RED,
      internalFormat: gl.R32F,
      type: gl.FLOAT,
      min: gl.NEAREST,
      mag: gl.NEAREST,
      wrap: gl.CLAMP_TO_EDGE,
      auto: false,
    });
  }

  private colormapTexture(table: Uint8Array): WebGLTexture {
    const gl = this.gl;
    return twgl.createTexture(gl, {
      src: table,
      width: table.length / 4,
      height: 1,
      format: gl.RGBA,
      internalFormat: gl.RGBA8,
      type: gl.UNSIGNED_BYTE,
      min: gl.LINEAR,
      mag: gl.LINEAR,
      wrap: gl.CLAMP_TO_EDGE,
      auto: false,
    });
  }

  /** Buffers for a chunk's float32 columns (views into its frame: uploaded, not copied). */
  upload(columns: Record<string, Float32Array>, count: number): GpuChunk {
    const gl = this.gl;
    const buffers = new Map<string, WebGLBuffer>();
    for (const [name, data] of Object.entries(columns)) {
      buffers.set(name, twgl.createBufferFromTypedArray(gl, data, gl.ARRAY_BUFFER, gl.STATIC_DRAW));
    }
    return { count, buffers, vao: null, vaoKey: "" };
  }

  release(chunk: GpuChunk): void {
    const gl = this.gl;
    if (chunk.vao) gl.deleteVertexArray(chunk.vao);
    for (const b of chunk.buffers.values()) gl.deleteBuffer(b);
    chunk.buffers.clear();
    chunk.vao = null;
  }

  private bind(chunk: GpuChunk, attribs: (string | null)[]): void {
    const gl = this.gl;
    const key = attribs.join("\u0000");
    if (chunk.vao && chunk.vaoKey === key) {
      gl.bindVertexArray(chunk.vao);
      return;
    }
    if (chunk.vao) gl.deleteVertexArray(chunk.vao);
    chunk.vao = gl.createVertexArray();
    chunk.vaoKey = key;
    gl.bindVertexArray(chunk.vao);
    attribs.forEach((name, loc) => {
      const buf = name === null ? undefined : chunk.buffers.get(name);
      if (buf) {
        gl.bindBuffer(gl.ARRAY_BUFFER, buf);
        gl.enableVertexAttribArray(loc);
        gl.vertexAttribPointer(loc, 1, gl.FLOAT, false, 0, 0);
      } else {
        gl.disableVertexAttribArray(loc);
      }
    });
  }

  /** Resizes the drawing buffer to the canvas's CSS size × device pixel ratio. */
  resize(): boolean {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(this.canvas.clientWidth * dpr));
    const h = Math.max(1, Math.round(this.canvas.clientHeight * dpr));
    if (this.canvas.width === w && this.canvas.height === h) return false;
    this.canvas.width = w;
    this.canvas.height = h;
    return true;
  }

  draw(chunks: GpuChunk[], p: DrawParams): void {
    const gl = this.gl;
    gl.viewport(0, 0, gl.drawingBufferWidth, gl.drawingBufferHeight);
    gl.clearColor(p.background[0], p.background[1], p.background[2], 1);
    gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
    gl.enable(gl.DEPTH_TEST);
    gl.depthFunc(gl.LEQUAL);
    gl.useProgram(this.program.program);
    const filters = p.filters.slice(0, MAX_GPU_FILTERS);
    const lo = [-F32_MAX, -F32_MAX, -F32_MAX, -F32_MAX];
    const hi = [F32_MAX, F32_MAX, F32_MAX, F32_MAX];
    filters.forEach((f, i) => {
      lo[i] = f.lo;
      hi[i] = f.hi;
    });
    let [c0, c1] = p.colorScale.range;
    if (!(c1 > c0)) c1 = c0 + Math.max(1e-30, Math.abs(c0) * 1e-6);
    const size = p.pointSize * (window.devicePixelRatio || 1);
    twgl.setUniforms(this.program, {
      u_mvp: p.mvp,
      u_crange: [c0, c1],
      u_coff: p.colorScale.offset,
      u_log: p.colorScale.log ? 1 : 0,
      u_size: size,
      u_lo: lo,
      u_hi: hi,
      u_cmap: this.cmap,
      u_round: size >= 3 ? 1 : 0,
    });
    const attribs = ["x", "y", "z", p.color, ...filters.map((f) => f.column)];
    while (attribs.length < 8) attribs.push(null);
    for (let loc = 3; loc < 8; loc++) gl.vertexAttrib1f(loc, 0.5);
    for (const c of chunks) {
      if (c.count === 0) continue;
      this.bind(c, attribs);
      gl.drawArrays(gl.POINTS, 0, c.count);
    }
    gl.bindVertexArray(null);
    if (p.slice && this.sliceValues && this.sliceCmap) this.drawSlice(p.mvp, p.slice);
  }

  private drawSlice(mvp: Float32Array, s: SliceDraw): void {
    const gl = this.gl;
    let [c0, c1] = s.colorRange;
    if (!(c1 > c0)) c1 = c0 + Math.max(1e-30, Math.abs(c0) * 1e-6);
    gl.useProgram(this.sliceProgram.program);
    twgl.setUniforms(this.sliceProgram, { u_mvp: mvp, u_crange: [c0, c1], u_values: this.sliceValues, u_cmap: this.sliceCmap });
    gl.bindVertexArray(this.sliceVao);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.sliceCorners);
    gl.bufferSubData(gl.ARRAY_BUFFER, 0, s.corners);
    gl.drawArrays(gl.TRIANGLE_STRIP, 0, 4);
    gl.bindVertexArray(null);
  }
}
