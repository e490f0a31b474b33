"""The viewer in a real browser against `motes serve`: loading, colours, filters, refinement,
steps, links, errors. Counts are checked against the Python API; pictures by pixels."""

from __future__ import annotations

from urllib.parse import quote

import numpy as np
import pytest

import motes
from conftest import TOKEN, Server, match_fraction, near

VIRIDIS_LOW = (68, 1, 84)  # viridis(0)
VIRIDIS_HIGH = (253, 231, 37)  # viridis(1)
FACE_ON = "cam=0.5,0.5,0.5,2.2,0,0"  # looking down -z: x to the right, y up
HALVES = f"ds=halves&step=0&color=v&{FACE_ON}"  # without step=: the last step (1)


def halves_sides(img: np.ndarray):
    """(mean x of the low-colour pixels, of the high-colour ones, their counts)."""
    low, high = near(img, VIRIDIS_LOW), near(img, VIRIDIS_HIGH)
    xs = np.arange(img.shape[1])[None, :]
    mean = lambda m: float((m * xs).sum() / max(1, m.sum()))  # noqa: E731
    return mean(low), mean(high), int(low.sum()), int(high.sum())


def test_loads_without_console_errors(server, viewer, data_dir):
    viewer.open(server.url + "#ds=vpic")
    st = viewer.status()
    total = motes.open(data_dir / "vpic.motes").count_total()
    assert st["total"] == str(total)
    assert int(st["shown"]) == total  # 100k fit the default budget: everything is shown
    assert f"{total:,} / {total:,} points" in st["text"]
    assert viewer.page.locator("#message").is_hidden()
    assert viewer.errors == []


def test_colours_on_the_right_sides(server, viewer):
    viewer.open(server.url + "#" + HALVES)
    img = viewer.canvas()
    low_x, high_x, n_low, n_high = halves_sides(img)
    assert n_low > 2000 and n_high > 2000, (n_low, n_high)
    mid = img.shape[1] / 2
    assert low_x < mid - 40 and high_x > mid + 40, (low_x, high_x)
    assert viewer.errors == []


def test_filter_changes_count_and_picture(server, viewer, data_dir):
    ds = motes.open(data_dir / "halves.motes")
    viewer.open(server.url + "#" + HALVES)
    before = viewer.canvas()
    assert int(viewer.status()["shown"]) == ds.count_total(step=0)

    # A filter on a column not loaded: the server is asked (w joins the loaded columns).
    page = viewer.page
    viewer.add_filter("w")
    assert int(viewer.status()["shown"]) == ds.count_total(step=0)

    # Narrowing it: drawn at once by the GPU, no new request.
    requests = []
    page.on("request", lambda r: requests.append(r.url) if "/points" in r.url else None)
    viewer.set_bound("w", "hi", 0.5)
    viewer.wait_ready()
    w_min = float(ds.stats("w", step=0)["min"])
    expected = ds.count(where=f"w >= {w_min!r} and w <= 0.5", step=0)
    assert int(viewer.status()["shown"]) == expected
    assert requests == []
    after = viewer.canvas()
    assert match_fraction(before, after) < 0.95  # the picture changed
    background = near(after, after[2, 2], tol=4).mean()
    assert background > near(before, before[2, 2], tol=4).mean()  # fewer points cover less

    # The expression: a server-side filter; a bad one is reported beside the box.
    viewer.set_expression("v > 0.5")
    viewer.wait_ready()
    assert int(viewer.status()["shown"]) == ds.count(where=f"v > 0.5 and w >= {w_min!r} and w <= 0.5", step=0)
    viewer.set_expression("enrgy > 1")
    page.wait_for_selector("#where-error:not([hidden])")
    assert "enrgy" in page.inner_text("#where-error")


def test_refinement_adds_points_while_the_camera_rests(server, viewer, data_dir):
    # Every value the status line takes is recorded from the first frame on.
    viewer.page.add_init_script("""
        window.__loaded = [];
        new MutationObserver(() => {
          const s = document.getElementById('status');
          if (s && s.dataset.loaded && window.__loaded.at(-1) !== s.dataset.loaded) window.__loaded.push(s.dataset.loaded);
        }).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-loaded']});
    """)
    viewer.open(server.url + "#ds=vpic&first=5000")
    seen = [int(v) for v in viewer.page.evaluate("window.__loaded") if int(v) > 0]
    total = motes.open(data_dir / "vpic.motes").count_total()
    assert seen[0] <= 5000, seen
    assert len(seen) >= 3 and seen == sorted(seen), seen
    assert seen[-1] == total  # all of it, and no particle twice
    assert "quality 1" in viewer.status()["text"]


def test_zooming_streams_detail_for_the_region_only(server, viewer, data_dir):
    viewer.open(server.url + "#ds=vpic&budget=20000&first=5000")
    wide = int(viewer.status()["loaded"])
    assert wide <= 20000
    requests = []
    viewer.page.on("request", lambda r: requests.append(r.url) if "/points" in r.url else None)
    box = viewer.page.locator("#view").bounding_box()
    viewer.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    for _ in range(6):
        viewer.page.mouse.wheel(0, -400)
    viewer.wait_ready()
    assert requests, "zooming in asked for nothing"
    # the cells asked for are smaller than the species' bounds: the view's region only
    cells = [c for u in requests for c in quote_cells(u)]
    bounds = motes.open(data_dir / "vpic.motes").bounds()
    full = np.subtract(bounds[1], bounds[0])
    assert all(np.all(np.subtract(c[3:6], c[0:3]) < full) for c in cells)
    assert int(viewer.status()["loaded"]) <= 20000


