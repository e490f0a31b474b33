"""Browser tests of the viewer: Debian's Chromium (never a downloaded browser) driven by
Playwright, drawing with SwiftShader, against `motes serve` started on a free port.

They skip, saying why, when the server's dependencies (the serve extra), Playwright or
/usr/bin/chromium are missing; with MOTES_REQUIRE_ALL=1 (scripts/test.sh sets it for them;
MOTES_REQUIRE_BROWSER=1 is its older name) a missing piece fails them instead, so that CI
never passes on skipped browser tests (tests/needs.py). MOTES_SERVE_COMMAND replaces
`python -m motes serve` (e.g. another build's `.venv/bin/motes serve`).
MOTES_UPDATE_GOLDEN=1 rewrites tests/browser/golden/*.png; MOTES_SCREENSHOTS=1 writes the
guide's pictures (docs/images/viewer-*.png).
"""

from __future__ import annotations

import io
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import motes
from needs import missing, need

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("MOTES_CHROMIUM", "/usr/bin/chromium")
#: REBIND_HOST resolves to 127.0.0.1 in this browser, as an attacker's domain does in a DNS
#: rebinding attack.
REBIND_HOST = "rebind.example"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--enable-unsafe-swiftshader", "--use-angle=swiftshader",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run",
                 f"--host-resolver-rules=MAP {REBIND_HOST} 127.0.0.1"]
VIEWPORT = {"width": 1000, "height": 640}
TOKEN = "s3cret-token"


def _server_command() -> list:
    if os.environ.get("MOTES_SERVE_COMMAND"):
        return shlex.split(os.environ["MOTES_SERVE_COMMAND"])
    need("motes.server", "motes serve's dependencies: pip install 'motes[serve]'")
    probe = subprocess.run([sys.executable, "-m", "motes", "serve", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        missing(f"`motes serve` is not available: {(probe.stderr or probe.stdout).strip()[-300:]}")
    return [sys.executable, "-m", "motes", "serve"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`motes serve` on 127.0.0.1 with the given NAME=PATH datasets."""

    def __init__(self, datasets: dict, extra: tuple = ()):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        args = [*_server_command(), *(f"{n}={p}" for n, p in datasets.items()), "--port", str(self.port), *extra]
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT)
        deadline = time.monotonic() + 60
        headers = {"Authorization": f"Bearer {TOKEN}"} if "--token" in extra else {}
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited: {self.output()[-2000:]}")
            try:
                with urllib.request.urlopen(urllib.request.Request(self.url + "api/v1/health", headers=headers), timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("the server did not answer within 60 s")
                time.sleep(0.2)
        page = urllib.request.Request(self.url, headers=headers)
        with urllib.request.urlopen(page, timeout=10) as r:
            if b"<canvas" not in r.read():
                raise RuntimeError("the server does not serve the viewer: build it (cd viewer && npm ci && npm run build)")

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# --- data ------------------------------------------------------------------------------------
def halves(n: int, seed: int, flip: bool) -> dict:
    """Uniform particles in the unit cube; v = 1 where x >= 0.5, else 0 (the other way with flip);
    w uniform in [0, 1] (for filters)."""
    rng = np.random.default_rng(seed)
    x, y, z, w = (rng.random(n, dtype=np.float32) for _ in range(4))
    v = ((x >= 0.5) != flip).astype(np.float32)
    return {"x": x, "y": y, "z": z, "v": v, "w": w}


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("viewer-data")
    motes.write(d / "halves.motes", halves(40_000, 1, False), step=0, time=0.0)
    motes.write(d / "halves.motes", halves(30_000, 2, True), step=1, time=1.5)
    motes.write(d / "vpic.motes", motes.synth.vpic(100_000, seed=0))
    motes.write(d / "clustered.motes", motes.synth.clustered(60_000, seed=3))
    return d


@pytest.fixture(scope="session")
def server(data_dir):
    s = Server({n: data_dir / f"{n}.motes" for n in ("halves", "vpic", "clustered")})
    yield s
    s.stop()


# --- the browser -----------------------------------------------------------------------------
@pytest.fixture(scope="session")
def browser_context(tmp_path_factory):
    sync_api = need("playwright.sync_api", "Playwright for Python: pip install playwright")
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        missing(f"{CHROMIUM} is missing (Debian's chromium package; scripts/setup.sh installs it)")
    profile = tmp_path_factory.mktemp("chromium-profile")  # a fresh --user-data-dir
    with sync_api.sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport=VIEWPORT, device_scale_factor=1, accept_downloads=True)
        yield ctx
        ctx.close()


class Page:
    """A page of the viewer, with the console's errors collected."""

    def __init__(self, page):
        self.page = page
        self.errors: list = []
        page.on("console", lambda m: self.errors.append(f"console.{m.type}: {m.text}") if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))

    def open(self, url: str, timeout: float = 90) -> "Page":
        self.page.goto(url)
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 90) -> None:
        """Until the streaming has stopped, with something loaded (or an error shown)."""
        self.page.wait_for_function(
            "() => { const s = document.getElementById('status').dataset;"
            " return s.state === 'error' || (s.state === 'ready' && Number(s.loaded) > 0); }",
            timeout=timeout * 1000)
        self.page.wait_for_timeout(400)  # rests, draws, and that nothing starts again
        self.page.wait_for_function("() => document.getElementById('status').dataset.state !== 'loading'",
                                    timeout=timeout * 1000)

    def add_filter(self, column: str) -> None:
        """A filter on column (its whole range), once the answer is in."""
        self.page.select_option("#filter-column", column)
        self.page.click("#filter-add")
        self.wait_ready()

    def set_bound(self, column: str, which: str, value: float) -> None:
        """Types the lower ("lo") or upper ("hi") bound of column's filter."""
        box = self.page.locator(f"#filters .filter[data-column='{column}'] input").nth(0 if which == "lo" else 1)
        box.fill(str(value))
        box.dispatch_event("change")

    def set_expression(self, text: str) -> None:
        self.page.fill("#where", text)
        self.page.dispatch_event("#where", "change")

    def status(self) -> dict:
        return self.page.eval_on_selector("#status", "e => ({...e.dataset, text: e.textContent})")

    def canvas(self) -> np.ndarray:
        """The view as an RGB array (a screenshot of the canvas, without the overlays on it)."""
        from PIL import Image

        overlays = "#status, #legend, #legend-labels, #message"
        self.page.eval_on_selector_all(overlays, "es => es.forEach(e => e.style.visibility = 'hidden')")
        try:
            png = self.page.locator("#view").screenshot()
        finally:
            self.page.eval_on_selector_all(overlays, "es => es.forEach(e => e.style.visibility = '')")
        return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(np.int16)


@pytest.fixture
def viewer(browser_context):
    page = browser_context.new_page()
    p = Page(page)
    yield p
    page.close()


def near(img: np.ndarray, rgb, tol: int = 40) -> np.ndarray:
    """Pixels within tol of a colour (each channel)."""
    return np.all(np.abs(img - np.array(rgb, np.int16)) <= tol, axis=-1)


def match_fraction(a: np.ndarray, b: np.ndarray, tol: int = 24) -> float:
    """Share of pixels whose channels all differ by at most tol."""
    if a.shape != b.shape:
        return 0.0
    return float(np.mean(np.all(np.abs(a - b) <= tol, axis=-1)))
