"""The viewer in a browser, for bench/serve.py: Debian's Chromium (headless, SwiftShader:
software GL on the CPU, as in the browser tests) driven by Playwright, against a fresh
``motes serve`` of the bench's dataset.

* ``page``: first picture after page load: from navigation start (``performance.now()``
  is 0 there; the HTML, the scripts, the description and the first points requests are
  all inside) until a frame has drawn >= 100,000 particles. A fresh server and a fresh
  browser context each time (nothing cached).
* ``zoom``: after the first picture, the camera is moved (the URL fragment's ``cam``) onto
  a region of the current sheet; from that moment until the viewer has nothing more to ask
  for that view (the status line's state ``ready``) with every cell in view at quality 1
  (full detail); the time the last points arrived and the time of the frame drawing them.
  SwiftShader draws about 0.5 M points/s on these 2 cores, so the drawing time is reported
  apart: a real GPU draws a few million points in a few milliseconds.

The status element (``#status``) carries the figures as data attributes: ``drawn`` and
``drawnAt`` (the last frame), ``loadedAt`` (the last points in), ``loaded``, ``state`` and
``qualityInView`` (the lowest quality of the cells in view).
"""

from __future__ import annotations

import statistics
import time
from typing import Callable, Dict, List, Tuple

from benchlib import figure, log, peer

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--enable-unsafe-swiftshader", "--use-angle=swiftshader",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run"]
VIEWPORT = {"width": 1000, "height": 640}
FIRST_DRAWN = 100_000


def _status(page) -> dict:
    return page.eval_on_selector("#status", "e => ({...e.dataset})")


def _browser():
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    return pw, pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def fig_page(start_server: Callable[[], Tuple[object, str]], stop: Callable, dataset: str, repeat: int) -> dict:
    pw, browser = _browser()
    runs, drawn, requests = [], [], []
    try:
        for _ in range(repeat):
            proc, base = start_server()
            context = browser.new_context(viewport=VIEWPORT)
            page = context.new_page()
            seen: List[str] = []
            page.on("request", lambda r: seen.append(r.url))
            try:
                page.goto(f"{base}/#ds={dataset}", wait_until="commit")
                page.wait_for_function(f"() => Number(document.getElementById('status').dataset.drawn || 0) >= {FIRST_DRAWN}",
                                       timeout=60_000)
                st = _status(page)
                runs.append(float(st["drawnAt"]) / 1e3)
                drawn.append(int(st["drawn"]))
                requests.append(len(seen))
            finally:
                context.close()
                stop(proc)
        timing = {"best": min(runs), "median": statistics.median(runs), "runs": runs}
        log(f"page: first picture of {drawn[0]:,} particles {timing['median'] * 1e3:.0f} ms after navigation")
        return figure("page", "first picture in Chromium (SwiftShader) after page load: navigation start until a "
                      f"frame has drawn >= {FIRST_DRAWN:,} particles; fresh server and browser context each time",
                      timing["median"], "s", timing=timing, target="<= 1 s", met=timing["median"] <= 1.0,
                      drawn=drawn, requests=requests)
    finally:
        browser.close()
        pw.stop()


def _zoom_once(browser, base: str, dataset: str, cam: str) -> Dict[str, object]:
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    urls: List[Tuple[float, str]] = []
    page.on("request", lambda r: urls.append((time.perf_counter(), r.url[len(base):])))
    try:
        page.goto(f"{base}/#ds={dataset}", wait_until="commit")
        page.wait_for_function("() => document.getElementById('status').dataset.state === 'ready'"
                               f" && Number(document.getElementById('status').dataset.drawn || 0) >= {FIRST_DRAWN}",
                               timeout=180_000, polling=100)
        moved = time.perf_counter()
        t0 = page.evaluate(f"() => {{ location.hash = 'ds={dataset}&cam={cam}'; return performance.now(); }}")
        page.wait_for_function(
            "() => { const d = document.getElementById('status').dataset;"
            f" return d.state === 'ready' && Number(d.loadedAt) > {t0} && Number(d.drawnAt) > Number(d.loadedAt); }}",
            timeout=180_000, polling=20)
        st = _status(page)
        return {"data_s": (float(st["loadedAt"]) - t0) / 1e3, "drawn_s": (float(st["drawnAt"]) - t0) / 1e3,
                "loaded": int(st["loaded"]), "quality_in_view": float(st["qualityInView"] or 0),
                "requests": [u for t, u in urls if t >= moved and "/points?" in u]}
    finally:
        context.close()


