// Entry point: the app, its panel, and the fragment's view.

import "./style.css";
import { App } from "./app";
import { bindPanel } from "./ui/panel";
import { byId } from "./ui/dom";

function boot(): void {
  let app: App;
  try {
    app = new App(byId<HTMLCanvasElement>("view"));
  } catch (e) {
    const m = byId("message");
    m.textContent = (e as Error).message;
    m.hidden = false;
    return;
  }
  bindPanel(app);
  window.addEventListener("hashchange", () => void app.followHash());
  void app.start();
}

boot();
