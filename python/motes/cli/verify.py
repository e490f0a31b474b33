"""``motes verify``: check the manifest against the files, and every checksum of every file;
report (and with --clean remove) what writers that died left in the dataset's folder."""

from __future__ import annotations

import time

from ..errors import FormatError
from .common import open_dataset, show_progress
from .options import add_command, add_option
from .text import duration, err, out


def _report_leftovers(ds, clean: bool) -> None:
    if clean:
        removed, kept = ds.clean_leftovers()
        if removed:
            out(f"cleaned: removed {len(removed)} leftover(s) of writers that died:")
            for item in removed:
                out(f"  {item.describe()}")
        if kept:
            out(f"kept {len(kept)} leftover(s) of a writer that is running (a write in progress?):")
            for item in kept:
                out(f"  {item.describe()}")
        if not removed and not kept:
            out("cleaned: no leftovers")
        return
    found = ds.leftovers()
    if found:
        out(f"note: {len(found)} leftover(s) of writers (not part of the dataset; readers ignore them; "
             "'motes verify --clean' removes those of writers that no longer run):")
        for item in found:
            out(f"  {item.describe()}")


def cmd_verify(args) -> int:
    ds = open_dataset(args.dataset)
    t0 = time.perf_counter()
    try:
        res = ds.verify(progress=show_progress(args))
    except FormatError as e:
        err(f"motes: error: verification FAILED: {e}")
        _report_leftovers(ds, args.clean)
        return 1
    dt = time.perf_counter() - t0
    out(f"OK: {ds.path}: {res['files']} files in {res['steps']} steps verified "
         f"(all checksums match, files match the manifest) in {duration(dt)}")
    unpinned = res["species"] - res["pinned"]
    if unpinned:
        out(f"note: the manifest records no file checksums for {unpinned} of {res['species']} species (written "
             "by motes 0.1): their files were checked for counts, bounds and schemas, not identity")
    _report_leftovers(ds, args.clean)
    return 0


DESCRIPTION = """\
Reads every file of every step and checks all checksums (headers, index sections, data
blocks), and checks the manifest against the files (the header checksum it records for
each file, particle counts, bounds, schemas). Prints OK, or the first mismatch (file,
column, block) and exits with status 1. Then lists what writers left in the folder:
temporary files (*.tmp-<pid>-<n>, with the writer's pid and whether it runs) and folders
of steps the manifest does not list; --clean removes those of writers that no longer
run, under the dataset's writers' lock."""

EXAMPLES = """\
  motes verify run.motes
  motes verify run.motes --no-progress && echo intact
  motes verify run.motes --clean                 # after a killed 'motes convert --append'"""


def add_parser(subs) -> None:
    p = add_command(subs, "verify", "check every checksum of a dataset", DESCRIPTION, EXAMPLES)
    add_option(p, "dataset")
    p.add_argument("--clean", action="store_true",
                   help="remove the temporary files and unpublished step folders of writers that no longer "
                        "run (takes the dataset's writers' lock; never touches a running writer's files)")
    add_option(p, "progress")
    p.set_defaults(func=cmd_verify)
