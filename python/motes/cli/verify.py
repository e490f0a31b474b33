"""``motes verify``: check every checksum of a dataset."""

from __future__ import annotations

import time

from .._core import FormatError
from .common import (_add_progress, _err, _open, _out, _progress, _seconds, _sub)


def cmd_verify(args) -> int:
    ds = _open(args.dataset)
    t0 = time.perf_counter()
    try:
        res = ds.verify(progress=_progress(args))
    except FormatError as e:
        _err(f"motes: error: verification FAILED: {e}")
        return 1
    dt = time.perf_counter() - t0
    _out(f"OK: {ds.path}: {res['files']} files in {res['steps']} steps verified "
         f"(all checksums match) in {_seconds(dt)}")
    return 0


def add_parser(subs) -> None:
    p = _sub(subs, "verify", "check every checksum of a dataset",
             "Reads every file of every step and checks all checksums (headers, index sections, data\n"
             "blocks). Prints OK, or the first mismatch (file, column, block) and exits with status 1.",
             "  motes verify run.motes\n"
             "  motes verify run.motes --no-progress && echo intact")
    p.add_argument("dataset", metavar="DATASET", help="dataset directory")
    _add_progress(p)
    p.set_defaults(func=cmd_verify)
