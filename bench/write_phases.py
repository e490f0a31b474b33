#!/usr/bin/env python3
"""The writer's phase table, before and after a change: two builds of the write driver
(``bench/drivers/write.cpp``) run alternately on the same columns, in the same run.

Usage (from the repository root)::

    # a build of each side, e.g. the commit before a change in a worktree:
    git worktree add /tmp/before <commit>
    cmake -S /tmp/before -B /tmp/before/build/prof -G Ninja -DMOTES_BUILD_DRIVERS=ON -DCMAKE_BUILD_TYPE=Release \\
        -DCMAKE_CXX_FLAGS_RELEASE="-O3 -DNDEBUG -g"   # what the package ships (-O3), with symbols
    cmake --build /tmp/before/build/prof --target motes_write_driver
    python bench/write_phases.py --before /tmp/before/build/prof/motes_write_driver \\
        --after build/prof/motes_write_driver            # 10M -> bench/results/write_phases.json
    # and motes.write from Python too, the old package installed aside:
    pip install --no-deps --target /tmp/before-py /tmp/before
    python bench/write_phases.py --before ... --after ... --python-before /tmp/before-py

Data: ``synth.vpic`` (8 float32 columns, random storage order) saved as ``.npy`` files, with
huge pages advised for the driver's arrays as numpy does for its own. Each round runs the
``before`` driver, then the ``after`` one, each writing ``--repeat`` times (fsync'd, defaults of
``write_particle_file``: lossless, tail indexes). Per phase, the best over all runs of a side
(the machine drifts; the best is the least disturbed), and CPU time per particle (user +
system, every thread, best run). The two files must be byte-identical when a change should
not alter the output (``--same-output``). With ``--python-before``, the same alternation runs
``motes.write(sync=True)`` in child processes: the package in that directory, then the
installed one. Speed is not asserted.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import figure, finish, log, peer, phase_table, start_meta  # noqa: E402

COLUMNS = ("x", "y", "z", "ux", "uy", "uz", "energy", "q")


def run_driver(binary, out: str, repeat: int, files, env=None) -> dict:
    cmd = [binary] if isinstance(binary, str) else list(binary)
    text = subprocess.run([*cmd, out, str(repeat), *files], check=True, capture_output=True, text=True, env=env).stdout
    table = phase_table(text)
    if table["total"] is None:
        raise RuntimeError(f"{binary} printed no total:\n{text}")
    return table


def python_child(out: str, repeat: int, files) -> None:
    """Child of --python-before: motes.write of the .npy columns, printed as the driver prints."""
    import shutil

    import motes
    from benchlib import cpu_seconds

    cols = {os.path.basename(f)[:-4]: np.load(f) for f in files}
    best, best_cpu, phases = float("inf"), float("inf"), {}
    for _ in range(repeat):
        shutil.rmtree(out, ignore_errors=True)
        t, c = time.perf_counter(), cpu_seconds()
        summary = motes.write(out, cols, sync=True)[0]
        best_cpu = min(best_cpu, cpu_seconds() - c)
        best = min(best, time.perf_counter() - t)
        for k, v in summary.get("phases", {}).items():
            phases[k] = min(phases.get(k, v), v)
    shutil.rmtree(out, ignore_errors=True)
    for k, v in phases.items():
        print(f"{k:26s} {v:8.3f} s")
    print(f"{'total':26s} {best:8.3f} s (best of {repeat}), {1e9 * best_cpu / len(next(iter(cols.values()))):.0f} ns CPU per particle")


def main(argv=None) -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--_python-child":
        python_child(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="write driver built before the change")
    ap.add_argument("--after", required=True, help="write driver built after the change")
    ap.add_argument("--n", type=int, default=10_000_000, help="particles (default 10M)")
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the two drivers (default 3)")
    ap.add_argument("--repeat", type=int, default=3, help="writes per driver call (default 3)")
    ap.add_argument("--same-output", action="store_true", help="fail unless both write the same bytes")
    ap.add_argument("--python-before", default=None, help="a directory holding the motes package before the change")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "write_phases.json"))
    a = ap.parse_args(argv)
    started = time.perf_counter()
    meta = start_meta(n=a.n, rounds=a.rounds, repeat=a.repeat, before=a.before, after=a.after)
    from motes import synth

    with tempfile.TemporaryDirectory(dir=HERE, prefix=".tmp-write-phases-") as tmp:
        cols = synth.vpic(a.n)
        files = []
        for k in COLUMNS:
            files.append(os.path.join(tmp, f"{k}.npy"))
            np.save(files[-1], cols[k])
        del cols
        runs = {"before": [], "after": []}
        for r in range(a.rounds):
            for side in ("before", "after"):
                runs[side].append(run_driver(getattr(a, side), os.path.join(tmp, f"{side}.mpf"), a.repeat, files))
                log(f"round {r + 1}/{a.rounds} {side}: {runs[side][-1]['total']:.3f} s")
        if a.python_before:
            child = [sys.executable, os.path.abspath(__file__), "--_python-child"]
            old_env = dict(os.environ, PYTHONPATH=os.pathsep.join([a.python_before, os.environ.get("PYTHONPATH", "")]))
            for r in range(a.rounds):
                for side, env in (("python_before", old_env), ("python_after", None)):
                    runs.setdefault(side, []).append(
                        run_driver(child, os.path.join(tmp, f"{side}.motes"), a.repeat, files, env=env))
                    log(f"round {r + 1}/{a.rounds} {side}: {runs[side][-1]['total']:.3f} s")
        same = filecmp.cmp(os.path.join(tmp, "before.mpf"), os.path.join(tmp, "after.mpf"), shallow=False)
        if a.same_output and not same:
            raise SystemExit("the two drivers wrote different files")

    def best(side):
        rs = runs[side]
        names = list(dict.fromkeys(k for r in rs for k in r["phases"]))
        return ({k: min(r["phases"][k] for r in rs if k in r["phases"]) for k in names},
                min(r["total"] for r in rs), min(r["cpu_ns"] for r in rs))

    (pb, tb, cb), (pa, ta, ca) = best("before"), best("after")
    figs = {
        "write_phases": figure(
            "write_phases", f"write_particle_file of {a.n:,} VPIC-like particles (8 float32 columns, fsync'd), "
                            f"best of {a.rounds * a.repeat} per side, the two builds alternated",
            ta, "s", peers={"before": peer(tb, "s", tb / ta, "before time / after time", phases=pb, cpu_ns_per_particle=cb)},
            ratio=tb / ta, ratio_meaning="before time / after time", phases=pa, cpu_ns_per_particle=ca,
            cpu_ratio=cb / ca, same_output=same, runs=runs)}
    if a.python_before:
        (qb, sb, ub), (qa, sa, ua) = best("python_before"), best("python_after")
        figs["python_write"] = figure(
            "python_write", "motes.write(sync=True) from Python, the package before the change (PYTHONPATH) "
                            "and the installed one, alternated", sa, "s",
            peers={"before": peer(sb, "s", sb / sa, "before time / after time", phases=qb, cpu_ns_per_particle=ub)},
            ratio=sb / sa, ratio_meaning="before time / after time", phases=qa, cpu_ns_per_particle=ua,
            cpu_ratio=ub / ua)
    finish(meta, figs, a.out, started)
    print(f"{'phase':28s} {'before':>8s} {'after':>8s}")
    for k in dict.fromkeys(list(pb) + list(pa)):
        print(f"{k:28s} {pb.get(k, float('nan')):8.3f} {pa.get(k, float('nan')):8.3f}")
    print(f"{'total':28s} {tb:8.3f} {ta:8.3f}\n{'CPU ns per particle':28s} {cb:8.0f} {ca:8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
