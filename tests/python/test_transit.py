"""In transit (motes.transit, ``motes ingest``): real producers writing openPMD through
openpmd-api, over ADIOS2 SST and into a BP5 file being written, each followed by ``motes
ingest`` and a ``motes.follow`` reader, every step bit-exact with what the producer wrote;
--every and restarts; SIGTERM between steps; SIGKILL at random moments (committed steps
whole, a restart resumes); a producer that disappears; ImpactX's own monitor file ingested
bit-exact; the in-process examples, ImpactX's and FBPIC's (FBPIC's checked bit for bit
against its own openPMD output of the same run). Producers, ingests, readers and the codes
are processes started here (tests/python/transit_producer.py, bench/gen_impactx.py)."""

import os
import random
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from impactx_util import assert_holds_the_monitor, finish_impactx, openpmd_species, start_impactx
from needs import need, missing

import motes
from transit_producer import step_data, step_field

io = need("openpmd_api")
if not io.variants.get("adios2"):
    missing("openpmd-api was built without ADIOS2 (its pip wheels have it)")

PRODUCER = os.path.join(os.path.dirname(__file__), "transit_producer.py")
N = 20_000


def env():
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


def producer(cwd, path, engine, steps, n=N, pause=0.1):
    return subprocess.Popen([sys.executable, PRODUCER, path, engine, str(steps), str(n), str(pause)], cwd=cwd,
                            env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def ingest(cwd, *args):
    return subprocess.Popen([sys.executable, "-m", "motes", "ingest", *args, "--no-progress"], cwd=cwd, env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p, timeout=120):
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


def check_step(ds, k, n=N):
    """Step k of the dataset holds exactly what the producer wrote (rows in any order)."""
    want = step_data(k, n)
    t = ds.query(step=k)
    order = np.argsort(t["id"])
    np.testing.assert_array_equal(t["id"][order], want["id"])  # ids are sorted as written
    for c in "xyz":
        np.testing.assert_array_equal(t[c][order], want[c])
    assert t["momentum_x"].dtype == np.float32
    np.testing.assert_array_equal(t["momentum_x"][order], want["ux"])
    assert ds.times[ds.steps.index(k)] == 0.5 * k
    np.testing.assert_array_equal(ds.field("rho", k).read(), step_field(k).transpose(2, 1, 0))


def wait_for(path, timeout=60):
    deadline = time.monotonic() + timeout
    while not os.path.exists(os.path.join(path, "manifest.json")):
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)


def test_an_sst_stream_is_ingested_and_followed_bit_exact(tmp_path):
    steps = 6
    ing = ingest(tmp_path, "sim.sst", "run.motes", "--timeout", "60")
    prod = producer(tmp_path, "sim.sst", "sst", steps)
    path = str(tmp_path / "run.motes")
    wait_for(path)
    seen = []
    for st in motes.follow(path, timeout=60):  # a reader in this process, as the steps are committed
        check_step(st.dataset, st.index)
        seen.append(st.index)
        if len(seen) == steps:
            break
    assert seen == list(range(steps))
    rc, out, err = finish(ing)
    assert rc == 0, err
    assert f"{steps} steps written, 0 skipped" in out and "the producer ended the stream" in out
    assert finish(prod)[0] == 0
    assert motes.open(path).verify()["steps"] == steps


def test_a_bp5_file_being_written_every_other_step(tmp_path):
    steps = 6
    prod = producer(tmp_path, "sim.bp5", "bp5", steps, pause=0.3)
    rc, out, err = finish(ingest(tmp_path, "sim.bp5", "run.motes", "--timeout", "60", "--every", "2"))
    assert rc == 0, err
    assert finish(prod)[0] == 0
    ds = motes.open(tmp_path / "run.motes")
    assert ds.steps == [0, 2, 4]
    assert [(k.index, k.reason) for k in ds.skipped] == [(1, "every"), (3, "every"), (5, "every")]
    for k in ds.steps:
        check_step(ds, k)
    for k in (1, 3, 5):  # each step not written is named
        assert f"step {k} not written: one step in 2 is" in err


