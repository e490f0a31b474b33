"""ds.view() in a notebook: the HTML a notebook shows for it (``_repr_html_``), in a page
served from 127.0.0.1 as Jupyter's are and rendered in Chromium, holds the viewer of the
dataset, drawn with the view's colour and expression; the server behind it is in this
process, on 127.0.0.1, and stops with motes.notebook.stop(). A page of another origin may
not frame it (the default of `motes serve` too). MOTES_SCREENSHOTS=1 also writes the guide's
picture of it (docs/images/notebook-view.png)."""
import html as html_text
import os
import urllib.error
import urllib.request

import numpy as np
import pytest

import motes
from needs import need


class Notebook:
    """A page of "notebook output" served from 127.0.0.1 (as Jupyter serves its pages from
    this machine): set(html) shows it."""

    def __init__(self, page):
        import http.server
        import threading

        self.page, self.html = page, b""
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(owner.html)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def show(self, html: str, code: str = "") -> None:
        """Shows ``html`` as a cell's output, below the cell's ``code`` when given."""
        cell = (f"<pre style='margin:0 0 8px;padding:8px;background:#f5f5f5;border:1px solid #ddd;font-size:14px'>"
                f"In [1]: {html_text.escape(code)}</pre>" if code else "")
        self.html = f"<html><body style='margin:0;padding:{8 if code else 0}px'>{cell}{html}</body></html>".encode()
        self.page.goto(f"http://127.0.0.1:{self.httpd.server_address[1]}/")

    def close(self):
        self.httpd.shutdown()


@pytest.fixture
def notebook(browser_context):
    need("motes.server", "motes serve's dependencies: pip install 'motes[serve]'")
    import motes.notebook

    page = browser_context.new_page()
    nb = Notebook(page)
    yield nb
    nb.close()
    page.close()
    motes.notebook.stop()


def frame_ready(page, timeout=90):
    frame = page.frames[-1]
    frame.wait_for_function(
        "() => { const e = document.getElementById('status'); if (!e) return false; const s = e.dataset;"
        " return s.state === 'error' || (s.state === 'ready' && Number(s.loaded) > 0); }", timeout=timeout * 1000)
    page.wait_for_timeout(500)
    return frame


def lit(page) -> np.ndarray:
    import io

    from PIL import Image

    png = page.locator("iframe").screenshot()
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(np.int16)
    return rgb


def test_view_renders_inline_with_its_expression(notebook, data_dir):
    import motes.notebook

    ds = motes.open(str(data_dir / "vpic.motes"))  # 100,000 particles: the viewer loads them all
    column = "energy"
    everything = ds.view(color=column, height=400)
    notebook.show(everything._repr_html_())
    frame = frame_ready(notebook.page)
    status = frame.eval_on_selector("#status", "e => ({...e.dataset})")
    assert status["state"] == "ready" and int(status["loaded"]) == ds.count_total()
    assert frame.eval_on_selector("#color", "e => e.value") == column
    full = lit(notebook.page)
    assert full.shape[0] == 400 and (np.abs(full - full[0, 0]).max(axis=2) > 40).sum() > 500  # particles drawn

    x0, x1 = (float(v) for v in np.quantile(np.asarray(ds.query(columns=["x"])["x"]), [0.0, 0.25]))
    where = f"x < {x1!r}"
    part = ds.view(where=where, color=column, height=400)
    assert part.url.split("#")[0] == everything.url.split("#")[0]  # one server per dataset
    code = f'ds.view(where="{where}", color="{column}", height=400)'
    notebook.show(part._repr_html_(), code=code)
    frame = frame_ready(notebook.page)
    assert frame.eval_on_selector("#where", "e => e.value") == where
    assert int(frame.eval_on_selector("#status", "e => e.dataset.loaded")) == ds.count(where)
    if os.environ.get("MOTES_SCREENSHOTS") == "1":
        from conftest import ROOT

        notebook.page.set_viewport_size({"width": 1000, "height": 480})
        notebook.page.wait_for_timeout(1000)
        notebook.page.screenshot(path=str(ROOT / "docs" / "images" / "notebook-view.png"))

    base = everything.url.split("#")[0]
    motes.notebook.stop()
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(base + "api/v1/health", timeout=3)
    with pytest.raises(motes.UsageError, match="unknown column"):
        ds.view(color="no_such_column")
