"""ImpactX's real monitor output for the tests (bench/gen_impactx.py runs ImpactX itself), what
openpmd-api reads of it, and the check that a motes dataset holds exactly that."""

import os
import subprocess
import sys

import numpy as np

from needs import need

import motes

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GENERATOR = os.path.join(ROOT, "bench", "gen_impactx.py")


def start_impactx(out, particles=4000, slices=2):
    """ImpactX writing its BeamMonitor in ``out`` (5 passes), as a process: the Popen."""
    need("impactx", "pip install impactx-noacc")
    return subprocess.Popen([sys.executable, GENERATOR, "--out", str(out), "--particles", str(particles), "--slices",
                             str(slices)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_impactx(run, timeout=600):
    """The monitor file a finished ImpactX run wrote."""
    out, err = run.communicate(timeout=timeout)
    assert run.returncode == 0, err[-2000:]
    return out.strip().splitlines()[-1]


def openpmd_species(path):
    """{iteration: {record/component: values}} as openpmd-api reads the beam (constants as
    (value, dtype)), and each iteration's time."""
    io = need("openpmd_api")
    series = io.Series(path, io.Access.read_linear)  # any encoding, variable-based too
    out, times = {}, {}
    for it in series.read_iterations():
        k = it.iteration_index
        beam = it.particles["beam"]
        got = {}
        for rname, rec in beam.items():
            members = [("", rec[io.Record_Component.SCALAR])] if rec.scalar else list(rec.items())
            for cname, rc in members:
                label = rname + ("/" + cname if cname else "")
                got[label] = (rc.get_attribute("value"), rc.dtype) if rc.constant else rc.load_chunk()
        series.flush()
        out[int(k)], times[int(k)] = got, it.time
        it.close()
    series.close()
    return out, times


def assert_holds_the_monitor(dst, want, times, particles=4000):
    """The motes dataset ``dst`` holds ImpactX's monitor passes ``want`` bit for bit: every
    record as a column (position x, y, t on x, y, z with the reference particle's offset
    added), the path length s as each step's time, the reference particle in its attributes."""
    ds = motes.open(dst)
    assert ds.steps == sorted(want)
    for k, records in want.items():
        st = ds.step(k)
        assert st.time == times[k]  # the path length s, in metres
        assert st.attributes["time_unit"] == "m" and "path length" in st.attributes["time_quantity"]
        ref = st.attributes["reference_particle"]["beam"]
        assert ref["s"] == times[k] and ref["gamma"] > 1000
        t = ds.query(step=k)
        order = np.argsort(t["id"])
        ids = records["id"]
        by_id = np.argsort(ids)
        np.testing.assert_array_equal(t["id"][order], ids[by_id])
        for label, v in records.items():
            if isinstance(v, tuple):  # a constant: positionOffset (the reference particle's t)
                continue
            rname, _, cname = label.partition("/")
            if rname == "position":
                offset = records[f"positionOffset/{cname}"]
                col = {"x": "x", "y": "y", "t": "z"}[cname]
                np.testing.assert_array_equal(t[col][order], v[by_id] + offset[0])  # x = position + offset
                if offset[0] != 0:
                    np.testing.assert_array_equal(t[f"position_{cname}"][order], v[by_id])
                continue
            col = label.replace("/", "_")
            assert t[col].dtype == v.dtype, col
            np.testing.assert_array_equal(t[col][order], v[by_id], err_msg=label)
    assert ds.count_total(min(want)) == particles
