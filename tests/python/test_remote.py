"""Datasets read in place from an S3 API (moto's server mode) and from a web server (Debian's
nginx), both started here on 127.0.0.1, nginx also behind a proxy that adds 20 ms per request:
every query, progressive read, histogram, field read, track and verify answers exactly as on
the local copy; a query's requests come in a few round trips; errors name the URL. A server
that stalls costs one read timeout, and a query's deadline or cancellation stops its reads."""

import os
import re
import shutil
import subprocess
import sys
import threading
import time

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


def test_a_querys_counters_are_the_requests_really_sent(web):
    """read_requests counts what the file asked of the server, not the plan: the store is
    asked at least as many ranges; the same query again, its decoded blocks dropped but the
    bytes held by the remote file, sends none."""
    ds = motes.open(web.url + "/run.motes")
    where = "energy > 1.5"
    ds.count(step=0)  # the file opened: its head and directory read
    before = motes.remote.counters()
    first = ds.query(where, step=0, columns=["id", "energy"])
    asked = motes.remote.counters()["ranges"] - before["ranges"]
    assert 0 < first.counters["read_requests"] <= asked
    assert first.counters["read_bytes"] > 0
    motes._core.clear_block_cache()
    before = motes.remote.counters()
    again = ds.query(where, step=0, columns=["id", "energy"])
    assert motes.remote.counters()["ranges"] == before["ranges"]
    assert again.counters["read_requests"] == 0 and again.counters["read_bytes"] == 0
    assert same(first, again)


def test_errors_name_the_url(s3, web):
    with pytest.raises(motes.NotFoundError, match="no_such.motes/manifest.json"):
        motes.open(web.url + "/no_such.motes")
    with pytest.raises(motes.NotFoundError, match="s3://data/sim/nothing.motes"):
        motes.open("s3://data/sim/nothing.motes")
    with pytest.raises(motes.UsageError, match="does not name a dataset"):
        motes.open("s3://")


def test_a_remote_dataset_is_not_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where a URL taken for a relative path would land
    columns = {c: np.zeros(10, np.float32) for c in "xyz"}
    for url in ("s3://data/new.motes", "https://example.org/new.motes"):
        with pytest.raises(motes.UsageError, match="read-only"):
            motes.write(url, columns)
    assert list(tmp_path.iterdir()) == []


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
        with LiveServer(create_app(Config(datasets=[("run", path)]), opener=motes.open)) as live:
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
        with LiveServer(create_app(Config(datasets=[("live", server.url + "/live.motes")]), opener=motes.open)) as live:
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


# ---- servers that stall or refuse: timeouts, deadlines, cancellation, clear errors ----------------
@pytest.fixture
def stalling(local, monkeypatch):
    """A web server over the local copy that stalls once told to, its dataset open; remote
    reads time out after 1 s unless a test says otherwise (a new server: a new store)."""
    from remote_util import StallingServer

    monkeypatch.setenv("MOTES_REMOTE_READ_TIMEOUT", "1")
    servers = []

    def start(etag=True):
        server = StallingServer(os.path.dirname(local), etag=etag)
        servers.append(server)
        return server, server.url + "/run.motes"

    yield start
    for server in servers:
        server.stop()


def stalled_open(stalling, monkeypatch):
    """A dataset opened on a stalling server, which then stalls, with a read timeout (120 s)
    far beyond what a deadline or a token should take: (server, url, dataset, time stalled)."""
    monkeypatch.setenv("MOTES_REMOTE_READ_TIMEOUT", "120")
    server, url = stalling()
    ds = motes.open(url)
    server.stall.set()
    return server, url, ds, time.monotonic()


def cancelled_while_stalled(server, read):
    """Runs read(token) in a thread until the server holds one of its requests stalled, then
    cancels the token: the motes error it ended with (within 60 s)."""
    token, outcome = motes.CancelToken(), {}

    def run():
        try:
            read(token)
        except motes.MotesError as e:
            outcome["error"] = e

    stalled = server.stalled
    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while server.stalled == stalled:
        assert time.monotonic() < deadline and thread.is_alive(), outcome
        time.sleep(0.05)
    token.cancel()
    thread.join(60)
    assert not thread.is_alive(), outcome
    return outcome.get("error")


