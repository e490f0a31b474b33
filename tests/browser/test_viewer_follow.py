"""The viewer follows a running simulation: with "follow new steps" on (#follow=1), each step
a writer publishes is opened as it comes (the server's long poll, /updates), drawn whole;
off, the viewer stays on its step."""

import motes
from conftest import Server, halves


def label(viewer) -> str:
    return viewer.page.eval_on_selector("#step-label", "e => e.textContent")


def test_the_viewer_opens_each_new_step_while_following(tmp_path, viewer):
    path = tmp_path / "live.motes"
    motes.write(path, halves(20_000, 1, False), step=0, time=0.0)
    server = Server({"live": path})
    try:
        viewer.open(server.url + "#ds=live&color=v&follow=1")
        assert viewer.page.is_checked("#follow") and label(viewer).startswith("0 ")
        assert int(viewer.status()["loaded"]) == 20_000
        with motes.Writer(path) as w:
            w.write_step(1, halves(30_000, 2, True), time=1.5)
        viewer.page.wait_for_function("() => document.getElementById('step-label').textContent.startsWith('1 ')",
                                      timeout=30_000)
        viewer.wait_ready()
        assert int(viewer.status()["loaded"]) == 30_000
        assert "follow=1" in viewer.page.evaluate("location.hash") and "step=1" in viewer.page.evaluate("location.hash")
        lit = viewer.canvas()
        assert (abs(lit - lit[0, 0]).max(axis=2) > 40).sum() > 500  # the new step is drawn

        viewer.page.uncheck("#follow")
        with motes.Writer(path) as w:
            w.write_step(2, halves(10_000, 3, False), time=3.0)
        viewer.page.wait_for_timeout(2500)
        assert label(viewer).startswith("1 ") and "follow" not in viewer.page.evaluate("location.hash")
        viewer.page.check("#follow")  # on again: the newest step at once
        viewer.page.wait_for_function("() => document.getElementById('step-label').textContent.startsWith('2 ')",
                                      timeout=30_000)
        viewer.wait_ready()
        assert int(viewer.status()["loaded"]) == 10_000
        assert viewer.errors == []
    finally:
        server.stop()
