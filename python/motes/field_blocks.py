"""Fields in parallel writes: every rank's :class:`motes.field.FieldBlock` (its ghost zones
dropped) is gathered to rank 0 and placed into the global grid, which rank 0 writes with the
step; a plain :class:`motes.Field` is given by rank 0 alone. The blocks must cover the grid
exactly once (checked: an overlap or a hole names the ranks or the first uncovered sample).

The grid passes through rank 0's memory: fine for grids of a few GB beside the particles; a
write of the blocks by several aggregators, each owning whole block files, is future work."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional

import numpy as np

from .errors import UsageError
from .field import AXES, Field, FieldBlock


def _assemble(name: str, blocks: List[Optional[tuple]]) -> Field:
    """Rank 0: the global Field from (rank, interior, offset, FieldBlock without array) items."""
    given = [b for b in blocks if b is not None]
    if not given:
        raise UsageError(f"field '{name}': no rank gave a block")
    first = given[0][3]
    dims = tuple(int(d) for d in first.dims)
    ndim = len(dims)
    if not 1 <= ndim <= 3:
        raise UsageError(f"field '{name}': dims must have 1 to 3 numbers, got {first.dims!r}")
    comps = tuple(first.components) if first.components else None
    dtype = given[0][1].dtype
    shape = tuple(reversed(dims)) + ((len(comps),) if comps else ())
    out = np.zeros(shape, dtype=dtype)
    owner = np.full(tuple(reversed(dims)), -1, dtype=np.int32)
    for rank, interior, offset, meta in given:
        if tuple(int(d) for d in meta.dims) != dims or (tuple(meta.components) if meta.components else None) != comps:
            raise UsageError(f"field '{name}': rank {rank} gives other dims or components than rank {given[0][0]}")
        if interior.dtype != dtype:
            raise UsageError(f"field '{name}': rank {rank} gives dtype {interior.dtype}, rank {given[0][0]} {dtype}")
        offset = [int(v) for v in offset]
        if len(offset) != ndim:
            raise UsageError(f"field '{name}': rank {rank}'s offset must have {ndim} numbers")
        region = []
        for k in reversed(range(ndim)):
            n = interior.shape[ndim - 1 - k]
            if offset[k] < 0 or offset[k] + n > dims[k]:
                raise UsageError(f"field '{name}': rank {rank}'s block [{offset[k]}, {offset[k] + n}) along "
                                 f"{AXES[k]} lies outside the grid's {dims[k]} samples")
            region.append(slice(offset[k], offset[k] + n))
        region = tuple(region)
        taken = owner[region]
        if (taken >= 0).any():
            other = int(taken[taken >= 0].flat[0])
            raise UsageError(f"field '{name}': the blocks of ranks {other} and {rank} overlap")
        owner[region] = rank
        out[region] = interior
    if (owner < 0).any():
        at = np.argwhere(owner < 0)[0][::-1]
        raise UsageError(f"field '{name}': no block covers sample {tuple(int(v) for v in at)} (x, y, z) of the grid")
    return Field(out, origin=first.origin, spacing=first.spacing, coords=first.coords, centering=first.centering,
                 components=comps, unit=first.unit, attributes=first.attributes)


def gather_fields(comm, fields: Optional[Dict[str, Any]]) -> Dict[str, Field]:
    """Collective: the whole fields on rank 0 ({} on the others). ``fields`` maps names to a
    FieldBlock on every rank, or to a Field on rank 0 (None or absent elsewhere); every rank
    names the same fields."""
    try:
        out, problem = _gather(comm, dict(fields or {})), None
    except UsageError as e:  # on one rank: every rank must raise it, or the others wait forever
        out, problem = {}, f"rank {comm.rank}: {e}"
    problems = [p for p in comm.allgather(problem) if p]
    if problems:
        raise UsageError(problems[0])
    return out


def _gather(comm, fields: Dict[str, Any]) -> Dict[str, Field]:
    names = sorted(fields)
    all_names = comm.allgather(names)
    if any(n != all_names[0] for n in all_names):
        raise UsageError(f"every rank must name the same fields; got {all_names[:4]}...")
    out: Dict[str, Field] = {}
    for name in names:
        value = fields[name]
        kind = "block" if isinstance(value, FieldBlock) else "field" if isinstance(value, Field) else "none"
        kinds = comm.allgather(kind)
        if "block" in kinds:
            if any(k != "block" for k in kinds):
                raise UsageError(f"field '{name}': every rank must give a FieldBlock")
            meta = dataclasses.replace(value, array=None, ghosts=None)  # what rank 0 needs besides the samples
            item = (comm.rank, np.ascontiguousarray(value.interior()), list(value.offset), meta)
            gathered = comm.gather(item, root=0)
            if comm.rank == 0:
                out[name] = _assemble(name, gathered)
        else:
            if kinds[0] != "field" or any(k == "field" for k in kinds[1:]):
                raise UsageError(f"field '{name}': a whole Field is given by rank 0 alone (the others give None)")
            if comm.rank == 0:
                out[name] = value
    return out
