#!/usr/bin/env python3
"""The layout's phase table (build_layout: bounds, Morton codes, sort, shallow tree, treelets,
splice, file order), before and after a change: two builds of the layout driver
(``bench/drivers/layout.cpp``) run alternately on the same positions, in the same run, and
optionally counted by callgrind.

Usage (from the repository root)::

    # a driver of each side: the driver's header gives the g++ line (no CMake needed), e.g.
    # for the commit before a change, from its sources alone:
    mkdir /tmp/before && git archive HEAD~1 cpp/motes/core cpp/motes/particles/layout | tar -x -C /tmp/before
    g++ -std=c++20 -O3 -DNDEBUG -g -pthread -I/tmp/before/cpp -o /tmp/layout_before bench/drivers/layout.cpp \\
        /tmp/before/cpp/motes/particles/layout/{tree,builder,radix_sort}.cpp /tmp/before/cpp/motes/core/{errors,memory}.cpp
    python bench/layout_phases.py --before /tmp/layout_before --after /tmp/layout_after --callgrind
                                                        # 10M -> bench/results/layout_phases.json

Data: ``synth.vpic(n)`` x, y, z (float32, random storage order) saved as ``.npy`` files.
About 2 GiB of memory is touched and freed first (this VM hands idle memory back to its host).
Each round runs the ``before`` driver, then the ``after`` one, each building the layout
``--repeat`` times. Per phase, the best wall time over all runs of a side and the process CPU
time of that run (every thread); CPU time per particle of the best run. Both drivers print a
checksum of the layout (nodes, levels, file order): they must agree unless ``--different``.
With ``--callgrind``, each driver builds the layout once more under ``valgrind --tool=callgrind``
(a dump at each phase's end): instructions per phase, every thread, repeatable on this noisy
machine where times are not. Speed is not asserted.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import figure, finish, log, peer, phase_table, start_meta, touch_memory  # noqa: E402



def run_driver(binary: str, repeat: int, files, env=None) -> dict:
    text = subprocess.run([binary, str(repeat), *files], check=True, capture_output=True, text=True, env=env).stdout
    table = phase_table(text)
    table["checksum"] = next((line.split()[1] for line in text.splitlines() if line.startswith("checksum ")), None)
    if table["total"] is None or table["checksum"] is None:
        raise RuntimeError(f"{binary} printed no total or checksum:\n{text}")
    return table


def callgrind(binary: str, files, tmp: str, side: str) -> dict:
    """Instructions of each phase: a callgrind dump before each Phases::lap (the end of a phase;
    the first dump also holds the driver's loading of the columns, a few reads)."""
    out = os.path.join(tmp, f"cg-{side}.out")
    for f in glob.glob(out + "*"):
        os.remove(f)
    text = subprocess.run(["valgrind", "--tool=callgrind", "--dump-before=motes::Phases::lap*",
                           f"--callgrind-out-file={out}", binary, "1", *files],
                          check=True, capture_output=True, text=True).stdout
    names = list(phase_table(text)["phases"])  # in the order the driver printed them
    counts = []
    for k in range(1, len(names) + 1):
        with open(f"{out}.{k}") as f:
            counts.append(int(next(ln for ln in f if ln.startswith("summary:")).split()[1]))
    return dict(zip(names, counts))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="layout driver built before the change")
    ap.add_argument("--after", required=True, help="layout driver built after the change")
    ap.add_argument("--n", type=int, default=10_000_000, help="particles (default 10M)")
    ap.add_argument("--rounds", type=int, default=4, help="alternations of the two drivers (default 4)")
    ap.add_argument("--repeat", type=int, default=3, help="layouts per driver call (default 3)")
    ap.add_argument("--callgrind", action="store_true", help="also count each side's instructions per phase")
    ap.add_argument("--different", action="store_true", help="the two may lay the points out differently")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "layout_phases.json"))
    a = ap.parse_args(argv)
    started = time.perf_counter()
    meta = start_meta(n=a.n, rounds=a.rounds, repeat=a.repeat, before=a.before, after=a.after)
    from motes import synth

    with tempfile.TemporaryDirectory(dir=HERE, prefix=".tmp-layout-phases-") as tmp:
        cols = synth.vpic(a.n)
        files = []
        for k in ("x", "y", "z"):
            files.append(os.path.join(tmp, f"{k}.npy"))
            np.save(files[-1], cols[k])
        del cols
        touch_memory(2.0)
        runs = {"before": [], "after": []}
        for r in range(a.rounds):
            for side in ("before", "after"):
                runs[side].append(run_driver(getattr(a, side), a.repeat, files))
                log(f"round {r + 1}/{a.rounds} {side}: {runs[side][-1]['total']:.3f} s")
        counted = {side: callgrind(getattr(a, side), files, tmp, side) for side in ("before", "after")} if a.callgrind else {}
    sums = {side: {r["checksum"] for r in rs} for side, rs in runs.items()}
    same = len(sums["before"] | sums["after"]) == 1
    if not same and not a.different:
        raise SystemExit(f"the two drivers laid the points out differently (checksums {sums})")

    def best(side):
        rs = runs[side]
        names = list(dict.fromkeys(k for r in rs for k in r["phases"]))
        wall = {k: min(r["phases"][k] for r in rs if k in r["phases"]) for k in names}
        cpu = {k: min((r["phases"][k], r["phase_cpu"].get(k, 0.0)) for r in rs if k in r["phases"])[1] for k in names}
        return wall, cpu, min(r["total"] for r in rs), min(r["cpu_ns"] for r in rs)

    (pb, cb, tb, nb), (pa, ca, ta, na) = best("before"), best("after")
    per = {side: {k: v / a.n for k, v in c.items()} for side, c in counted.items()}
    figs = {
        "layout_phases": figure(
            "layout_phases", f"build_layout of {a.n:,} VPIC-like positions (float32), best of "
                             f"{a.rounds * a.repeat} per side, the two builds alternated",
            ta, "s", peers={"before": peer(tb, "s", tb / ta, "before time / after time", phases=pb, phase_cpu=cb,
                                           cpu_ns_per_particle=nb,
                                           instructions_per_particle=per.get("before"))},
            ratio=tb / ta, ratio_meaning="before time / after time", phases=pa, phase_cpu=ca,
            cpu_ns_per_particle=na, cpu_ratio=nb / na, instructions_per_particle=per.get("after"),
            same_layout=same, runs=runs)}
    finish(meta, figs, a.out, started)
    print(f"{'phase':16s} {'wall before':>12s} {'after':>8s} {'cpu before':>11s} {'after':>8s}"
          + (f" {'instr/pt before':>16s} {'after':>8s}" if per else ""))
    for k in dict.fromkeys(list(pb) + list(pa)):
        line = f"{k:16s} {pb.get(k, float('nan')):12.3f} {pa.get(k, float('nan')):8.3f} " \
               f"{cb.get(k, float('nan')):11.3f} {ca.get(k, float('nan')):8.3f}"
        if per:
            line += f" {per['before'].get(k, float('nan')):16.1f} {per['after'].get(k, float('nan')):8.1f}"
        print(line)
    line = f"{'total':16s} {tb:12.3f} {ta:8.3f} {'':11s} {'':8s}"
    if per:
        line += f" {sum(per['before'].values()):16.1f} {sum(per['after'].values()):8.1f}"
    print(line + f"\n{'CPU ns/particle':16s} {nb:12.0f} {na:8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
