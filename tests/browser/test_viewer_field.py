"""The field slice of the viewer in a real browser: a grid field that is a linear ramp along
x, sliced perpendicular to z through the particles (the slice named in the URL's fragment),
drawn from viridis' low end on the left to its high end on the right; fetched coarse to
fine; the slider moves it and the fragment follows."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

import motes
from conftest import Server

VIRIDIS_LOW = (68, 1, 84)  # viridis(0)
VIRIDIS_HIGH = (253, 231, 37)  # viridis(1)


def ramp(shape):
    """A float32 field of shape (z, y, x) whose value is the sample's x index."""
    return np.broadcast_to(np.arange(shape[2], dtype=np.float32), shape).copy()


@pytest.fixture(scope="module")
def field_server(tmp_path_factory):
    path = tmp_path_factory.mktemp("viewer-field") / "ramp.motes"
    rng = np.random.default_rng(7)
    n = 5_000  # particles behind the slice (z < 2; the slice is at z = 8, the camera at +z)
    parts = {"x": rng.random(n, dtype=np.float32) * 63, "y": rng.random(n, dtype=np.float32) * 31,
             "z": rng.random(n, dtype=np.float32) * 2, "energy": rng.random(n, dtype=np.float32)}
    fields = {"ramp": motes.Field(ramp((16, 32, 64)), origin=(0, 0, 0), spacing=(1, 1, 1)),
              "fine": motes.Field(ramp((4, 128, 256)), origin=(0, 0, 6), spacing=(0.25, 0.25, 1))}
    motes.write(path, parts, step=0, fields=fields)
    s = Server({"ramp": path})
    yield s
    s.stop()


FACE_ON = "cam=31.5,15.5,8,90,0,0"  # looking down -z: x to the right, y up


def samples_requests(page) -> list:
    seen = []
    page.on("request", lambda r: seen.append(r.url) if "/samples" in r.url else None)
    return seen


def wait_slice(viewer, timeout=60):
    viewer.page.wait_for_function(
        "() => { const s = document.getElementById('slice-info').dataset;"
        " return s.state === 'error' || (s.state === 'ready' && s.level === '0'); }", timeout=timeout * 1000)
    viewer.page.wait_for_timeout(300)  # drawn


def row_of_slice(img: np.ndarray) -> np.ndarray:
    """The pixels of the slice along the middle row of the view (those off the background)."""
    row = img[img.shape[0] // 2]
    background = img[2, 2]
    on = np.any(np.abs(row - background) > 12, axis=-1)
    cols = np.flatnonzero(on)
    assert cols.size > 100, "the slice is not drawn"
    assert cols[-1] - cols[0] + 1 == cols.size, "the slice's row has gaps"
    return row[cols[0]:cols[-1] + 1]


def check_ramp(pixels: np.ndarray, steps: int):
    """Viridis from its low end (left) to its high end (right): its green channel only grows."""
    assert np.all(np.abs(pixels[0] - VIRIDIS_LOW) <= 6), pixels[0]
    assert np.all(np.abs(pixels[-1] - VIRIDIS_HIGH) <= 6), pixels[-1]
    green = pixels[:, 1]
    assert np.all(np.diff(green) >= 0), green
    distinct = len({tuple(p) for p in pixels})
    assert distinct >= steps * 0.8, distinct  # one colour per sample along x


def test_slice_of_a_ramp_goes_low_to_high_left_to_right(field_server, viewer):
    requests = samples_requests(viewer.page)
    viewer.open(field_server.url + f"#ds=ramp&size=1&{FACE_ON}&slice=ramp&saxis=z&spos=8")
    wait_slice(viewer)
    assert viewer.page.eval_on_selector("#slice-info", "e => e.dataset.state") == "ready"
    img = viewer.canvas()
    pixels = row_of_slice(img)
    check_ramp(pixels, 64)
    # the quad spans the grid's 64 samples (x from -0.5 to 63.5) at this distance: 79 % of the view's width
    assert abs(len(pixels) / img.shape[1] - 64 / (2 * 90 * np.tan(np.pi / 8) * img.shape[1] / img.shape[0])) < 0.03
    # one request (a 64 x 32 plane fits the first budget), for the plane at z index 8
    assert len(requests) == 1
    q = parse_qs(urlparse(requests[0]).query)
    assert q["index_box"] == ["0,0,8,64,32,9"] and q["level"] == ["0"]
    assert "slice=ramp" in viewer.page.evaluate("location.hash")
    assert viewer.errors == []


def test_slice_is_fetched_coarse_to_fine_and_follows_the_slider(field_server, viewer):
    requests = samples_requests(viewer.page)
    viewer.open(field_server.url + f"#ds=ramp&size=1&cam=31.875,15.875,8,90,0,0&slice=fine&saxis=z")
    wait_slice(viewer)
    levels = [int(parse_qs(urlparse(u).query)["level"][0]) for u in requests]
    assert levels == [2, 1, 0], levels  # 256 x 128: 2048 samples at level 2, then finer
    # the default position is the middle sample (z index 1 of 4); each level's plane is on its lattice
    boxes = [parse_qs(urlparse(u).query)["index_box"][0] for u in requests]
    assert boxes == ["0,0,0,256,128,1", "0,0,2,256,128,3", "0,0,1,256,128,2"], boxes
    check_ramp(row_of_slice(viewer.canvas()), 256 * 0.5)  # 256 samples over fewer pixels
    # the slider: sample 3 of z; the fragment keeps the position
    del requests[:]
    slider = viewer.page.locator("#slice-pos")
    slider.fill("3")
    wait_slice(viewer)
    assert parse_qs(viewer.page.evaluate("location.hash")[1:])["spos"] == ["9"]  # z = 6 + 3
    assert parse_qs(urlparse(requests[-1]).query)["index_box"] == ["0,0,3,256,128,4"]
    assert viewer.page.inner_text("#slice-pos-label").startswith("z = 9")
    # none: the slice is gone, and so is it from the fragment
    viewer.page.select_option("#slice-field", "")
    viewer.page.wait_for_function("() => document.getElementById('slice-info').dataset.state === 'off'")
    assert "slice=" not in viewer.page.evaluate("location.hash")
    assert viewer.errors == []
