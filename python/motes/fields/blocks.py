"""Fields in parallel writes: every rank passes its :class:`motes.field.FieldBlock` (its ghost
zones dropped) and the core writes the field from all the blocks: its HZ blocks cut into part
files, each written by one aggregator from the samples the ranks send it (no rank holds the
whole grid); a plain :class:`motes.Field` is given by rank 0 alone and written by it. The
blocks must cover the grid exactly once: the core checks it on every rank (an overlap names the
ranks, a hole the number of samples covered)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..errors import UsageError
from .model import Field, FieldBlock
from .file import field_tuple


def _block_tuple(name: str, block: FieldBlock) -> Tuple[tuple, List[int], List[int]]:
    """What the core takes for a rank's block: (its interior as a field tuple, global dims
    (x, y, z), offset (x, y, z))."""
    dims = [int(d) for d in block.dims]
    ndim = len(dims)
    if not 1 <= ndim <= 3 or any(d < 1 for d in dims):
        raise UsageError(f"field '{name}': dims must be 1 to 3 sample counts (x, y, z), got {block.dims!r}")
    offset = [int(v) for v in block.offset]
    if len(offset) != ndim or any(v < 0 for v in offset):
        raise UsageError(f"field '{name}': offset must be {ndim} indexes >= 0 (x, y, z), got {block.offset!r}")
    interior = np.asarray(block.interior())
    comps = tuple(block.components) if block.components else None
    if interior.ndim != ndim + (comps is not None):
        raise UsageError(f"field '{name}': a block of a {ndim}-D grid{' of vectors' if comps else ''} has "
                         f"{ndim + (comps is not None)} axes, got shape {interior.shape}")
    # The global field's geometry, checked as a Field checks it (on a one-sample stand-in grid
    # of the global shape), with this rank's interior as its samples.
    shape = tuple(reversed(dims)) + ((len(comps),) if comps else ())
    geometry = Field(np.broadcast_to(np.zeros((), interior.dtype), shape), **{**block.grid_keywords(), "components": comps})
    t = field_tuple(name, geometry, samples=interior)
    return t, dims, offset


def split_fields(comm, fields: Optional[Dict[str, Any]]) -> Tuple[List[tuple], List[tuple]]:
    """(whole fields given by rank 0, blocks given by every rank), as the core takes them.
    ``fields`` maps names to a FieldBlock on every rank, or to a Field on rank 0 (None or
    absent elsewhere); every rank names the same fields. A mistake on one rank is raised on all."""
    try:
        out, problem = _split(comm, dict(fields or {})), None
    except UsageError as e:  # on one rank: every rank must raise it, or the others wait forever
        out, problem = ([], []), f"rank {comm.rank}: {e}"
    problems = [p for p in comm.allgather(problem) if p]
    if problems:
        raise UsageError(problems[0])
    return out


def _split(comm, fields: Dict[str, Any]):
    names = sorted(fields)
    all_names = comm.allgather(names)
    if any(n != all_names[0] for n in all_names):
        raise UsageError(f"every rank must name the same fields; got {all_names[:4]}...")
    kinds = comm.allgather(["block" if isinstance(fields[n], FieldBlock) else
                            "field" if isinstance(fields[n], Field) else "none" for n in names])
    whole, blocks = [], []
    for i, name in enumerate(names):
        of_name = [k[i] for k in kinds]
        if "block" in of_name:
            if any(k != "block" for k in of_name):
                raise UsageError(f"field '{name}': every rank must give a FieldBlock")
            blocks.append(_block_tuple(name, fields[name]))
        else:
            if of_name[0] != "field" or any(k == "field" for k in of_name[1:]):
                raise UsageError(f"field '{name}': a whole Field is given by rank 0 alone (the others give None)")
            if comm.rank == 0:
                whole.append(field_tuple(name, fields[name]))
    return whole, blocks
