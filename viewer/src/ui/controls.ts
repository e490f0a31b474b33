// Mouse, touch and keyboard for the orbit camera: left drag orbits, right (or shift) drag
// pans, the wheel zooms; one finger orbits, two pinch and pan. Keys: arrows orbit (shift:
// pan), + and - zoom, r resets the view, [ and ] change the point size, b the background.

import type { Camera } from "../render/camera";

export interface ControlHandlers {
  /** the camera moved (by the user) */
  moved(): void;
  reset(): void;
  pointSize(delta: number): void;
  toggleBackground(): void;
}

export function attachControls(canvas: HTMLCanvasElement, camera: Camera, on: ControlHandlers): void {
  const pointers = new Map<number, { x: number; y: number }>();
  let panMode = false;

  canvas.addEventListener("contextmenu", (e) => e.preventDefault());
  canvas.addEventListener("pointerdown", (e) => {
    canvas.setPointerCapture(e.pointerId);
    pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
    panMode = e.button === 2 || e.button === 1 || e.shiftKey || e.ctrlKey;
  });
  const up = (e: PointerEvent) => {
    pointers.delete(e.pointerId);
  };
  canvas.addEventListener("pointerup", up);
  canvas.addEventListener("pointercancel", up);
  canvas.addEventListener("pointermove", (e) => {
    const p = pointers.get(e.pointerId);
    if (!p) return;
    if (pointers.size === 1) {
      const dx = e.clientX - p.x;
      const dy = e.clientY - p.y;
      if (panMode) camera.pan(dx, dy);
      else camera.orbit(dx, dy);
    } else if (pointers.size === 2) {
      const [a, b] = [...pointers.entries()];
      const other = a[0] === e.pointerId ? b[1] : a[1];
      const before = Math.hypot(p.x - other.x, p.y - other.y);
      const after = Math.hypot(e.clientX - other.x, e.clientY - other.y);
      if (after > 0) camera.zoom(before / after);
      camera.pan((e.clientX - p.x) / 2, (e.clientY - p.y) / 2);
    }
    p.x = e.clientX;
    p.y = e.clientY;
    on.moved();
  });
  canvas.addEventListener(
    "wheel",
    (e) => {
      e.preventDefault();
      const lines = e.deltaMode === 1 ? 20 : e.deltaMode === 2 ? 400 : 1;
      camera.zoom(Math.exp(Math.max(-100, Math.min(100, e.deltaY * lines)) * 0.002));
      on.moved();
    },
    { passive: false },
  );

  window.addEventListener("keydown", (e) => {
    const t = e.target as HTMLElement | null;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const step = 20;
    const moves: Record<string, [number, number]> = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
    if (e.key in moves) {
      const [dx, dy] = moves[e.key];
      if (e.shiftKey) camera.pan(dx, dy);
      else camera.orbit(dx, dy);
      on.moved();
    } else if (e.key === "+" || e.key === "=") {
      camera.zoom(1 / 1.2);
      on.moved();
    } else if (e.key === "-" || e.key === "_") {
      camera.zoom(1.2);
      on.moved();
    } else if (e.key === "r" || e.key === "R") on.reset();
    else if (e.key === "[") on.pointSize(-1);
    else if (e.key === "]") on.pointSize(1);
    else if (e.key === "b" || e.key === "B") on.toggleBackground();
    else return;
    e.preventDefault();
  });
}