def test_a_restarted_ingest_continues_after_the_last_step(tmp_path):
    prod = producer(tmp_path, "sim.bp5", "bp5", 6, pause=0)
    assert finish(prod)[0] == 0
    stop = threading.Event()

    def after_three(report):
        if len(report.written) >= 3:
            stop.set()

    first = motes.ingest(str(tmp_path / "sim.bp5"), str(tmp_path / "run.motes"), timeout=30, stop=stop,
                         progress=after_three)
    assert first.ended == "stopped" and first.written == list(range(len(first.written)))
    again = motes.ingest(str(tmp_path / "sim.bp5"), str(tmp_path / "run.motes"), timeout=30)
    assert again.already == first.written and again.written == list(range(len(first.written), 6))
    ds = motes.open(tmp_path / "run.motes")
    assert ds.steps == list(range(6))
    for k in ds.steps:
        check_step(ds, k)


def test_sigterm_ends_the_ingest_between_steps(tmp_path):
    ing = ingest(tmp_path, "sim.sst", "run.motes", "--timeout", "60")
    prod = producer(tmp_path, "sim.sst", "sst", 200, pause=0.2)
    path = str(tmp_path / "run.motes")
    wait_for(path)
    while len(motes.open(path).steps) < 3:
        time.sleep(0.05)
    ing.send_signal(signal.SIGTERM)
    rc, out, err = finish(ing, timeout=60)
    prod.kill()
    prod.communicate()
    assert rc == 0, err
    assert "SIGTERM: ending after the steps taken are committed" in err and "; stopped" in out
    ds = motes.open(path)
    assert ds.steps == list(range(len(ds.steps))) and len(ds.steps) >= 3
    assert ds.verify()["steps"] == len(ds.steps)
    for k in ds.steps:
        check_step(ds, k)


def test_sigkill_at_random_moments_leaves_whole_steps_and_a_restart_resumes(tmp_path):
    steps, n = 12, 60_000
    assert finish(producer(tmp_path, "sim.bp5", "bp5", steps, n=n, pause=0))[0] == 0
    path = str(tmp_path / "run.motes")
    rng = random.Random(7)
    for _ in range(3):
        ing = ingest(tmp_path, "sim.bp5", "run.motes", "--timeout", "30")
        time.sleep(rng.uniform(0.3, 2.0))
        ing.kill()
        ing.communicate()
        if os.path.exists(os.path.join(path, "manifest.json")):
            ds = motes.open(path)
            assert ds.steps == list(range(len(ds.steps)))  # committed steps, in order, none torn
            assert ds.verify()["steps"] == len(ds.steps)
    rc, out, err = finish(ingest(tmp_path, "sim.bp5", "run.motes", "--timeout", "30"))
    assert rc == 0, err
    ds = motes.open(path)
    assert ds.steps == list(range(steps))
    for k in ds.steps:
        check_step(ds, k, n)


def test_a_producer_that_disappears_ends_the_ingest(tmp_path):
    ing = ingest(tmp_path, "sim.sst", "run.motes", "--timeout", "60")
    prod = producer(tmp_path, "sim.sst", "sst", 500, pause=0.2)
    path = str(tmp_path / "run.motes")
    wait_for(path)
    while len(motes.open(path).steps) < 2:
        time.sleep(0.05)
    prod.kill()
    prod.communicate()
    rc, out, err = finish(ing, timeout=120)
    assert rc == 1, (out, err)
    assert "the stream broke off" in out and "every step before it is committed" in err
    ds = motes.open(path)
    assert len(ds.steps) >= 2 and ds.verify()["steps"] == len(ds.steps)
    for k in ds.steps:
        check_step(ds, k)


