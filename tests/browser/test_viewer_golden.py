"""A golden image of a fixed scene (fixed seed, camera and window size), compared pixel by
pixel, and the guide's screenshots.

Regenerate the golden image after an intended change of the picture (it is drawn by
Chromium's SwiftShader, so take it with the same flags the tests use):

    MOTES_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/browser/test_viewer_golden.py

and look at tests/browser/golden/viewer-clustered.png before committing it.
MOTES_SCREENSHOTS=1 writes docs/images/viewer-*.png the same way.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, match_fraction

GOLDEN = Path(__file__).parent / "golden" / "viewer-clustered.png"
SCENE = "#ds=clustered&color=energy&map=viridis&cam=0.5,0.5,0.5,2.3,30,20&size=2"


def test_golden_image(server, viewer):
    from PIL import Image

    viewer.open(server.url + SCENE)
    assert "quality 1" in viewer.status()["text"]
    img = viewer.canvas()
    if os.environ.get("MOTES_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        Image.fromarray(img.astype(np.uint8)).save(GOLDEN)
    want = np.asarray(Image.open(GOLDEN).convert("RGB")).astype(np.int16)
    share = match_fraction(img, want)
    if share < 0.99:
        out = Path(os.environ.get("MOTES_GOLDEN_DIFF", "/tmp")) / "viewer-clustered-actual.png"
        Image.fromarray(img.astype(np.uint8)).save(out)
        pytest.fail(f"{share:.2%} of the pixels match the golden image (want 99%); this run's picture: {out}")
    assert viewer.errors == []


@pytest.mark.skipif(os.environ.get("MOTES_SCREENSHOTS") != "1", reason="MOTES_SCREENSHOTS=1 writes the guide's pictures")
@pytest.mark.allow_skip("an opt-in: it writes the guide's pictures")
def test_guide_screenshots(server, viewer):
    images = ROOT / "docs" / "images"
    images.mkdir(parents=True, exist_ok=True)
    page = viewer.page
    page.set_viewport_size({"width": 1280, "height": 960})
    viewer.open(server.url + "#ds=vpic&color=energy&range=0,1.5&hist=ux,uy&cam=100,50,25,190,25,25")
    page.wait_for_timeout(1000)
    page.screenshot(path=str(images / "viewer-overview.png"))
    viewer.add_filter("energy")
    viewer.set_bound("energy", "lo", 0.5)
    viewer.set_expression("ux < 0")
    viewer.wait_ready()
    page.wait_for_timeout(1000)
    page.screenshot(path=str(images / "viewer-filters.png"))
    assert viewer.errors == []