def _replay(start_server, stop, urls: List[str]) -> Tuple[float, int]:
    """The requests one after the other (as the viewer makes them: each waits for the one
    before), on a fresh server; (seconds, bytes)."""
    import httpx

    proc, base = start_server()
    try:
        with httpx.Client(base_url=base, timeout=120, headers={"Accept-Encoding": "zstd"}) as client:
            t0, got = time.perf_counter(), 0
            for u in urls:
                r = client.get(u)
                r.raise_for_status()
                got += len(r.content)
            return time.perf_counter() - t0, got
    finally:
        stop(proc)


def fig_zoom(start_server: Callable[[], Tuple[object, str]], stop: Callable, dataset: str, cams: Dict[str, str],
             repeat: int) -> dict:
    """``cams``: name -> the URL fragment's camera of a region; the first is the figure's
    value, the others are reported beside it. Each run: the page loads and refines the whole
    step until it rests (state ready), then the camera moves; timed until the viewer has
    nothing more to ask for the new view (view-limited: the cells in view are dense enough
    on screen, or at quality 1) and the last points are in."""
    pw, browser = _browser()
    results: Dict[str, Dict[str, list]] = {}
    try:
        proc, base = start_server()
        try:
            for name, cam in cams.items():
                runs = [_zoom_once(browser, base, dataset, cam) for _ in range(repeat)]
                results[name] = {k: [r[k] for r in runs] for k in runs[0]}
                r = results[name]
                log(f"zoom ({name}): view complete in {statistics.median(r['data_s']) * 1e3:.0f} ms (drawn by "
                    f"SwiftShader at {statistics.median(r['drawn_s']) * 1e3:.0f} ms), {r['loaded'][0]:,} points "
                    f"loaded, quality in view >= {r['quality_in_view'][0]:.3f}")
        finally:
            stop(proc)
    finally:
        browser.close()
        pw.stop()
    for name, r in results.items():  # the points requests of each zoom again, one after the other, no browser
        replays = [_replay(start_server, stop, urls) for urls in r["requests"]]
        r["replay_s"] = [t for t, _ in replays]
        log(f"zoom ({name}): its {len(r['requests'][0])} points requests replayed in sequence on a fresh server, "
            f"no browser: {statistics.median(r['replay_s']) * 1e3:.0f} ms")

    def timing(runs: List[float]) -> dict:
        return {"best": min(runs), "median": statistics.median(runs), "runs": runs}

    first = next(iter(cams))
    peers = {}
    for name, r in results.items():
        if name != first:
            peers[f"zoom ({name})"] = peer(statistics.median(r["data_s"]), "s", None, "", timing_s=timing(r["data_s"]),
                                           cam=cams[name], loaded=r["loaded"], quality_in_view=r["quality_in_view"])
        peers[f"({name}) until SwiftShader has drawn it (software GL, not the target's figure)"] = peer(
            statistics.median(r["drawn_s"]), "s", None, "", timing_s=timing(r["drawn_s"]))
        peers[f"({name}) its points requests replayed in sequence, fresh server, no browser"] = peer(
            statistics.median(r["replay_s"]), "s", None, "", timing_s=timing(r["replay_s"]),
            requests=[len(u) for u in r["requests"]])
    main = results[first]
    value = statistics.median(main["data_s"])
    return figure("zoom", f"zoom in Chromium ({first}): the camera moves (URL fragment) after the whole step is "
                  "loaded; time until the viewer has nothing more to ask for the new view (view-limited) and its "
                  "last points are in", value, "s", timing=timing(main["data_s"]), peers=peers,
                  target="<= 1 s, view-limited (<= 2M particles)",
                  met=value <= 1.0 and max(main["loaded"]) <= 2_000_000, cam=cams[first], loaded=main["loaded"],
                  quality_in_view=main["quality_in_view"])