def test_an_ingest_names_a_missing_producer_and_bad_options(tmp_path):
    rc, out, err = finish(ingest(tmp_path, "nobody.sst", "run.motes", "--timeout", "1"), timeout=60)
    assert rc == 1 and "nobody.sst: cannot open the openPMD stream" in err
    assert not os.path.exists(tmp_path / "run.motes")
    with pytest.raises(motes.UsageError, match="every must be"):
        motes.ingest("x.sst", str(tmp_path / "r.motes"), every=0)
    with pytest.raises(motes.UsageError, match="on_backlog must be"):
        motes.ingest("x.sst", str(tmp_path / "r.motes"), on_backlog="drop")


def test_the_impactx_example_writes_each_pass_in_the_background(tmp_path):
    """examples/impactx_live.py: ImpactX hands its bunch to motes.Writer(background=True) from
    a Programmable element at every pass; each pass is a step, published while ImpactX runs."""
    need("impactx", "pip install impactx-noacc")
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "impactx_live.py")
    out = str(tmp_path / "beam.motes")
    run = subprocess.run([sys.executable, example, "--out", out, "--particles", "3000", "--cells", "1"], cwd=tmp_path,
                         env=env(), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "5 passes of 3,000 particles" in run.stdout
    ds = motes.open(out)
    assert len(ds.steps) == 5 and ds.times == sorted(ds.times) and ds.times[0] == 0.0
    assert np.allclose(np.diff(ds.times), [0.25, 1.0, 0.5, 1.0])  # s: the elements' lengths
    for k in ds.steps:
        t = ds.query(step=k)
        assert len(t) == 3000 and len(np.unique(t["id"])) == 3000
        assert np.isfinite(t["x"]).all() and np.isfinite(t["z"]).all()
        st = ds.step(k)
        assert st.attributes["time_unit"] == "m" and st.attributes["reference_particle"]["beam"]["s"] == st.time


def test_impactx_output_ingests_exactly(tmp_path):
    """ImpactX's finished monitor file (HDF5, group-based) through ``motes ingest``: every pass
    bit-exact against openpmd-api's own read of it."""
    src = finish_impactx(start_impactx(tmp_path / "run"))
    dst = str(tmp_path / "beam.motes")
    code, out, err = finish(ingest(tmp_path, src, dst, "--timeout", "30"))
    assert code == 0, err
    assert "5 steps written" in out and "the producer ended the stream" in out
    assert_holds_the_monitor(dst, *openpmd_species(src))


def test_the_fbpic_example_writes_each_dump_as_fbpic_writes_it(tmp_path):
    """examples/fbpic_live.py: FBPIC drives a small laser wakefield and a diagnostic of motes'
    own hands the electrons to motes.Writer(background=True) every 50 iterations, while FBPIC's
    own ParticleDiagnostic writes the same dumps: ``motes convert`` of FBPIC's files and the
    live dataset hold the same steps, times and columns, bit for bit."""
    need("fbpic", "pip install fbpic")
    from motes.convert import convert

    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "fbpic_live.py")
    out, h5 = str(tmp_path / "lwfa.motes"), str(tmp_path / "fbpic")
    run = subprocess.run([sys.executable, example, "--out", out, "--iterations", "100", "--period", "50", "--nz", "200",
                          "--nr", "32", "--openpmd", h5], cwd=tmp_path, env=env(), capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "3 dumps in" in run.stdout
    converted = str(tmp_path / "converted.motes")
    convert(os.path.join(h5, "hdf5", "data%08T.h5"), converted)
    live, ref = motes.open(out), motes.open(converted)
    assert live.steps == ref.steps == [0, 50, 100]
    for k in live.steps:
        assert live.step(k).time == ref.step(k).time
        a, b = live.query(step=k, species="electrons"), ref.query(step=k, species="electrons")
        assert len(a["id"]) == len(b["id"]) > 1000 and sorted(a) == sorted(b)
        oa, ob = np.argsort(a["id"]), np.argsort(b["id"])
        for c in a:
            assert a[c].dtype == b[c].dtype, c
            np.testing.assert_array_equal(a[c][oa], b[c][ob], err_msg=f"iteration {k}, {c}")
