"""``motes generate``: synthetic particles from motes.synth, written as one step."""

from __future__ import annotations

import os
import time

from ..errors import UsageError
from .common import show_progress
from .options import add_command, add_option, nonneg_int, particle_count
from .text import byte_size, err, thousands
from .writing import Input, add_write_options, write_step


def _check_memory(synth, kind: str, n: int, dtype) -> None:
    """UsageError when n particles cannot be generated and written in this machine's memory."""
    row = sum(v.nbytes for v in synth.generate(kind, 1, seed=0, dtype=dtype).values())
    need = n * row * 2  # the arrays, and about as much again for the layout
    try:
        have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return
    if need > have:
        raise UsageError(f"{n:,} '{kind}' particles need about {byte_size(need)} of memory to generate and write; "
                         f"this machine has {byte_size(have)} (generate fewer, or several steps)")


def cmd_generate(args) -> int:
    import numpy as np

    from .. import synth

    dtype = np.float64 if args.dtype == "float64" else np.float32
    _check_memory(synth, args.kind, args.n, dtype)
    t0 = time.perf_counter()
    cols = synth.generate(args.kind, args.n, seed=args.seed, with_id=args.with_id, dtype=dtype)
    if show_progress(args):
        err(f"generated {thousands(args.n)} '{args.kind}' particles in {time.perf_counter() - t0:.2f} s")
    return write_step(args, Input(cols), f"synth.{args.kind}(n={args.n}, seed={args.seed})")


DESCRIPTION = """\
Writes N synthetic particles from motes.synth as one step of DATASET. Kinds:
  uniform    uniform positions in the unit cube, normal momenta
  clustered  Gaussian blobs + filaments + 1% background in the unit cube
  vpic       VPIC-like reconnection plasma in a 200 x 100 x 50 box
  wide       uniform positions plus 14 float64 attributes
Data are deterministic for a given seed."""

EXAMPLES = """\
  motes generate vpic 1M run.motes --with-id
  motes generate clustered 200k demo.motes --seed 7 --step 0
  for s in 0 1 2; do motes generate uniform 1e5 series.motes --seed $s --time $s; done"""


def add_parser(subs) -> None:
    from ..synth import GENERATORS

    kinds = sorted(GENERATORS)
    p = add_command(subs, "generate", "write a synthetic dataset (for demos and benchmarks)", DESCRIPTION, EXAMPLES)
    p.add_argument("kind", metavar="KIND", choices=kinds, help="generator: " + ", ".join(kinds))
    p.add_argument("n", metavar="N", type=particle_count, help="number of particles (e.g. 100000, 1e6, 250k, 2M)")
    add_option(p, "dataset", help="dataset directory (created when absent)")
    g = p.add_argument_group("data")
    g.add_argument("--seed", type=nonneg_int, default=0, help="random seed (a non-negative integer)")
    g.add_argument("--with-id", action="store_true", help="add an 'id' column (uint64 permutation of 0..N-1)")
    g.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="dtype of x, y, z")
    add_write_options(p)
    p.set_defaults(func=cmd_generate)

