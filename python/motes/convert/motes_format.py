"""motes datasets as a conversion source and sink.

As a source, a species streams out in **spatial blocks**: its bounds are halved along
the longest axis until a block holds at most ``chunk_rows`` matching particles (counted
through the index, not by reading), and each block is one query. Chunks are therefore
spatially compact, and each carries its block as an openPMD particle patch
(``species.attributes["motes_patches"]``), so exported files can be read by region.
A ``where`` filter, a ``box`` and a ``quality`` select what is exported.

As a sink, every chunk becomes one part file of the step (``Writer.write_step_chunks``),
so an import never holds a whole step.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .._core import UsageError
from ..dataset import Dataset, Writer
from .base import DEFAULT_CHUNK_ROWS, Species, Step

# Step attributes under this key carry species-level metadata (openPMD record constants,
# offsets) through a motes dataset, whose steps have attributes but its species do not.
SPECIES_ATTRIBUTES = "species_attributes"


def _blocks(ds: Dataset, step: int, species: str, where: Optional[str], box, quality, limit: int):
    """Half-open boxes (lo, hi, last) covering the species, each with at most `limit` matches."""
    (lo, hi) = ds.bounds(step, species)
    lo, hi = [float(v) for v in lo], [float(v) for v in hi]
    out: List[Tuple[List[float], List[float], List[bool], int]] = []

    def expr(blo, bhi, last):
        parts = []
        for a, name in enumerate("xyz"):
            parts.append(f"{name} >= {blo[a]!r}")
            parts.append(f"{name} {'<=' if last[a] else '<'} {bhi[a]!r}")
        block = " and ".join(parts)
        return f"({where}) and {block}" if where else block

    def visit(blo, bhi, last, depth):
        n = ds.count(expr(blo, bhi, last), box=box, quality=quality, step=step, species=species)
        if n == 0:
            return
        ext = [bhi[a] - blo[a] for a in range(3)]
        axis = int(np.argmax(ext))
        mid = blo[axis] + 0.5 * ext[axis]
        if n <= limit or depth >= 48 or not (blo[axis] < mid < bhi[axis]):
            out.append((blo, bhi, last, n))
            return
        lhi, rlo = list(bhi), list(blo)
        lhi[axis], rlo[axis] = mid, mid
        llast = list(last)
        llast[axis] = False
        visit(blo, lhi, llast, depth + 1)
        visit(rlo, bhi, last, depth + 1)

    visit(lo, hi, [True, True, True], 0)
    return out, expr


def read(path: str, *, chunk_rows: int = DEFAULT_CHUNK_ROWS, where: Optional[str] = None, box=None,
         quality: float = 1.0, columns: Optional[Sequence[str]] = None, species: Optional[Sequence[str]] = None,
         steps: Optional[Sequence[int]] = None) -> Iterator[Step]:
    ds = Dataset(path)
    for index in ds.steps:
        if steps is not None and index not in steps:
            continue
        st = ds.step(index)
        extra = dict(st.attributes)
        species_attrs = extra.pop(SPECIES_ATTRIBUTES, {}) or {}
        out: Dict[str, Species] = {}
        for name in st.species:
            if species is not None and name not in species:
                continue
            schema = ds.schema(index, name)
            names = ds._columns(columns, index, name)
            dtypes = {c.name: c.dtype for c in schema}
            units = {c.name: c.unit for c in schema if c.unit and c.name in names}
            blocks, expr = _blocks(ds, index, name, where, box, quality, chunk_rows)

            def chunks(index=index, name=name, names=names, blocks=blocks, expr=expr):
                for blo, bhi, last, _ in blocks:
                    yield dict(ds.query(expr(blo, bhi, last), box=box, quality=quality, columns=names, step=index,
                                        species=name))

            attrs = dict(species_attrs.get(name, {}))
            offset = 0
            patches = []
            for blo, bhi, last, n in blocks:
                patches.append({"offset": blo, "extent": [bhi[a] - blo[a] for a in range(3)], "numParticles": n,
                                "numParticlesOffset": offset})
                offset += n
            attrs["motes_patches"] = patches
            out[name] = Species(name, [(c, np.dtype(dtypes[c])) for c in names], offset, chunks, units, attrs)
        yield Step(index, st.time, extra, out)


def write(path: str, steps: Iterable[Step], *, leaf_size: int = 512, lod_count: int = 8, sync: bool = True,
          threads: int = 0, index: Optional[Dict[str, str]] = None) -> None:
    w = Writer(path, leaf_size=leaf_size, lod_count=lod_count, sync=sync, threads=threads)
    wrote = False
    for st in steps:
        if not st.species:
            continue
        attrs = dict(st.attributes)
        species_attrs = {name: {k: v for k, v in sp.attributes.items() if k != "motes_patches"}
                         for name, sp in st.species.items()}
        species_attrs = {k: v for k, v in species_attrs.items() if v}
        if species_attrs:
            attrs[SPECIES_ATTRIBUTES] = species_attrs
        try:
            json.dumps(attrs)
        except (TypeError, ValueError) as e:
            raise UsageError(f"step {st.index}: attributes are not JSON-serialisable ({e})") from None
        for name, sp in st.species.items():
            if not {"x", "y", "z"} <= set(sp.column_names()):
                raise UsageError(f"step {st.index}, species '{name}': motes needs position columns x, y, z "
                                 f"(columns: {', '.join(sp.column_names())}); map them when importing")
        w.write_step_chunks(st.index, {name: _nonempty_first(sp) for name, sp in st.species.items()}, time=st.time,
                            attributes=attrs, index=index, units={name: sp.units for name, sp in st.species.items()})
        wrote = True
    if not wrote:
        raise UsageError("nothing to write: the source has no steps with species")


def _nonempty_first(sp: Species):
    """The chunks of a species; an all-empty species still yields one empty chunk with its columns."""
    any_rows = False
    for c in sp.chunks():
        if c and len(next(iter(c.values()))):
            any_rows = True
            yield c
    if not any_rows:
        yield {name: np.empty(0, dtype=dt) for name, dt in sp.columns}
