// Following the newest step (follow=1): each step the server publishes is opened as it
// comes, through the long poll of the dataset's updates; `follow` in the store starts and
// stops it.

import { type Api, type DatasetInfo, isAbort } from "../data/api";
import type { AppStore } from "./appstate";

/** seconds the server holds a long poll */
const POLL_WAIT_S = 25;
/** ms before asking again after a failed poll (the server restarting) */
const RETRY_MS = 2000;

export class StepFollower {
  private ctl: AbortController | null = null;

  constructor(
    private readonly store: AppStore,
    private readonly api: Pick<Api, "updates" | "dataset">,
    /** opens a step (of `dataset`, or of the open one) */
    private readonly openStep: (index: number, dataset?: DatasetInfo) => Promise<void>,
  ) {
    store.subscribe(["follow"], (_, s) => this.restart(s.follow));
  }

  /** Stops following; starts again when `on`. */
  restart(on: boolean): void {
    this.ctl?.abort();
    this.ctl = null;
    if (on) void this.run((this.ctl = new AbortController()).signal);
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted && this.store.get().follow) {
      const { ds, dataset, step } = this.store.get();
      if (!ds) return;
      const steps = dataset?.steps ?? [];
      const newest = steps.length ? Math.max(...steps.map((s) => s.index)) : -1;
      try {
        if (newest >= 0 && step !== newest) {
          await this.openStep(newest); // following starts at the newest step
          continue;
        }
        const u = await this.api.updates(ds, newest, POLL_WAIT_S, signal);
        if (signal.aborted) return;
        if (ds !== this.store.get().ds) continue; // another dataset was opened meanwhile: follow it
        if (u.newer) {
          const d = await this.api.dataset(ds);
          this.store.set({ dataset: d });
          await this.openStep(Math.max(...d.steps.map((s) => s.index)), d);
        }
      } catch (e) {
        if (isAbort(e)) return;
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }
}
