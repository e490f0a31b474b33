#!/usr/bin/env python3
"""A viewer's progressive read of a compressed file against the same file uncompressed
(issue "Write 2", item 6: the compressed read at >= 0.6x the uncompressed rate).

Usage (from the repository root)::

    python bench/progressive.py                   # 10M synth.vpic -> bench/results/progressive.json
    python bench/progressive.py --n 2000000 --out /tmp/progressive.json

The read (benchlib.progression): quality 0.1 -> 1.0 in ten slices, every column copied out,
from a fresh ``motes.open`` with the decoded-block cache emptied (``clear_block_cache``; the
file's pages stay in the page cache). ~2 GiB are touched and freed before every timed run (this
VM hands idle memory back to its host). Files: ``motes.synth.vpic`` written by default
(lossless) and with ``compression="none"``, each without and with an ``id`` column (format
2.7 stores a lossless file's ids only as their id index and computes the column on first read;
the uncompressed file stores them as a column). The two files of a pair are read in turn, a
warm-up round first (benchlib.alternated): this VM's speed drifts in phases of seconds.

Figures (medians; points per millisecond; CPU seconds of the process beside each):

* ``progressive``: the lossless file on one thread; peer the uncompressed file, ratio lossless
  rate / uncompressed rate (target >= 0.6).
* ``progressive_threads``: the same on motes' default threads.
* ``progressive_id``: the files with an id column, one thread.
* ``progressive_first``: the first read of a new process (a child per run, the two files in
  turn): the decoded blocks then take pages the process never had (the cache's slab keeps the
  pages of blocks it dropped for the next ones, so later reads in one process reuse them).

Speed is measured, never asserted; every run reads every particle once (asserted).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from typing import Dict, List

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (RESULT, alternated, child_results, cpu_seconds, figure, log, peer, perf,  # noqa: E402
                      progression, run, touch_memory)

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")


def columns_of(path: str) -> List[str]:
    import motes

    return [c["name"] for c in motes.open(path).file().columns]


def child(path: str, threads: str) -> None:
    """One progression as the first read of this process; prints its seconds and CPU seconds."""
    th = None if threads == "default" else int(threads)
    cols = columns_of(path)
    touch_memory(2.0)
    c0, t0 = cpu_seconds(), perf()
    rows = progression(path, cols, threads=th)
    dt, cpu = perf() - t0, cpu_seconds() - c0
    print(RESULT + json.dumps({"s": dt, "cpu_s": cpu, "rows": rows}), flush=True)


class Bench:
    def __init__(self, args, tmp: str):
        self.args, self.tmp = args, tmp
        self.figures: Dict[str, dict] = {}
        self.paths: Dict[str, str] = {}

    def write(self):
        import motes
        from motes import synth

        cols = synth.vpic(self.args.n, seed=self.args.seed, with_id=True)
        data = {k: v for k, v in cols.items() if k != "id"}
        self.codecs = {}
        for name, c, kw in (("lossless", data, {}), ("none", data, {"compression": "none"}),
                            ("lossless_id", cols, {}), ("none_id", cols, {"compression": "none"})):
            p = os.path.join(self.tmp, name + ".motes")
            shutil.rmtree(p, ignore_errors=True)
            motes.write(p, c, sync=True, **kw)
            self.paths[name] = p
            f = motes.open(p).file()
            self.codecs[name] = {"file_bytes": f.sizes["file_bytes"],
                                 "columns": {x["name"]: x["codec"] for x in f.columns}}
        log(f"wrote {self.args.n:,} synth.vpic particles: " +
            ", ".join(f"{k} {v['file_bytes'] / 1e6:.0f} MB" for k, v in self.codecs.items()))

    def pair(self, names, threads):
        """The two files of `names` read in turn; (seconds, CPU seconds) per name."""
        cpu: Dict[str, List[float]] = {n: [] for n in names}
        cols = {n: columns_of(self.paths[n]) for n in names}
        marks = {}

        def fn(name):
            def go():
                c0 = cpu_seconds()
                rows = progression(self.paths[name], cols[name], threads=threads)
                marks[name] = cpu_seconds() - c0
                return rows
            return go

        def after(name, rows):
            assert rows == self.args.n, (name, rows)
            cpu[name].append(marks[name])

        runs = alternated({n: fn(n) for n in names}, self.args.repeat, warmup=1, after=after,
                          before=lambda name: touch_memory(2.0))
        return runs, {n: v[1:] for n, v in cpu.items()}  # the warm-up round's CPU left out

    def first_reads(self, names, threads="1"):
        runs = {n: [] for n in names}
        cpu = {n: [] for n in names}
        env = dict(os.environ)
        for _ in range(self.args.fresh_repeat):
            for n in names:
                out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", self.paths[n], threads],
                                     check=True, capture_output=True, text=True, env=env).stdout
                r = child_results(out)[0]
                assert r["rows"] == self.args.n, (n, r)
                runs[n].append(r["s"])
                cpu[n].append(r["cpu_s"])
        return runs, cpu

    def add(self, key, description, names, runs, cpu):
        ours, base = names
        rate = {n: self.args.n / statistics.median(runs[n]) / 1e3 for n in names}
        ratio = rate[ours] / rate[base]
        self.figures[key] = figure(
            key, description, rate[ours], "points/ms",
            peers={base: peer(rate[base], "points/ms", ratio, "lossless rate / uncompressed rate",
                              seconds=runs[base], cpu_seconds=cpu[base])},
            ratio=ratio, ratio_meaning="lossless rate / uncompressed rate", target=">= 0.6",
            met=ratio >= 0.6, seconds=runs[ours], cpu_seconds=cpu[ours])
        log(f"{key}: {ours} {statistics.median(runs[ours]):.3f} s (CPU {statistics.median(cpu[ours]):.3f} s), "
            f"{base} {statistics.median(runs[base]):.3f} s (CPU {statistics.median(cpu[base]):.3f} s): {ratio:.2f}x")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--fresh-repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(RESULTS, "progressive.json"))
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--child", nargs=2, metavar=("PATH", "THREADS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    with run(args.out, ".tmp-progressive-", args.tmp, benchmark="progressive", n=args.n) as r:
        b = Bench(args, r.scratch)
        r.figures = b.figures
        b.write()
        r.sections["files"] = b.codecs
        what = ("progressive read 0.1 -> 1.0, every column, fresh open and decoded-block cache emptied, "
                "~2 GiB touched before each run, runs alternating with the uncompressed file's")
        pair = ("lossless", "none")
        b.add("progressive", what + ", one thread: lossless rate", pair, *b.pair(pair, 1))
        b.add("progressive_threads", what + ", default threads: lossless rate", pair, *b.pair(pair, None))
        pid = ("lossless_id", "none_id")
        b.add("progressive_id", what + ", with an id column (the lossless file's computed from its id index), "
              "one thread: lossless rate", pid, *b.pair(pid, 1))
        b.add("progressive_first", "the same read as a new process's first (a child per run, in turn), one thread: "
              "lossless rate", pair, *b.first_reads(pair))
    return 0


if __name__ == "__main__":
    sys.exit(main())
