// The URL's fragment follows the view: written when a key of the view changes (a camera
// move a moment after the camera stops, so that dragging does not write the history), and
// read back when the user types or pastes another.

import { type AppStore, VIEW_KEYS, viewOf } from "./appstate";
import { decodeView, encodeView, type ViewState } from "./viewstate";

/** ms after the last camera move before the fragment is written */
export const CAMERA_HASH_MS = 300;

export interface HashPlace {
  readonly location: { readonly hash: string };
  readonly history: { replaceState(data: unknown, unused: string, url: string): void };
}

export class HashSync {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private last = "";

  constructor(
    private readonly store: AppStore,
    private readonly place: HashPlace,
  ) {
    store.subscribe(VIEW_KEYS, (changed) => {
      if (this.timer !== null) clearTimeout(this.timer);
      this.timer = null;
      if (changed.size === 1 && changed.has("cam")) this.timer = setTimeout(() => this.write(), CAMERA_HASH_MS);
      else this.write();
    });
  }

  write(): void {
    this.timer = null;
    const hash = encodeView(viewOf(this.store.get()));
    if (hash !== this.place.location.hash) this.place.history.replaceState(null, "", hash);
    this.last = hash;
  }

  /** The view of a fragment typed or pasted; null when the fragment is the one written last. */
  typed(): ViewState | null {
    const hash = this.place.location.hash;
    return hash === this.last ? null : decodeView(hash);
  }
}
