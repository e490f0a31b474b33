"""The viewer's colour scale and first step in a real browser: the default colour range is
the 1st to the 99th percentile of the colour column (one extreme outlier no longer washes
the picture into one colour), the full min–max is a click away, the log scale maps by
decades, and a link without a step opens the last step (as motes.open does).

Each drawn pixel is read back as its place t in [0, 1] on viridis (matplotlib's table, the
same data as the viewer's d3 map), and the pictures are judged by those values."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest
from matplotlib import colormaps

import motes
from conftest import Page, Server

FACE_ON = "cam=0.5,0.5,0.5,2.2,0,0"  # looking down -z at the unit cube: x to the right, y up
N = 50_000
STEPS = (10_000, 20_000, N)  # particles per step: the last is the one with the outlier
VIRIDIS = np.round(colormaps["viridis"](np.linspace(0, 1, 256))[:, :3] * 255)


def particles(n: int, seed: int) -> dict:
    """Uniform in the unit cube; rho = 5 + x (a narrow spread: 5 to 6, left to right on the
    screen) and n = 10**(3x) (three decades, left to right)."""
    rng = np.random.default_rng(seed)
    x, y, z = (rng.random(n) for _ in range(3))
    return {"x": x, "y": y, "z": z, "rho": 5 + x, "n": 10 ** (3 * x)}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("viewer-colour") / "outlier.motes"
    for step, n in enumerate(STEPS):
        cols = particles(n, step)
        if step == len(STEPS) - 1:
            cols["rho"][0] = 6000.0  # one value 1000× the others
            cols["n"][0] = 1e6
        motes.write(path, cols, step=step, time=float(step))
    return path


@pytest.fixture(scope="module")
def colour_server(data):
    s = Server({"outlier": data})
    yield s
    s.stop()


def viridis_t(img: np.ndarray):
    """(t of each drawn pixel, its screen column): the pixels within a small distance of a
    viridis entry (the background is far from all of them)."""
    colours, which = np.unique(img.reshape(-1, 3), axis=0, return_inverse=True)  # a few thousand at most
    d = ((colours[:, None, :].astype(np.float64) - VIRIDIS[None, :, :]) ** 2).sum(-1)
    best, near = d.argmin(1), d.min(1) <= 12 ** 2
    which = which.reshape(-1)
    on = near[which]
    cols = np.tile(np.arange(img.shape[1]), img.shape[0])
    return best[which][on] / 255, cols[on]


def colour_bins(img: np.ndarray, bins: int = 16) -> int:
    """How many of `bins` equal parts of the map hold at least 0.5% of the drawn pixels."""
    t, _ = viridis_t(img)
    counts = np.histogram(t, bins=bins, range=(0, 1))[0]
    return int((counts >= 0.005 * len(t)).sum())


def middle_t(img: np.ndarray) -> float:
    """The median t of the drawn pixels in the middle columns of the view (x = 0.5)."""
    t, cols = viridis_t(img)
    mid = img.shape[1] / 2
    return float(np.median(t[np.abs(cols - mid) <= 6]))


def panel_range(viewer) -> tuple:
    return float(viewer.page.input_value("#range-lo")), float(viewer.page.input_value("#range-hi"))


def percentiles(values: np.ndarray) -> tuple:
    """The 1st and 99th percentiles as the viewer defines them: ranks floor(0.01 (n-1)) and ceil(0.99 (n-1))."""
    s = np.sort(values)
    n = len(s)
    return s[int(np.floor(0.01 * (n - 1)))], s[int(np.ceil(0.99 * (n - 1)))]


def test_default_range_is_robust_to_an_outlier(colour_server, viewer, data):
    ds = motes.open(data)
    rho = ds.query(step=2, columns=["rho"])["rho"]
    viewer.open(colour_server.url + f"#ds=outlier&step=2&color=rho&{FACE_ON}")
    default = viewer.canvas()
    # many colours: rho runs from 5 to 6 across the screen, and the map with it
    assert colour_bins(default) >= 14, colour_bins(default)
    assert viewer.page.get_attribute("#legend-labels", "data-source") == "percentiles"

    # the range: the exact percentiles, each end within a thousandth of the range (and the panel's 6 digits)
    lo, hi = panel_range(viewer)
    q0, q1 = percentiles(rho)
    tol = 2e-3 * (q1 - q0) + 1e-5 * q1
    assert q0 - tol <= lo <= q0 + 1e-5 * q1 and q1 - 1e-5 * q1 <= hi <= q1 + tol, (lo, hi, q0, q1)
    assert rho.max() == 6000.0

    # the full min–max (the button): the outlier squeezes everything else into one colour
    viewer.page.click("#range-full")
    viewer.wait_ready()
    full = viewer.canvas()
    assert panel_range(viewer) == pytest.approx((rho.min(), 6000.0), rel=1e-5)
    assert colour_bins(full) <= 2, colour_bins(full)
    assert "range=" in viewer.page.evaluate("location.hash")

    # auto: back to the percentiles (and out of the URL)
    viewer.page.click("#range-auto")
    viewer.wait_ready()
    assert "range=" not in viewer.page.evaluate("location.hash")
    assert colour_bins(viewer.canvas()) >= 14
    assert viewer.errors == []


def test_a_link_with_a_range_keeps_it(colour_server, viewer, data):
    rho = motes.open(data).query(step=2, columns=["rho"])["rho"]
    viewer.open(colour_server.url + f"#ds=outlier&step=2&color=rho&range={float(rho.min())!r},6000&{FACE_ON}")
    assert panel_range(viewer) == pytest.approx((rho.min(), 6000.0), rel=1e-5)
    assert colour_bins(viewer.canvas()) <= 2  # as the link drew it before percentiles were the default
    assert viewer.page.get_attribute("#legend-labels", "data-source") == "set"


def test_log_scale(colour_server, viewer, browser_context):
    viewer.open(colour_server.url + f"#ds=outlier&step=2&color=n&{FACE_ON}")
    linear = viewer.canvas()
    # n = 10**(3x): at x = 0.5 (the middle of the screen) n = 31.6, about 3% of the way up
    # a linear range from 1 to 1000, and half way up a log one
    assert middle_t(linear) < 0.08, middle_t(linear)
    viewer.page.check("#range-log")
    viewer.wait_ready()
    log = viewer.canvas()
    assert abs(middle_t(log) - 0.5) < 0.06, middle_t(log)
    assert colour_bins(log) >= 14
    assert "scale=log" in viewer.page.evaluate("location.hash")
    assert "(log)" in viewer.page.inner_text("#legend-unit")

    # the link reproduces it
    again = Page(browser_context.new_page()).open(viewer.page.url)
    assert again.page.is_checked("#range-log")
    assert abs(middle_t(again.canvas()) - 0.5) < 0.06
    assert viewer.errors == [] and again.errors == []
    again.page.close()


def test_opens_at_the_last_step(colour_server, viewer, data, browser_context):
    ds = motes.open(data)
    assert ds.count_total() == STEPS[-1]  # motes.open's default: the last step
    viewer.open(colour_server.url + f"#ds=outlier&color=rho&{FACE_ON}")
    assert int(viewer.status()["total"]) == STEPS[-1]
    assert parse_qs(urlparse(viewer.page.url).fragment)["step"] == ["2"]
    assert viewer.page.input_value("#step") == "2"
    assert viewer.page.inner_text("#step-label").startswith("2 ")
    # a link that names a step opens that one
    named = Page(browser_context.new_page()).open(colour_server.url + f"#ds=outlier&step=0&color=rho&{FACE_ON}")
    assert int(named.status()["total"]) == STEPS[0]
    assert viewer.errors == [] and named.errors == []
    named.page.close()
