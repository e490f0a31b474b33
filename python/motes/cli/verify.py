"""``motes verify``: check the manifest against the files, and every checksum of every file."""

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
         f"(all checksums match, files match the manifest) in {_seconds(dt)}")
    unpinned = res["species"] - res["pinned"]
    if unpinned:
        _out(f"note: the manifest records no file checksums for {unpinned} of {res['species']} species (written "
             "by motes 0.1): their files were checked for counts, bounds and schemas, not identity")
    return 0


def add_parser(subs) -> None:
    p = _sub(subs, "verify", "check every checksum of a dataset",
             "Reads every file of every step and checks all checksums (headers, index sections, data\n"
             "blocks), and checks the manifest against the files (the header checksum it records for\n"
             "each file, particle counts, bounds, schemas). Prints OK, or the first mismatch (file,\n"
             "column, block) and exits with status 1.",
             "  motes verify run.motes\n"
             "  motes verify run.motes --no-progress && echo intact")
    p.add_argument("dataset", metavar="DATASET", help="dataset directory")
    _add_progress(p)
    p.set_defaults(func=cmd_verify)