def quote_cells(url: str):
    from urllib.parse import parse_qs, urlparse

    q = parse_qs(urlparse(url).query)
    return [list(map(float, c.split(","))) for c in q.get("cells", [""])[0].split(";") if c]


def test_step_slider_changes_the_data(server, viewer, data_dir):
    ds = motes.open(data_dir / "halves.motes")
    viewer.open(server.url + "#" + HALVES)
    low0, high0, _, _ = halves_sides(viewer.canvas())
    assert low0 < high0
    viewer.page.fill("#step", "1")
    viewer.page.dispatch_event("#step", "change")
    viewer.page.wait_for_function(f"() => document.getElementById('status').dataset.total === '{ds.count_total(step=1)}'")
    viewer.wait_ready()
    assert int(viewer.status()["shown"]) == ds.count_total(step=1)
    assert "step=1" in viewer.page.evaluate("location.hash")
    assert "t = 1.5" in viewer.page.inner_text("#step-label")
    low1, high1, n_low, n_high = halves_sides(viewer.canvas())
    assert n_low > 1000 and n_high > 1000
    assert low1 > high1  # step 1 has v the other way round


def test_a_link_reproduces_the_view(server, browser_context):
    from conftest import Page

    first = Page(browser_context.new_page())
    first.open(server.url + "#" + HALVES)
    page = first.page
    page.select_option("#colormap", "magma")
    page.fill("#size", "4")
    page.dispatch_event("#size", "input")
    first.add_filter("w")
    first.set_bound("w", "hi", 0.7)
    box = page.locator("#view").bounding_box()
    page.mouse.move(box["x"] + 300, box["y"] + 300)
    page.mouse.down()
    page.mouse.move(box["x"] + 360, box["y"] + 330, steps=4)
    page.mouse.up()
    first.wait_ready()
    page.wait_for_timeout(500)  # the fragment follows the camera after it rests
    url = page.url
    assert "map=magma" in url and "filter=w:" in url and "size=4" in url
    picture = first.canvas()
    shown = first.status()["shown"]

    second = Page(browser_context.new_page())
    second.open(url)
    assert second.page.input_value("#colormap") == "magma"
    assert second.status()["shown"] == shown
    assert match_fraction(picture, second.canvas()) >= 0.99
    assert first.errors == [] and second.errors == []
    first.page.close()
    second.page.close()


def test_unreachable_server_is_reported(server, viewer):
    viewer.page.route("**/api/v1/**", lambda route: route.abort())
    viewer.page.goto(server.url + "#ds=halves")
    viewer.page.wait_for_selector("#message:not([hidden])")
    assert "Cannot reach the server" in viewer.page.inner_text("#message")


def test_a_limit_is_reported(data_dir, browser_context):
    from conftest import Page

    s = Server({"vpic": data_dir / "vpic.motes"}, ("--max-points", "1000"))
    try:
        p = Page(browser_context.new_page())
        p.open(s.url + "#ds=vpic")
        # the viewer asks for less after a 413 (each answer within the limit), then stops
        # where a single quality step is over the limit
        assert p.status()["state"] == "error"
        assert 0 < int(p.status()["loaded"]) < motes.open(data_dir / "vpic.motes").count_total()
        assert "--max-points" in p.page.inner_text("#message")
        p.page.close()
    finally:
        s.stop()


def test_token(data_dir, browser_context):
    from conftest import Page

    s = Server({"halves": data_dir / "halves.motes"}, ("--token", TOKEN))
    try:
        without = Page(browser_context.new_page())
        without.page.goto(s.url + "api/v1/datasets")
        assert "auth" in without.page.content()
        with_token = Page(browser_context.new_page())
        with_token.open(s.url + f"?token={quote(TOKEN)}#ds=halves")
        assert int(with_token.status()["shown"]) == motes.open(data_dir / "halves.motes").count_total()  # the last step
        without.page.close()
        with_token.page.close()
    finally:
        s.stop()


@pytest.mark.parametrize("fmt", ["csv"])
def test_export_matches_the_python_api(server, viewer, data_dir, fmt):
    viewer.open(server.url + "#" + HALVES + "&where=" + quote("v > 0.5"))
    viewer.page.uncheck("#export-view")
    viewer.page.select_option("#export-format", fmt)
    line = viewer.page.inner_text("#python")
    assert line == 'motes.open("halves.motes").query(where="v > 0.5", step=0, species="particles")'
    with viewer.page.expect_download() as d:
        viewer.page.click("#export")
    rows = d.value.path().read_text().strip().splitlines()
    assert len(rows) - 1 == motes.open(data_dir / "halves.motes").count(where="v > 0.5", step=0)
