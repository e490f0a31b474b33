"""The main job's last step: look at the dataset in the browser viewer. Starts
``motes serve`` on a free port of 127.0.0.1, opens the viewer in headless Chromium
(Debian's, driven by Playwright, drawing with SwiftShader), waits until the whole step
has been refined (the viewer at rest), checks what it shows against the dataset, and
saves a picture.

    python examples/view_job.py [--out out/main] [--dataset PATH] [--png PATH]

(the options of examples/main_job.py are accepted, and only --out is used.)

Then look at it yourself: ``.venv/bin/motes serve out/main/reconnection.motes``.
"""

import argparse
import os
import subprocess
import sys
import time

import motes

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--enable-unsafe-swiftshader", "--use-angle=swiftshader"]


def start_server(path: str):
    proc = subprocess.Popen([sys.executable, "-m", "motes", "serve", f"run={path}", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout:
        if line.startswith("open "):
            return proc, line.split()[1]
    raise SystemExit(f"motes serve did not start (exit {proc.wait()})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="out/main", help="the main job's output folder")
    ap.add_argument("--dataset", default=None, help="default: OUT/reconnection.motes")
    ap.add_argument("--png", default=None, help="picture (default: OUT/viewer.png)")
    ap.add_argument("--budget", type=int, default=1_000_000, help="the viewer's point budget")
    args, _ = ap.parse_known_args()  # main_job.py's options (--n, --seed) too
    args.dataset = args.dataset or os.path.join(args.out, "reconnection.motes")
    png = args.png or os.path.join(args.out, "viewer.png")
    ds = motes.open(args.dataset)
    total = ds.count_total()
    from playwright.sync_api import sync_playwright

    print(f"[view] motes serve {args.dataset}, the viewer in headless Chromium (software GL)")
    proc, url = start_server(args.dataset)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            t0 = time.perf_counter()
            page.goto(f"{url}#ds=run&color=energy&budget={args.budget}&hist=ux,uy")
            page.wait_for_function("() => Number(document.getElementById('status').dataset.drawn || 0) > 0",
                                   timeout=60_000)
            first = time.perf_counter() - t0
            page.wait_for_function("() => { const d = document.getElementById('status').dataset;"
                                   " return d.state === 'ready' && Number(d.drawnAt) > Number(d.loadedAt || 0); }",
                                   timeout=300_000, polling=200)
            st = page.eval_on_selector("#status", "e => ({...e.dataset, text: e.textContent})")
            page.screenshot(path=png)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
    loaded, shown = int(st["loaded"]), int(st["shown"])
    print(f"      first picture after {first:.2f} s; at rest: {st['text'].strip()}")
    ok = (int(st["total"]) == total and 0 < loaded <= args.budget and shown == loaded and not errors
          and st["state"] == "ready")
    print(f"      {loaded:,} of {total:,} particles loaded (budget {args.budget:,}), "
          f"{'OK' if ok else 'UNEXPECTED'} -> {png}")
    if errors:
        print("      page errors: " + "; ".join(errors))
    if not ok:
        raise SystemExit(1)
    print(f"      look at it yourself: .venv/bin/motes serve {args.dataset}")


if __name__ == "__main__":
    main()
