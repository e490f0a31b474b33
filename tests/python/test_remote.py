"""Datasets read in place from an S3 API (moto's server mode) and from a web server (Debian's
nginx), both started here on 127.0.0.1, nginx also behind a proxy that adds 20 ms per request:
every query, progressive read, histogram, field read, track and verify answers exactly as on
the local copy; a query's requests come in a few round trips; errors name the URL."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import motes
import motes.remote
from needs import need

need("obstore", "obstore: pip install 'motes[remote]'")
from remote_util import LatencyProxy, MotoS3, Nginx  # noqa: E402

N = 150_000


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    root = tmp_path_factory.mktemp("remote")
    path = str(root / "www" / "run.motes")
    rng = np.random.default_rng(3)
    with motes.Writer(path, sync=False) as w:
        for s in (0, 1):
            cols = motes.synth.vpic(N, seed=s, with_id=True)
            rho = rng.random((9, 10, 11)).astype(np.float32)
            w.write_step(s, cols, time=0.5 * s, fields={"rho": motes.Field(rho, origin=(0, 0, 0), spacing=(20, 10, 5))})
    return path


@pytest.fixture(scope="module")
def s3(local):
    server = MotoS3()
    old = {k: os.environ.get(k) for k in server.env()}
    os.environ.update(server.env())
    try:
        yield server.upload(local, "sim/run.motes")
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


@pytest.fixture(scope="module")
def web(local):
    server = Nginx(os.path.dirname(local))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def slow_web(web):
    proxy = LatencyProxy(web.url, 0.02)
    yield proxy
    proxy.stop()


def by_id(table):
    order = np.argsort(np.asarray(table["id"]))
    return {c: np.asarray(table[c])[order] for c in table}


def same(a, b):
    a, b = by_id(a), by_id(b)
    return a.keys() == b.keys() and all(np.array_equal(a[c], b[c], equal_nan=True) for c in a)


@pytest.fixture(params=["s3", "nginx", "nginx+20ms"])
def remote(request, s3, web, slow_web):
    return {"s3": s3, "nginx": web.url + "/run.motes", "nginx+20ms": slow_web.url + "/run.motes"}[request.param]


def test_queries_answer_as_on_the_local_copy(local, remote):
    here, there = motes.open(local), motes.open(remote)
    assert there.remote and not here.remote
    assert there.steps == here.steps and there.times == here.times
    assert there.schema() == here.schema() and there.bounds() == here.bounds()
    rng = np.random.default_rng(1)
    lo, hi = here.bounds(1)
    for _ in range(4):
        a, b = np.sort(rng.uniform(lo, hi, (2, 3)), axis=0)
        box = [*a, *b]
        assert same(there.query(box=box, step=1), here.query(box=box, step=1))
    for where in ("energy > 2", "ux < -0.5 and x > 100", "id < 500 or id > 149000"):
        assert same(there.query(where, step=0), here.query(where, step=0))
        assert there.count(where) == here.count(where)
    parts = [there.query(quality=(k / 4, (k + 1) / 4), step=1) for k in range(4)]
    ids = np.concatenate([np.asarray(p["id"]) for p in parts])
    assert len(ids) == len(np.unique(ids)) == N  # progressive reads: every particle once
    h1, e1 = there.histogram("energy", bins=32, range=(0, 4))
    h2, e2 = here.histogram("energy", bins=32, range=(0, 4))
    assert np.array_equal(h1, h2) and np.array_equal(e1, e2)
    assert np.array_equal(there.field("rho", 1).read(level=1), here.field("rho", 1).read(level=1))
    t1, t2 = there.track([5, 77, 1234], columns=["x", "energy"]), here.track([5, 77, 1234], columns=["x", "energy"])
    assert np.array_equal(t1.arrays["energy"], t2.arrays["energy"], equal_nan=True)
    assert there.verify() == here.verify()


def test_a_query_takes_a_few_round_trips(slow_web):
    """Each query's reads are planned, coalesced and asked at once: a handful of round trips,
    at 20 ms each, however many ranges it reads."""
    ds = motes.open(slow_web.url + "/run.motes")
    lo, hi = (np.asarray(b, dtype=float) for b in ds.bounds(0))
    c = (lo + hi) / 2
    before = motes.remote.counters()
    requests = slow_web.requests
    t = ds.query(box=[*(c - (hi - lo) * 0.1), *(c + (hi - lo) * 0.1)], step=0)
    after = motes.remote.counters()
    assert len(t) > 0
    assert after["calls"] - before["calls"] <= 6  # round trips: header blocks, then the plan's ranges
    assert slow_web.requests - requests >= after["calls"] - before["calls"]


def test_errors_name_the_url(s3, web):
    with pytest.raises(motes.NotFoundError, match="no_such.motes/manifest.json"):
        motes.open(web.url + "/no_such.motes")
    with pytest.raises(motes.NotFoundError, match="s3://data/sim/nothing.motes"):
        motes.open("s3://data/sim/nothing.motes")
    with pytest.raises(motes.UsageError, match="does not name a dataset"):
        motes.open("s3://")


def test_the_command_line_reads_remote_datasets(local, s3, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    info = subprocess.run([sys.executable, "-m", "motes", "info", s3], capture_output=True, text=True, env=env,
                          timeout=120)
    assert info.returncode == 0, info.stderr
    assert f"{N:,}" in info.stdout or str(N) in info.stdout
    out = tmp_path / "copy.npz"
    conv = subprocess.run([sys.executable, "-m", "motes", "convert", s3, str(out), "--step", "1", "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert conv.returncode == 0, conv.stderr
    got = dict(np.load(out))
    want = motes.open(local).query(step=1)
    order_a, order_b = np.argsort(got["id"]), np.argsort(np.asarray(want["id"]))
    assert np.array_equal(got["energy"][order_a], np.asarray(want["energy"])[order_b])


def test_motes_serve_serves_a_bucket(local, s3):
    """The viewer's server over a bucket: the dataset, a species and a histogram as over the
    local copy."""
    import json
    import urllib.request

    need("starlette")
    need("uvicorn")
    from motes.server import Config, create_app
    from server_util import LiveServer

    answers = []
    for path in (local, s3):
        with LiveServer(create_app(Config(datasets=[("run", path)]))) as live:
            def get(rel):
                with urllib.request.urlopen(f"{live.url}/api/v1/datasets/run{rel}", timeout=60) as r:
                    return json.loads(r.read())

            answers.append((get("")["steps"], get("/steps/1/species/particles")["count"],
                            get("/steps/1/species/particles/histogram?x=energy&bins=16&range=0,4")["counts"]))
    assert answers[0] == answers[1] and answers[0][1] == N


def test_a_remote_dataset_is_followed_by_polling(tmp_path):
    """A step written into the folder a web server serves appears to a remote follower."""
    import threading
    import time

    www = tmp_path / "www"
    www.mkdir()
    server = Nginx(str(www))
    try:
        motes.write(www / "live.motes", motes.synth.uniform(1000, seed=0), sync=False)
        ds = motes.open(server.url + "/live.motes")

        def later():
            time.sleep(0.3)
            motes.write(www / "live.motes", motes.synth.uniform(500, seed=1), step=1, sync=False)

        t = threading.Thread(target=later)
        t.start()
        step = ds.wait_for_step(timeout=20)
        t.join()
        assert step.index == 1 and ds.count_total(1) == 500
    finally:
        server.stop()


def test_motes_serve_sees_steps_published_on_the_web_server(tmp_path):
    """The server's long poll over a remote dataset answers when a step appears behind nginx."""
    import json
    import threading
    import time
    import urllib.request

    need("starlette")
    need("uvicorn")
    from motes.server import Config, create_app
    from server_util import LiveServer

    www = tmp_path / "www"
    www.mkdir()
    motes.write(www / "live.motes", motes.synth.uniform(1000, seed=0), sync=False)
    server = Nginx(str(www))
    try:
        with LiveServer(create_app(Config(datasets=[("live", server.url + "/live.motes")]))) as live:
            def later():
                time.sleep(0.5)
                motes.write(www / "live.motes", motes.synth.uniform(500, seed=1), step=1, sync=False)

            t = threading.Thread(target=later)
            t.start()
            with urllib.request.urlopen(f"{live.url}/api/v1/datasets/live/updates?after=0&wait=20", timeout=30) as r:
                body = json.loads(r.read())
            t.join()
            assert body["steps"] == [0, 1] and body["newer"] is True
    finally:
        server.stop()
