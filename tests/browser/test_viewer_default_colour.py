"""The viewer's first picture of a dataset it knows nothing about: a cosmology-like run
(positions, velocities, a lognormal density, ids) opens coloured by the density on a log
scale, not by vx on a linear one; the panel shows the choice (the column, the log box, a
note) and the link holds it; unticking log and picking another column undo it, and a
link that names a column keeps that column and its scale.

The pictures are judged by each drawn pixel's place t on viridis (test_viewer_colour.py)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

import motes
from conftest import Page, Server
from test_viewer_colour import FACE_ON, colour_bins, viridis_t

N = 50_000
SIGMA = np.log(10.0)  # rho = 10**normal(0, 1): the 1st to the 99th percentile span 4.7 decades


@pytest.fixture(scope="module")
def cosmo(tmp_path_factory):
    rng = np.random.default_rng(7)
    cols = {a: rng.random(N, dtype=np.float32) for a in "xyz"}
    cols.update({f"v{a}": rng.normal(0, 300, N).astype(np.float32) for a in "xyz"})
    cols["rho"] = np.exp(rng.normal(0, SIGMA, N)).astype(np.float32)
    cols["id"] = rng.permutation(N).astype(np.uint64)
    path = tmp_path_factory.mktemp("viewer-default-colour") / "cosmo.motes"
    motes.write(path, cols)
    return path


@pytest.fixture(scope="module")
def cosmo_server(cosmo):
    s = Server({"cosmo": cosmo})
    yield s
    s.stop()


def fragment(viewer) -> dict:
    return parse_qs(urlparse(viewer.page.url).fragment)


def middle_share(img: np.ndarray) -> float:
    """The share of the drawn pixels in the middle half of the map (0.25 <= t <= 0.75)."""
    t, _ = viridis_t(img)
    assert len(t) > 1000, "too few pixels drawn"
    return float(np.mean((t >= 0.25) & (t <= 0.75)))


def test_a_cosmology_run_opens_coloured_by_density_on_a_log_scale(cosmo_server, cosmo, viewer, browser_context):
    rho = motes.open(cosmo).query(columns=["rho"])["rho"]
    assert rho.min() > 0 and rho.max() / rho.min() > 1e3  # the case: positive, over three decades
    viewer.open(cosmo_server.url + f"#ds=cosmo&{FACE_ON}")  # no colour named

    # the panel shows the choice: the column, the log box, the note that says why
    assert viewer.page.input_value("#color") == "rho"
    assert viewer.page.is_checked("#range-log")
    assert "(log)" in viewer.page.inner_text("#legend-unit")
    note = viewer.page.locator("#color-auto")
    assert note.is_visible() and note.get_attribute("data-kind") == "density"
    assert "rho" in note.inner_text() and "log scale" in note.inner_text()
    # the link holds it, so that it reproduces the picture
    assert fragment(viewer)["color"] == ["rho"] and fragment(viewer)["scale"] == ["log"]

    # the picture: every decade its share of the map (rho is lognormal: half of the
    # points within 0.67 decades of the median, the middle of a log range)
    log = viewer.canvas()
    assert colour_bins(log) >= 12, colour_bins(log)
    assert middle_share(log) > 0.5, middle_share(log)

    # undo: untick log: a linear scale, out of the link (most points then sit at the bottom of the map)
    viewer.page.uncheck("#range-log")
    viewer.wait_ready()
    assert "scale" not in fragment(viewer) and fragment(viewer)["color"] == ["rho"]
    assert not note.is_visible()
    linear = viewer.canvas()
    assert middle_share(linear) < 0.1, middle_share(linear)

    # that link, opened anew, keeps the column and the linear scale (a named column wins over the default)
    again = Page(browser_context.new_page()).open(viewer.page.url)
    assert again.page.input_value("#color") == "rho"
    assert not again.page.is_checked("#range-log")
    assert not again.page.locator("#color-auto").is_visible()
    assert middle_share(again.canvas()) < 0.1
    assert again.errors == []
    again.page.close()

    # another column takes its own scale (vx is signed: linear); back to rho: log again
    viewer.page.select_option("#color", "vx")
    viewer.wait_ready()
    assert not viewer.page.is_checked("#range-log") and fragment(viewer)["color"] == ["vx"]
    viewer.page.select_option("#color", "rho")
    viewer.wait_ready()
    assert viewer.page.is_checked("#range-log") and fragment(viewer)["scale"] == ["log"]
    assert viewer.errors == []


def test_a_link_that_names_a_column_keeps_it(cosmo_server, viewer, browser_context):
    viewer.open(cosmo_server.url + f"#ds=cosmo&color=vx&{FACE_ON}")
    assert viewer.page.input_value("#color") == "vx"
    assert not viewer.page.is_checked("#range-log")
    assert not viewer.page.locator("#color-auto").is_visible()
    assert "scale" not in fragment(viewer)
    assert viewer.errors == []
    # a column the species lacks: the default takes over
    other = Page(browser_context.new_page()).open(cosmo_server.url + f"#ds=cosmo&color=energy&{FACE_ON}")
    assert other.page.input_value("#color") == "rho" and other.page.is_checked("#range-log")
    assert other.errors == []
    other.page.close()
