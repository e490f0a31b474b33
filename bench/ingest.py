#!/usr/bin/env python3
"""In transit: ``motes ingest`` reading a live openPMD stream (openpmd-api over ADIOS2 SST),
against the same producer read by a plain openpmd-api reader that does nothing with the data.

A producer process (``--particles`` per step, 12 float64 records: position, momentum, E and B
at the particles, x y z each) writes ``--steps`` iterations through openpmd-api over SST,
``--pause`` seconds of "compute" apart, and reports how long each step blocked it (from
``write_iterations()[k]`` to the end of ``it.close()``). The runs, ``--rounds`` times, the
order reversed every other round (sides alternated):

* ``plain``: the consumer is an openpmd-api reader that loads every record and drops it;
* ``ingest``: the consumer is ``motes ingest`` (every step written, indexed, published, its
  writer threads at the default ``--nice``), and a ``motes.follow`` reader in a third process
  records when it holds each step, against the step's commit (the manifest's mtime): the
  commit-to-visible latency;
* ``ingest_nice0``: the same with ``--nice 0``, the writer at the producer's priority;

then once:

* ``sustained`` (``--sustained-steps``, default 50 at ``--sustained-pause`` 2 s): ingest only,
  to see whether the lag (receipt to commit, from ingest's report) grows over the run.

    .venv/bin/python bench/ingest.py                       # 1M particles, 16 steps, 2 rounds, then 50 at 2 s
    .venv/bin/python bench/ingest.py --particles 200000 --steps 6 --sustained-steps 10 --out /tmp/ingest.json

Writes bench/results/ingest.json: per run the producer's blocked seconds per step (median,
p90, max; the first ``--warmup`` steps of each run, where SST connects and the buffers grow,
left out), pooled per kind over the rounds; for ingest the follow latency (p50, p99) and the
lag per step; the ratios of each ingest's pooled blocked median to plain's. Each producer/consumer pair runs in its own temporary
folder (SST's contact file lives in the working directory)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402

PRODUCER = r'''
import json, sys, time
import numpy as np
import openpmd_api as io
path, steps, n, pause, passes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
{COMPUTE}

params = {"DataTransport": "WAN", "QueueLimit": "2", "QueueFullPolicy": "Block"}
s = io.Series(path, io.Access.create, json.dumps({"adios2": {"engine": {"type": "sst", "parameters": params}}}))
s.set_iteration_encoding(io.Iteration_Encoding.variable_based)
rng = np.random.default_rng(0)
base = {f"{r}/{c}": rng.random(n) for r in ("position", "momentum", "E", "B") for c in "xyz"}
for k in range(steps):
    data = {name: v + k for name, v in base.items()}  # the step's particles (made before the clock starts)
    t0 = time.perf_counter()
    it = s.write_iterations()[k]
    it.time = float(k)
    e = it.particles["e"]
    for name, v in data.items():
        r, c = name.split("/")
        e[r][c].reset_dataset(io.Dataset(v.dtype, [n]))
        e[r][c].store_chunk(v, [0], [n])
    for c in "xyz":
        e["positionOffset"][c].reset_dataset(io.Dataset(np.dtype("f8"), [n]))
        e["positionOffset"][c].make_constant(0.0)
    it.close()
    blocked, closed_at = time.perf_counter() - t0, time.time()
    t1 = time.perf_counter()
    compute(passes) if passes else time.sleep(pause)
    print(json.dumps({"step": k, "blocked": blocked, "closed_at": closed_at, "compute": time.perf_counter() - t1}),
          flush=True)
s.close()
'''

# Busy compute: a fixed number of passes over an array in cache, on one core.
COMPUTE = r'''
def compute(passes):
    w = np.linspace(0.0, 1.0, 50_000)
    for _ in range(passes):
        w = np.sin(w)
    return w
'''
PRODUCER = PRODUCER.replace("{COMPUTE}", COMPUTE)


def calibrate(seconds: float) -> int:
    """The passes of COMPUTE that take ``seconds`` on this machine, measured here alone."""
    import time

    import numpy as np

    scope = {"np": np}
    exec(COMPUTE, scope)
    scope["compute"](50)
    t = time.perf_counter()
    scope["compute"](500)
    return max(1, int(seconds / ((time.perf_counter() - t) / 500)))


PLAIN = r'''
import json, sys
import openpmd_api as io
s = io.Series(sys.argv[1], io.Access.read_linear, json.dumps({"adios2": {"engine": {"parameters": {"OpenTimeoutSecs": "120"}}}}))
for it in s.read_iterations():
    e = it.particles["e"]
    keep = [e[r][c].load_chunk() for r in ("position", "momentum", "E", "B") for c in "xyz"]
    it.close()
    del keep
'''

FOLLOW = r'''
import json, os, sys, time
import motes
path, steps = sys.argv[1], int(sys.argv[2])
while not os.path.exists(os.path.join(path, "manifest.json")):
    time.sleep(0.01)
seen = 0
for st in motes.follow(path, timeout=300, poll=0.01):
    now = time.time()
    committed = os.stat(os.path.join(path, "manifest.json")).st_mtime
    print(json.dumps({"step": st.index, "latency": max(0.0, now - committed), "seen_at": now}), flush=True)
    seen += 1
    if seen == steps:
        break
'''


def env():
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


def run(kind: str, steps: int, n: int, pause: float, extra=(), warmup: int = 0, passes: int = 0) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"motes-ingest-{kind}-") as cwd:
        benchlib.touch_memory()
        stream = os.path.join(cwd, "sim.sst")
        dataset = os.path.join(cwd, "run.motes")
        follower = None
        if kind == "plain":
            consumer = subprocess.Popen([sys.executable, "-c", PLAIN, stream], cwd=cwd, env=env())
        else:
            consumer = subprocess.Popen([sys.executable, "-m", "motes", "ingest", stream, dataset, "--timeout", "120",
                                         "--no-progress", *extra], cwd=cwd, env=env(), stdout=subprocess.PIPE, text=True)
            follower = subprocess.Popen([sys.executable, "-c", FOLLOW, dataset, str(steps)], cwd=cwd, env=env(),
                                        stdout=subprocess.PIPE, text=True)
        producer = subprocess.Popen([sys.executable, "-c", PRODUCER, stream, str(steps), str(n), str(pause),
                                     str(passes)], cwd=cwd,
                                    env=env(), stdout=subprocess.PIPE, text=True)
        made = [json.loads(line) for line in producer.stdout]
        producer.wait(timeout=600)
        out = consumer.communicate(timeout=600)[0]
        blocked = [m["blocked"] for m in made]
        result = {"kind": kind, "steps": steps, "particles": n, "pause_seconds": pause, "warmup_steps": warmup,
                  "compute_passes": passes, "blocked_seconds": spread(blocked[warmup:]),
                  "blocked_per_step": blocked, "compute_seconds": spread([m["compute"] for m in made][warmup:]),
                  "compute_per_step": [m["compute"] for m in made]}
        if follower is not None:
            seen = {s["step"]: s for s in (json.loads(line) for line in follower.stdout)}
            follower.wait(timeout=60)
            result["follow_latency_seconds"] = spread([s["latency"] for s in seen.values()])
            # the producer's end of a step to a reader holding it indexed: grows if motes falls behind
            lag = [seen[m["step"]]["seen_at"] - m["closed_at"] for m in made if m["step"] in seen]
            result["end_to_end_lag_seconds"] = lag
            tenth = max(1, len(lag) // 5)
            result["lag_first_fifth_median"] = spread(lag[:tenth])["median"]
            result["lag_last_fifth_median"] = spread(lag[-tenth:])["median"]
            result["ingest_summary"] = (out or "").strip()
        return result


def spread(values) -> dict:
    v = sorted(values)
    if not v:
        return {"median": float("nan"), "p90": float("nan"), "p99": float("nan"), "max": float("nan"), "n": 0}
    at = lambda q: v[min(len(v) - 1, int(q * len(v)))]  # noqa: E731
    return {"median": v[len(v) // 2], "p90": at(0.9), "p99": at(0.99), "max": v[-1], "n": len(v)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--particles", type=int, default=1_000_000)
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--pause", type=float, default=1.0, help="seconds of compute between steps (plain, ingest)")
    p.add_argument("--sustained-steps", type=int, default=50)
    p.add_argument("--sustained-pause", type=float, default=2.0)
    p.add_argument("--rounds", type=int, default=2, help="rounds of plain, ingest, ingest_nice0 (order alternated)")
    p.add_argument("--warmup", type=int, default=2, help="first steps of each run left out of the blocked figures")
    p.add_argument("--compute", choices=["sleep", "busy"], default="sleep",
                   help="the producer between steps: sleeps, or computes on one core (a fixed amount of work, "
                        "calibrated to --pause alone: compute_seconds then says how much the consumer slowed it)")
    p.add_argument("--ingest-threads", type=int, default=None, help="motes ingest --threads")
    p.add_argument("--out", default=os.path.join(HERE, "results", "ingest.json"))
    a = p.parse_args(argv)
    extra = ["--threads", str(a.ingest_threads)] if a.ingest_threads else []
    benchlib.touch_memory()
    passes = calibrate(a.pause) if a.compute == "busy" else 0
    kinds = {"plain": [], "ingest": list(extra), "ingest_nice0": [*extra, "--nice", "0"]}
    runs = []
    for r in range(a.rounds):
        for kind in (list(kinds) if r % 2 == 0 else list(kinds)[::-1]):
            runs.append(run(kind, a.steps, a.particles, a.pause, kinds[kind], a.warmup, passes))
    pooled = {kind: spread([b for x in runs if x["kind"] == kind for b in x["blocked_per_step"][a.warmup:]])
              for kind in kinds}
    computed = {kind: spread([c for x in runs if x["kind"] == kind for c in x["compute_per_step"][a.warmup:]])
                for kind in kinds}
    if a.sustained_steps:
        runs.append(run("sustained", a.sustained_steps, a.particles, a.sustained_pause, extra, a.warmup))
    plain = pooled["plain"]["median"]
    report = {"machine": benchlib.machine_info(), "compute": a.compute, "compute_passes": passes, "runs": runs, "blocked_pooled": pooled,
              "compute_pooled": computed,
              "ratio_blocked_median_over_plain": {k: v["median"] / plain if plain > 0 else None
                                                  for k, v in pooled.items() if k != "plain"}}
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(report, f, indent=1)
    for r in runs:
        b = r["blocked_seconds"]
        line = f"{r['kind']:10s} blocked median {b['median'] * 1000:.1f} ms, p90 {b['p90'] * 1000:.1f}, max {b['max'] * 1000:.1f}"
        if "follow_latency_seconds" in r:
            f = r["follow_latency_seconds"]
            line += (f"; commit->follow p50 {f['median'] * 1000:.0f} ms, p99 {f['p99'] * 1000:.0f} ms; end-to-end lag "
                     f"first fifth {r['lag_first_fifth_median']:.2f} s, last fifth {r['lag_last_fifth_median']:.2f} s"
                     f"\n           {r['ingest_summary']}")
        print(line)
    for kind, b in pooled.items():
        print(f"pooled {kind:13s} blocked median {b['median'] * 1000:.1f} ms, p90 {b['p90'] * 1000:.1f} ms (n {b['n']}); "
              f"compute between steps {computed[kind]['median']:.3f} s ({a.compute})")
    print("blocked median over plain: " + ", ".join(f"{k} {v:.2f}" for k, v in
                                                      report["ratio_blocked_median_over_plain"].items()) + f"; {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