@pytest.mark.parametrize("etag", [True, False])
def test_a_server_that_stalls_costs_one_read_timeout(stalling, etag):
    """A server that sends an answer's head (with an ETag, as nginx and S3 do, or without)
    and then nothing: the read fails after the read timeout, not after obstore's retries
    (181 s with an ETag, 30 s without), and its error names the URL, the range, the timeout."""
    server, url = stalling(etag)
    ds = motes.open(url)
    server.stall.set()
    t0 = time.monotonic()
    with pytest.raises(motes.StorageError) as caught:
        ds.query("energy > 2", step=1)
    elapsed = time.monotonic() - t0
    message = str(caught.value)
    assert server.stalled >= 1
    assert re.search(re.escape(url) + r"/\S+: .*bytes \d+-\d+: no bytes came for 1 s \(MOTES_REMOTE_READ_TIMEOUT\)",
                     message), message
    assert "Debug" not in message and "reqwest" not in message and "{" not in message, message
    assert elapsed < 20, elapsed  # one timeout of 1 s, a few at most; never obstore's 30 s or 3 min
    with pytest.raises(motes.StorageError, match=re.escape(url) + r"/manifest.json: .*bytes 0-\d+: no bytes came"):
        motes.open(url)


def test_a_refusing_server_is_named_in_words(stalling):
    server, url = stalling()
    server.status = 403
    with pytest.raises(motes.StorageError) as caught:
        motes.open(url)
    message = str(caught.value)
    assert re.search(re.escape(url) + r"/manifest.json: .*bytes 0-\d+: the server answered 403 Forbidden", message)
    assert "Debug" not in message and "{" not in message, message


def test_a_deadline_and_a_cancel_token_reach_remote_reads(stalling, monkeypatch):
    """Reads inside motes.remote.bounded stop at its deadline or when its token is cancelled,
    long before the read timeout (120 s here)."""
    server, url, ds, t0 = stalled_open(stalling, monkeypatch)
    with pytest.raises(motes.MotesError, match=r"bytes \d+-\d+.*stopped at its deadline"):
        with motes.remote.bounded(deadline=time.monotonic() + 1):
            ds.query("energy > 2", step=1, threads=1)
    assert server.stalled >= 1 and time.monotonic() - t0 < 60

    def query(token):
        with motes.remote.bounded(cancel=token):
            ds.query("ux < 0", step=0, threads=1)

    assert "cancelled" in str(cancelled_while_stalled(server, query))


@pytest.mark.parametrize("threads", [1, 2])
def test_a_querys_own_timeout_and_token_reach_its_remote_reads(stalling, monkeypatch, threads):
    """ds.query(timeout=) and cancel= stop the query's remote reads, on its helper threads
    too (the core hands each read its query's bounds), with CancelledError naming the URL,
    long before the read timeout (120 s here)."""
    server, url, ds, t0 = stalled_open(stalling, monkeypatch)
    with pytest.raises(motes.CancelledError, match=re.escape(url) + r"/\S+: .*stopped at its deadline"):
        ds.query("energy > 2", step=1, threads=threads, timeout=1)
    assert server.stalled >= 1 and time.monotonic() - t0 < 30

    error = cancelled_while_stalled(server, lambda token: ds.count("ux < 0", step=0, threads=threads, cancel=token))
    assert isinstance(error, motes.CancelledError), error


def test_the_servers_query_timeout_reaches_remote_reads(stalling, monkeypatch):
    """motes serve over a stalling server answers 408 at --query-timeout (1 s: the manifest's
    fetch, then the query, each stopped so), not after the read timeout (120 s)."""
    import json
    import urllib.error
    import urllib.request

    need("starlette")
    need("uvicorn")
    from motes.live import REMOTE_POLL
    from motes.server import Config, Limits, create_app
    from server_util import LiveServer

    monkeypatch.setenv("MOTES_REMOTE_READ_TIMEOUT", "120")
    server, url = stalling()
    # One query thread per query (workers = cores): the query's reads are made in its own thread.
    config = Config(datasets=[("run", url)], workers=os.cpu_count() or 1, limits=Limits(query_timeout=1.0))
    with LiveServer(create_app(config, opener=motes.open)) as live:
        species = f"{live.url}/api/v1/datasets/run/steps/1/species/particles"
        with urllib.request.urlopen(species, timeout=60) as r:
            assert json.loads(r.read())["count"] == N
        server.stall.set()
        time.sleep(REMOTE_POLL + 0.1)  # the server fetches the manifest again first: that read is bounded too
        t0 = time.monotonic()
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(species + "/histogram?x=energy&bins=16", timeout=100)
        assert caught.value.code == 408, caught.value.read()
        assert json.loads(caught.value.read())["error"]["kind"] == "timeout"
        assert server.stalled >= 1 and time.monotonic() - t0 < 60


def test_remote_timeouts_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("MOTES_REMOTE_CONNECT_TIMEOUT", "2.5")
    monkeypatch.delenv("MOTES_REMOTE_READ_TIMEOUT", raising=False)
    assert motes.remote.timeouts() == (2.5, motes.remote.TIMEOUTS["read"][1])
    for bad in ("0", "-1", "soon", "inf", "nan"):
        monkeypatch.setenv("MOTES_REMOTE_READ_TIMEOUT", bad)
        with pytest.raises(motes.UsageError, match="MOTES_REMOTE_READ_TIMEOUT"):
            motes.remote.timeouts()
