// Small DOM helpers shared by the panels.

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (!e) throw new Error(`the page lacks #${id}`);
  return e as T;
}

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<HTMLElementTagNameMap[K]> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children);
  return e;
}

export function setOptions(select: HTMLSelectElement, values: string[], selected?: string, labels?: string[]): void {
  select.replaceChildren(...values.map((v, i) => el("option", { value: v, textContent: labels?.[i] ?? v, selected: v === selected })));
}

/** 1234567 -> "1,234,567" */
export function count(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

export function bytes(n: number): string {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

/** A number for a label: 4 significant digits, no trailing zeros. */
export function num(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return "–";
  return String(Number(x.toPrecision(4)));
}

/** A canvas's drawing buffer sized to its CSS box (device pixels); its 2-D context. */
export function context2d(canvas: HTMLCanvasElement): CanvasRenderingContext2D {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(1, Math.round(canvas.clientWidth * dpr));
  const h = Math.max(1, Math.round(canvas.clientHeight * dpr));
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
  }
  return canvas.getContext("2d")!;
}
