// A store of typed state that tells its subscribers which keys changed. `set` takes the keys
// of one action at once; a key set to a value equal to its own (structurally: arrays and
// plain objects by their contents) does not change. Each subscriber names the keys it
// depends on and is called once per action with those of them that changed, so that every
// consequence of an action (a new scene, a histogram, the URL) happens once. `batch` makes
// one action of several sets; a set made by a subscriber is told after the round that made it.

export type Changed<S> = ReadonlySet<keyof S>;
export type Listener<S> = (changed: Changed<S>, state: Readonly<S>) => void;
export type Equal = (a: unknown, b: unknown) => boolean;

interface Subscription<S> {
  keys: ReadonlySet<keyof S> | null;
  fn: Listener<S>;
}

/** Equal values: the same, or arrays and plain objects with equal contents. */
export function same(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (Array.isArray(b) || Object.getPrototypeOf(a) !== Object.prototype || Object.getPrototypeOf(b) !== Object.prototype) return false;
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** rounds of subscribers setting keys for one another before the store gives up (a loop) */
const MAX_ROUNDS = 10;

export class Store<S extends object> {
  private state: S;
  private readonly subs: Subscription<S>[] = [];
  private pending = new Set<keyof S>();
  private depth = 0;
  private flushing = false;

  /** `equal` overrides the comparison of some keys (e.g. Object.is: a new object is a change). */
  constructor(
    initial: S,
    private readonly equal: Partial<Record<keyof S, Equal>> = {},
  ) {
    this.state = { ...initial };
  }

  get(): Readonly<S> {
    return this.state;
  }

  /** Sets the keys of `patch`; the subscribers of those that changed are told (at the end of the batch, if in one). */
  set(patch: Partial<S>): void {
    let next: S | null = null;
    for (const k of Object.keys(patch) as (keyof S)[]) {
      const v = patch[k] as S[keyof S];
      if ((this.equal[k] ?? same)(this.state[k], v)) continue;
      next ??= { ...this.state };
      next[k] = v;
      this.pending.add(k);
    }
    if (next) this.state = next;
    if (this.depth === 0) this.flush();
  }

  /** Runs `fn`; the subscribers are told once, after it, of every key it changed. */
  batch(fn: () => void): void {
    this.depth++;
    try {
      fn();
    } finally {
      this.depth--;
    }
    if (this.depth === 0) this.flush();
  }

  /** Calls `fn` when any of `keys` changes ("*": any key); returns the unsubscribe. */
  subscribe(keys: readonly (keyof S)[] | "*", fn: Listener<S>): () => void {
    const sub: Subscription<S> = { keys: keys === "*" ? null : new Set(keys), fn };
    this.subs.push(sub);
    return () => {
      const i = this.subs.indexOf(sub);
      if (i >= 0) this.subs.splice(i, 1);
    };
  }

  private flush(): void {
    if (this.flushing) return; // the round under way goes on with what was set meanwhile
    this.flushing = true;
    try {
      for (let round = 0; this.pending.size > 0; round++) {
        if (round === MAX_ROUNDS) throw new Error(`the store's subscribers keep changing ${[...this.pending].join(", ")}`);
        const changed = this.pending;
        this.pending = new Set();
        for (const sub of [...this.subs]) {
          const mine = sub.keys ? new Set([...changed].filter((k) => sub.keys!.has(k))) : changed;
          if (mine.size > 0) sub.fn(mine, this.state);
        }
      }
    } finally {
      this.flushing = false;
    }
  }
}
