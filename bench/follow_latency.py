#!/usr/bin/env python3
"""Readers that follow a running simulation: the latency from a step's commit (the writer's
write call returning) to a reader in another process having it, and the writer's stall per
step, for motes (``motes.follow``) against ADIOS2 SST (its sockets transport over loopback)
and BP5 read while its file is written, in one run; each with a reader of the whole step and
with one that wants only a 1 % box.

Usage (from the repository root)::

    python bench/follow_latency.py                 # 1M particles, 40 steps -> bench/results/follow_latency.json
    python bench/follow_latency.py --n 200000 --steps 20 --out /tmp/follow.json

The writer computes for ``--interval`` seconds (a sleep), then writes its step (8 float32
columns of ``synth.vpic``; the positions drift a little each step), ``--steps`` times, and
prints each step's commit time (wall clock, after the write call returned) and its stall
(the write call's duration). The reader prints, per step, when the step became visible to it
(``motes.follow`` yielding it; ADIOS2's ``BeginStep`` returning) and when it held the data:
every column (``all``), or the rows of a box holding about 1 % of the particles (``box``:
a motes box query; ADIOS2 readers get x, y and z whole and keep the rows in the box with
numpy, since an ADIOS2 selection is an index range, not a region of space). Latencies:
reader time - commit time, p50 and p99 over the steps (negative when a reader saw the step
before the writer's call returned: motes publishes, then syncs the directory). motes syncs;
ADIOS2 does not. The benchmark measures; it checks that every reader saw every step and the
box readers the same row counts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import child_results, figure, log, peer, run, touch_memory  # noqa: E402

COMMON = r'''
import json, sys, time
import numpy as np
engine, path, steps, n, interval, box = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \
    float(sys.argv[5]), json.loads(sys.argv[6])
def out(**k):
    print("RESULT " + json.dumps(k), flush=True)
'''

WRITER = COMMON + r'''
import motes
cols = {k: np.ascontiguousarray(v) for k, v in motes.synth.vpic(n, seed=1).items()}
if engine == "motes":
    w = motes.Writer(path, sync=True)
    def write(s):
        w.write_step(s, cols, time=float(s))
    def close():
        w.close()
else:
    from adios2 import bindings as b
    ad = b.ADIOS()
    io = ad.DeclareIO("writer")
    io.SetEngine(engine)
    if engine == "SST":
        io.SetParameters({"DataTransport": "WAN", "RendezvousReaderCount": "1", "QueueLimit": "4",
                          "OpenTimeoutSecs": "60"})
    var = {k: io.DefineVariable(k, v, [n], [0], [n], b.ConstantDims) for k, v in cols.items()}
    eng = io.Open(path, b.Mode.Write)
    def write(s):
        eng.BeginStep()
        for k, v in cols.items():
            eng.Put(var[k], v)
        eng.EndStep()
    def close():
        eng.Close()
for s in range(steps):
    time.sleep(interval)
    cols["x"] += np.float32(1e-4)
    t0 = time.perf_counter()
    write(s)
    stall = time.perf_counter() - t0
    out(step=s, commit=time.time(), stall=stall)
close()
'''

READER = COMMON + r'''
want = sys.argv[7]
x0, y0, z0, x1, y1, z1 = box
if engine == "motes":
    import motes
    for _ in range(600):  # the writer creates the dataset
        if motes._core.DatasetCore.exists(path):
            break
        time.sleep(0.05)
    k = 0
    for st in motes.follow(path, timeout=60, poll=0.01):
        seen = time.time()
        if want == "all":
            t = st.dataset.query(step=st.index)
            rows = len(t)
            for c in t:
                np.asarray(t[c])
        else:
            t = st.dataset.query(box=box, step=st.index)
            rows = len(t)
            for c in t:
                np.asarray(t[c])
        out(step=st.index, seen=seen, data=time.time(), rows=rows)
        k += 1
        if k == steps:
            break
else:
    from adios2 import bindings as b
    ad = b.ADIOS()
    io = ad.DeclareIO("reader")
    io.SetEngine(engine)
    if engine == "SST":
        io.SetParameters({"DataTransport": "WAN", "OpenTimeoutSecs": "60"})
    else:
        io.SetParameters({"OpenTimeoutSecs": "60", "BeginStepPollingFrequencySecs": "0.001"})
    eng = io.Open(path, b.Mode.Read)
    while True:
        status = eng.BeginStep(b.StepMode.Read, 60.0)
        if status != b.StepStatus.OK:
            break
        seen = time.time()
        names = ["x", "y", "z"] if want == "box" else [v for v in io.AvailableVariables()]
        got = {}
        for name in names:
            v = io.InquireVariable(name)
            got[name] = np.empty(v.Shape()[0], dtype=np.float32)
            eng.Get(v, got[name], b.Mode.Deferred)
        eng.PerformGets()
        step = eng.CurrentStep()
        eng.EndStep()
        if want == "box":
            x, y, z = got["x"], got["y"], got["z"]
            keep = (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1) & (z >= z0) & (z <= z1)
            rows = int(keep.sum())
            kept = {c: a[keep] for c, a in got.items()}
        else:
            rows = len(got["x"])
        out(step=step, seen=seen, data=time.time(), rows=rows)
    eng.Close()
'''


def one(engine, want, scratch, args, box):
    path = os.path.join(scratch, f"{engine}-{want}" + (".motes" if engine == "motes" else ".bp"))
    argv = [engine if engine != "BP5-file" else "BP5", path, str(args.steps), str(args.n), str(args.interval),
            json.dumps(box)]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    touch_memory()
    reader = subprocess.Popen([sys.executable, "-c", READER, *argv, want], stdout=subprocess.PIPE, text=True, env=env)
    if engine == "BP5-file":
        time.sleep(0.2)
    writer = subprocess.run([sys.executable, "-c", WRITER, *argv], capture_output=True, text=True, env=env,
                            timeout=1800)
    out, _ = reader.communicate(timeout=600)
    if writer.returncode or reader.returncode:
        raise RuntimeError(f"{engine} {want}: writer {writer.returncode} {writer.stderr[-2000:]}; reader "
                           f"{reader.returncode}")
    w, r = {o["step"]: o for o in child_results(writer.stdout)}, {o["step"]: o for o in child_results(out)}
    if sorted(r) != list(range(args.steps)):
        raise AssertionError(f"{engine} {want}: the reader saw steps {sorted(r)}")
    lat = np.array([r[s]["seen"] - w[s]["commit"] for s in range(args.steps)]) * 1e3
    data = np.array([r[s]["data"] - w[s]["commit"] for s in range(args.steps)]) * 1e3
    stall = np.array([w[s]["stall"] for s in range(args.steps)]) * 1e3
    rows = [r[s]["rows"] for s in range(args.steps)]
    return {"visible_ms": {"p50": float(np.percentile(lat, 50)), "p99": float(np.percentile(lat, 99))},
            "data_ms": {"p50": float(np.percentile(data, 50)), "p99": float(np.percentile(data, 99))},
            "stall_ms": {"p50": float(np.percentile(stall, 50)), "p99": float(np.percentile(stall, 99))},
            "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--interval", type=float, default=0.3, help="seconds of 'compute' (a sleep) before each write")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "follow_latency.json"))
    args = ap.parse_args()
    import motes

    from cold import one_percent_box

    with run(args.out, ".tmp-follow-", n=args.n, steps=args.steps, interval=args.interval) as r:
        cols = motes.synth.vpic(args.n, seed=1)
        box = one_percent_box(cols)
        del cols
        got = {}
        for want in ("all", "box"):
            for engine in ("motes", "SST", "BP5-file"):
                got[engine, want] = res = one(engine, want, r.scratch, args, box)
                log(f"{engine} {want}: visible p50 {res['visible_ms']['p50']:.1f} ms, p99 "
                    f"{res['visible_ms']['p99']:.1f} ms; data p50 {res['data_ms']['p50']:.1f} ms, p99 "
                    f"{res['data_ms']['p99']:.1f} ms; writer stall p50 {res['stall_ms']['p50']:.1f} ms; rows "
                    f"{res['rows'][0]:,}")
        boxes = {e: got[e, "box"]["rows"] for e in ("motes", "SST", "BP5-file")}
        assert boxes["motes"][1:] == boxes["SST"][1:] == boxes["BP5-file"][1:], boxes
        r.sections["runs"] = {f"{e}_{w}": v for (e, w), v in got.items()}
        for want in ("all", "box"):
            m = got["motes", want]
            for q in ("p50", "p99"):
                s = got["SST", want]
                r.figures[f"{want}_{q}"] = figure(
                    f"{want}_{q}", f"commit to a reader in another process holding {'the whole step' if want == 'all' else 'a 1 % box'}"
                    f" ({args.n:,} particles), {q} over {args.steps} steps", m["data_ms"][q], "ms",
                    peers={"sst": peer(s["data_ms"][q], "ms", s["data_ms"][q] / m["data_ms"][q], "SST / motes"),
                           "bp5_file": peer(got["BP5-file", want]["data_ms"][q], "ms",
                                            got["BP5-file", want]["data_ms"][q] / m["data_ms"][q], "BP5 / motes")},
                    ratio=s["data_ms"][q] / m["data_ms"][q], ratio_meaning="SST / motes",
                    target=f"<= {50 if q == 'p50' else 200} ms", met=m["data_ms"][q] <= (50 if q == "p50" else 200),
                    visible_ms=m["visible_ms"][q])
        r.figures["writer_stall"] = figure(
            "writer_stall", "the writer's write call per step, p50 (motes: layout, indexes, compression, fsync)",
            got["motes", "all"]["stall_ms"]["p50"], "ms",
            peers={"sst": peer(got["SST", "all"]["stall_ms"]["p50"], "ms", None, ""),
                   "bp5_file": peer(got["BP5-file", "all"]["stall_ms"]["p50"], "ms", None, "")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
