import { describe, expect, it, vi } from "vitest";
import { createStore, stateOf, VIEW_KEYS, viewOf } from "../../src/state/appstate";
import { CAMERA_HASH_MS, HashSync } from "../../src/state/hash";
import { same, Store } from "../../src/state/store";
import { decodeView, DEFAULT_VIEW, encodeView } from "../../src/state/viewstate";

interface S {
  a: number;
  b: string;
  c: number[];
  d: { x: number; y?: number } | undefined;
}

const initial = (): S => ({ a: 1, b: "b", c: [1, 2], d: { x: 1 } });

describe("Store", () => {
  it("tells each subscriber once, with the keys of its own that changed", () => {
    const store = new Store<S>(initial());
    const ab = vi.fn();
    const c = vi.fn();
    const all = vi.fn();
    store.subscribe(["a", "b"], ab);
    store.subscribe(["c"], c);
    store.subscribe("*", all);
    store.set({ a: 2, b: "x", c: [3] });
    expect(ab).toHaveBeenCalledTimes(1);
    expect([...ab.mock.calls[0][0]].sort()).toEqual(["a", "b"]);
    expect(ab.mock.calls[0][1]).toMatchObject({ a: 2, b: "x", c: [3] });
    expect(c).toHaveBeenCalledTimes(1);
    expect([...c.mock.calls[0][0]]).toEqual(["c"]);
    expect(all).toHaveBeenCalledTimes(1);
    expect([...all.mock.calls[0][0]].sort()).toEqual(["a", "b", "c"]);
  });

  it("says nothing when a value is set to its own (arrays and objects by their contents)", () => {
    const store = new Store<S>(initial());
    const fn = vi.fn();
    store.subscribe("*", fn);
    store.set({ a: 1, b: "b", c: [1, 2], d: { x: 1, y: undefined } });
    expect(fn).not.toHaveBeenCalled();
    store.set({ a: 1, d: { x: 2 } });
    expect(fn).toHaveBeenCalledTimes(1);
    expect([...fn.mock.calls[0][0]]).toEqual(["d"]);
  });

  it("does not tell a subscriber of keys that did not change", () => {
    const store = new Store<S>(initial());
    const fn = vi.fn();
    store.subscribe(["c"], fn);
    store.set({ a: 5 });
    expect(fn).not.toHaveBeenCalled();
  });

  it("tells once at the end of a batch; a set by a subscriber in a round of its own", () => {
    const store = new Store<S>(initial());
    const a = vi.fn();
    store.subscribe(["a"], a);
    store.subscribe(["b"], (_, s) => store.set({ a: s.a + 10 }));
    store.batch(() => {
      store.set({ a: 2 });
      store.set({ a: 3 });
      store.set({ b: "y" });
    });
    expect(a).toHaveBeenCalledTimes(2); // the batch's a (3), then the subscriber's (13)
    expect(a.mock.calls.map((c) => c[1].a)).toEqual([3, 13]);
    expect(store.get().a).toBe(13);
  });

  it("compares a key by its own rule when given one", () => {
    const store = new Store<S>(initial(), { c: Object.is });
    const fn = vi.fn();
    store.subscribe(["c"], fn);
    store.set({ c: [1, 2] }); // a new array: a change
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it("stops when subscribers keep changing one another", () => {
    const store = new Store<S>(initial());
    store.subscribe(["a"], (_, s) => store.set({ a: s.a + 1 }));
    expect(() => store.set({ a: 2 })).toThrow(/keep changing a/);
  });

  it("unsubscribes", () => {
    const store = new Store<S>(initial());
    const fn = vi.fn();
    const off = store.subscribe("*", fn);
    off();
    store.set({ a: 9 });
    expect(fn).not.toHaveBeenCalled();
  });

  it("compares values structurally", () => {
    expect(same([1, [2, { a: 3 }]], [1, [2, { a: 3 }]])).toBe(true);
    expect(same({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(same([1], { 0: 1 })).toBe(false);
    expect(same(new Float32Array([1]), new Float32Array([1]))).toBe(false); // not a plain object
    expect(same(NaN, NaN)).toBe(true);
  });
});

describe("the app's store and the fragment", () => {
  const LINK =
    "#ds=run&step=3&species=electrons&color=energy&map=magma&range=0,2&scale=log&filter=energy:0.5:2&where=ux%20%3C%200" +
    "&cam=100,50,25,300,30,20&size=3&bg=light&budget=1000000&first=100000&hist=ux,uy&follow=1&slice=E&scomp=x&saxis=y&spos=12.5&smap=viridis";

  function place(hash: string) {
    const place = { location: { hash }, history: { replaceState: vi.fn((_d: unknown, _u: string, url: string) => (place.location.hash = url)) } };
    return place;
  }

  it("starts from the fragment and gives it back (round trip)", () => {
    const store = createStore(LINK);
    expect(store.get()).toMatchObject({ ds: "run", step: 3, species: "electrons", log: true, filters: [{ column: "energy", lo: 0.5, hi: 2 }], info: null });
    expect(store.get().serverFilters).toEqual(store.get().filters);
    expect(viewOf(store.get())).toEqual(decodeView(LINK));
    expect(decodeView(encodeView(viewOf(store.get())))).toEqual(decodeView(LINK));
  });

  it("writes the fragment once per change of the view, not for other keys; a camera move a moment later", () => {
    vi.useFakeTimers();
    try {
      const p = place("#ds=run");
      const store = createStore(p.location.hash);
      const sync = new HashSync(store, p);
      store.set({ species: "ions", color: "energy", log: true });
      expect(p.history.replaceState).toHaveBeenCalledTimes(1);
      expect(p.location.hash).toBe("#ds=run&species=ions&color=energy&scale=log");
      store.set({ datasets: ["run"], rangeFound: "k" }); // not in the view
      expect(p.history.replaceState).toHaveBeenCalledTimes(1);
      store.set({ cam: { target: [1, 2, 3], distance: 4, yaw: 5, pitch: 6 } });
      store.set({ cam: { target: [1, 2, 3], distance: 5, yaw: 5, pitch: 6 } });
      expect(p.history.replaceState).toHaveBeenCalledTimes(1);
      vi.advanceTimersByTime(CAMERA_HASH_MS);
      expect(p.history.replaceState).toHaveBeenCalledTimes(2);
      expect(p.location.hash).toContain("cam=1,2,3,5,5,6");
      // the fragment written is not "typed"; another one is, and reads back as the view it names
      expect(sync.typed()).toBeNull();
      p.location.hash = LINK;
      const typed = sync.typed()!;
      expect(typed).toEqual(decodeView(LINK));
      store.set(stateOf(typed));
      expect(decodeView(p.location.hash)).toEqual(decodeView(LINK));
    } finally {
      vi.useRealTimers();
    }
  });

  it("carries every key of the view", () => {
    expect([...VIEW_KEYS].sort()).toEqual(Object.keys({ ...DEFAULT_VIEW, ds: 0, step: 0, species: 0, color: 0, range: 0, cam: 0, hist: 0, slice: 0 }).sort());
  });
});
