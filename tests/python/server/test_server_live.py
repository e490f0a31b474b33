"""motes serve on a real uvicorn (127.0.0.1, a free port): requests exactly as written
(traversal, long URLs, bodies), queries stopped by --query-timeout and by clients that
disconnect, and a short load of 50 viewer-like clients with no error."""

from __future__ import annotations

import motes
import asyncio
import logging
import socket
import time

import pytest

from needs import need

need("starlette")
need("uvicorn")
need("httpx")

from motes.server import Config, Limits, create_app  # noqa: E402
from server_util import (LiveServer, raw_request, start_cli_server, viewer_load,  # noqa: E402
                         write_lattice, write_vpic)

SP = "/api/v1/datasets/{}/steps/0/species/particles"
HEAVY = "sin(x*1000) + cos(y*1000) + sin(z*999) > -2.9"  # no index can decide it: every particle is tested


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("live")
    write_lattice(root / "lat.motes", n=10_000)
    write_vpic(root / "big.motes", 300_000)
    return str(root / "lat.motes"), str(root / "big.motes")


def heavy_cells(count: int = 400) -> str:
    """Many cells over everything: selected one after the other, they take many seconds."""
    return ";".join(["-1e3,-1e3,-1e3,1e3,1e3,1e3,0"] * count)


def test_requests_as_written(datasets, tmp_path):
    lat, _ = datasets
    app_dir = tmp_path / "app"
    (app_dir / "assets").mkdir(parents=True)
    (app_dir / "index.html").write_text("<!doctype html>app")
    (app_dir / "assets" / "a.js").write_text("ok")
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    with LiveServer(create_app(Config(datasets=[(None, lat)], app_dir=str(app_dir)), opener=motes.open)) as live:
        for target in ("/api/v1/datasets/../../../etc/passwd", "/api/v1/datasets/..%2f..%2fetc%2fpasswd",
                       "/api/v1/datasets/%2e%2e/steps/0/species/particles",
                       "/api/v1/datasets/lat/steps/0/species/..%2f..%2fmanifest.json",
                       "/api/v1/datasets/lat/steps/0/species/%2e%2e",
                       "/assets/../secret.txt", "/assets/..%2fsecret.txt", "/assets/%2e%2e/secret.txt",
                       "/assets/%2e%2e%2f%2e%2e%2fsecret.txt", "/assets/..%5csecret.txt", "/../secret.txt",
                       "/%2e%2e/secret.txt"):
            status, headers, body = raw_request(live.port, target)
            assert status in (400, 404) and b"TOP SECRET" not in body and b"root:" not in body, target
        assert raw_request(live.port, "/assets/a.js")[2] == b"ok"
        status, _, body = raw_request(live.port, SP.format("lat") + "?where=" + "x%3E1" * 4000)
        assert status == 414 and b"too_large" in body
        status, _, body = raw_request(live.port, SP.format("lat"), headers={"Content-Length": "5"}, body=b"hello")
        assert status == 413 and b"no body" in body
        status, _, _ = raw_request(live.port, SP.format("lat"), method="DELETE")
        assert status == 405
        status, headers, body = raw_request(live.port, SP.format("lat"))
        assert status == 200 and headers["x-content-type-options"] == "nosniff"
        assert not any(k.startswith("access-control") for k in headers)


def test_query_timeout_gives_408_quickly(datasets):
    _, big = datasets
    limits = Limits(query_timeout=0.3, max_points=10 ** 9)
    with LiveServer(create_app(Config(datasets=[(None, big)], limits=limits, workers=1), opener=motes.open)) as live:
        t0 = time.monotonic()
        status, _, body = raw_request(live.port, SP.format("big") + f"/points?cells={heavy_cells()}&where={HEAVY}"
                                      .replace(" ", "%20").replace("+", "%2B"), timeout=60)
        elapsed = time.monotonic() - t0
        assert status == 408 and b'"kind": "timeout"' in body and b"--query-timeout" in body
        assert elapsed < 3.0, elapsed  # the whole query would take many seconds
        # The worker is free again at once.
        status, _, _ = raw_request(live.port, SP.format("big") + "/points?budget=1000")
        assert status == 200


def test_a_client_that_disconnects_frees_its_worker(datasets, caplog):
    _, big = datasets
    limits = Limits(query_timeout=120, max_points=10 ** 9)
    target = (SP.format("big") + f"/points?cells={heavy_cells()}&where={HEAVY}").replace(" ", "%20").replace("+", "%2B")
    with caplog.at_level(logging.INFO, logger="motes.server"):
        with LiveServer(create_app(Config(datasets=[(None, big)], limits=limits, workers=1), opener=motes.open)) as live:
            s = socket.create_connection(("127.0.0.1", live.port))
            s.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            time.sleep(0.5)  # the query is running on the one worker
            s.close()
            t0 = time.monotonic()
            status, _, _ = raw_request(live.port, SP.format("big") + "/points?budget=1000", timeout=60)
            elapsed = time.monotonic() - t0
            assert status == 200
            assert elapsed < 5.0, elapsed  # not behind the abandoned query (many seconds)
            deadline = time.monotonic() + 5
            while "client disconnected" not in caplog.text and time.monotonic() < deadline:
                time.sleep(0.05)
    assert "the client disconnected; its query was stopped" in caplog.text


def test_fifty_viewer_clients_get_no_error(datasets):
    _, big = datasets
    proc, base = start_cli_server([big, "--workers", "2"])
    try:
        results = asyncio.run(viewer_load(base, "big", 0, "particles", clients=50, seconds=5))
    finally:
        proc.terminate()
        proc.wait(10)
    errors = [r for r in results if r[1] != 200]
    assert len(results) > 50 and not errors, errors[:5]
    assert {k for k, _, _ in results} == {"describe", "points", "histogram", "histogram2d"}


def test_updates_long_poll_answers_when_a_step_is_published(tmp_path):
    """/updates: at once without after= or when a newer step exists; else held until a writer
    publishes one (answered within the poll interval), or answered empty after wait=."""
    import json
    import threading
    import urllib.request

    import motes
    from server_util import SMALL, lattice_data

    path = tmp_path / "run.motes"
    motes.write(path, lattice_data(1000, 1), **SMALL)
    with LiveServer(create_app(Config(datasets=[("run", str(path))]), opener=motes.open)) as live:
        def get(query):
            t0 = time.monotonic()
            with urllib.request.urlopen(f"{live.url}/api/v1/datasets/run/updates{query}", timeout=30) as r:
                return json.loads(r.read()), time.monotonic() - t0

        body, _ = get("")
        run_id = motes.open(path).id
        assert body == {"name": "run", "id": run_id, "steps": [0], "newer": True}
        body, took = get("?after=0&wait=0.4")
        assert body["newer"] is False and body["steps"] == [0] and took >= 0.35

        def later():
            time.sleep(0.5)
            with motes.Writer(path, **SMALL) as w:
                w.write_step(4, lattice_data(1000, 2))

        t = threading.Thread(target=later)
        t.start()
        body, took = get("?after=0&wait=20")
        t.join()
        assert body == {"name": "run", "id": run_id, "steps": [0, 4], "newer": True} and 0.4 < took < 10
        for query, message in (("?wait=61", b"wait must be in"), ("?after=x", b"not an integer"),
                               ("?since=0", b"unknown parameter")):
            status, _, text = raw_request(live.port, "/api/v1/datasets/run/updates" + query)
            assert status == 400 and message in text, query
