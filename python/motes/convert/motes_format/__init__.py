"""motes datasets as a conversion source and sink.

As a source, a species streams out in **spatial blocks**: its bounds are halved along
the longest axis until a block holds at most ``chunk_rows`` matching particles (counted
through the index, not by reading), and each block is one query. Chunks are therefore
spatially compact, and each carries its block as an openPMD particle patch
(``species.attributes["motes_patches"]``), so exported files can be read by region.
A ``where`` filter, a ``box`` and a ``quality`` or ``fraction`` select what is exported.

As a sink, every chunk becomes one part file of the step (``Writer.write_step_chunks``),
so an import never holds a whole step. What a species must be to become motes data is
decided by :func:`for_motes` (positions x, y, z, float; integer positions widened),
which ``motes write`` applies too, with :func:`step_attributes` and :func:`gather`.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ...dataset import Dataset
from ...errors import UsageError
from ...writer import Writer
from ..base import DEFAULT_CHUNK_ROWS, Chunk, LazyFields, Species, Step

# Step attributes under this key carry species-level metadata (openPMD record constants,
# offsets) through a motes dataset, whose steps have attributes but its species do not.
SPECIES_ATTRIBUTES = "species_attributes"
POSITIONS = ("x", "y", "z")
EXACT_INTEGERS = 2 ** 53  # float64 holds every integer up to this magnitude exactly


def last_step(path: str) -> Optional[Tuple[int, float]]:
    """The index and time of the last step of the motes dataset at ``path`` (None when it
    does not exist or has no step)."""
    from ..._core import DatasetCore

    if os.path.isdir(path) and DatasetCore.exists(path):
        steps = [(int(s["index"]), float(s["time"])) for s in DatasetCore.open(path).steps]
        return max(steps) if steps else None
    return None


def next_step(path: str) -> int:
    """The index after the last step of the motes dataset at ``path`` (0 when it does not
    exist or has no step): where an append of a step that does not give its index goes
    (``motes convert --append``, ``motes write``)."""
    last = last_step(path)
    return 0 if last is None else last[0] + 1


def for_motes(sp: Species) -> Species:
    """The species as motes stores it: the one rule of ``motes convert`` and ``motes write``.

    Positions ``x``, ``y``, ``z`` are required, and are floating point: integer positions
    are widened to float64, which is exact for every value up to 2^53 in magnitude (all of
    int8-32 and uint8-32); a larger value stops the import with a UsageError naming the
    column and row. Other columns keep their dtype (the sources already made them dtypes
    motes stores, see :func:`motes.convert.base.check_dtype`)."""
    where = f"{sp.source}: species '{sp.name}'" if sp.source else f"species '{sp.name}'"
    names = sp.column_names()
    missing = [a for a in POSITIONS if a not in names]
    if missing:
        raise UsageError(f"{where}: missing position column(s) {', '.join(missing)} "
                         f"(columns: {', '.join(names) or 'none'}; motes needs x, y and z)")
    ints = [n for n, dt in sp.columns if n in POSITIONS and np.dtype(dt).kind in "iu"]
    if not ints:
        return sp
    source_chunks = sp.chunks

    def chunks():
        row = 0
        for c in source_chunks():
            out = dict(c)
            for a in ints:
                v = np.asarray(c[a])
                if v.dtype.itemsize == 8:
                    bad = np.flatnonzero((v > EXACT_INTEGERS) | (v < -EXACT_INTEGERS) if v.dtype.kind == "i"
                                         else v > EXACT_INTEGERS)
                    if bad.size:
                        raise UsageError(f"{where}: integer position column '{a}' holds {v[bad[0]]} at row "
                                         f"{row + int(bad[0])}, beyond 2^53: float64 positions cannot hold it "
                                         "exactly (convert or scale it first)")
                out[a] = v.astype(np.float64)
            row += len(next(iter(c.values()))) if c else 0
            yield out

    return replace(sp, columns=[(n, np.dtype(np.float64) if n in ints else dt) for n, dt in sp.columns],
                   chunks=chunks)


def step_attributes(st: Step) -> Dict[str, Any]:
    """The attributes of a step written to motes: the step's own, and its species' metadata
    (openPMD records, constants, ...) under ``species_attributes``, since motes species carry
    no attributes of their own."""
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
    return attrs


def _blocks(ds: Dataset, step: int, species: str, where: Optional[str], box, detail: Dict, limit: int):
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
        n = ds.count(expr(blo, bhi, last), box=box, step=step, species=species, **detail)
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
         quality: Optional[float] = None, fraction: Optional[float] = None, columns: Optional[Sequence[str]] = None,
         species: Optional[Sequence[str]] = None, steps: Optional[Sequence[int]] = None) -> Iterator[Step]:
    ds = Dataset(path)
    # A fraction samples each file the same way whatever the filter, so the spatial blocks'
    # samples add up to the sample of the whole species.
    detail = {"quality": quality, "fraction": fraction}
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
            names = ds.request(columns=columns, step=index, species=name).columns
            dtypes = {c.name: c.dtype for c in schema}
            units = {c.name: c.unit for c in schema if c.unit and c.name in names}
            blocks, expr = _blocks(ds, index, name, where, box, detail, chunk_rows)

            def chunks(index=index, name=name, names=names, blocks=blocks, expr=expr):
                for blo, bhi, last, _ in blocks:
                    yield dict(ds.query(expr(blo, bhi, last), box=box, columns=names, step=index, species=name,
                                        **detail))

            attrs = dict(species_attrs.get(name, {}))
            offset = 0
            patches = []
            for blo, bhi, last, n in blocks:
                patches.append({"offset": blo, "extent": [bhi[a] - blo[a] for a in range(3)], "numParticles": n,
                                "numParticlesOffset": offset})
                offset += n
            attrs["motes_patches"] = patches
            out[name] = Species(name, [(c, np.dtype(dtypes[c])) for c in names], offset, chunks, units, attrs)
        yield Step(index, st.time, extra, out, fields=_fields_of(ds, index))


def _fields_of(ds: Dataset, index: int):
    """The fields of a step, each read whole when looked up."""
    def kind(name: str) -> str:  # from the field file's header, without its values
        f = ds.field(name, index)
        return f.geometry if f.geometry != "cartesian" else "rectilinear" if f.coords is not None else "cartesian"

    return LazyFields({name: (lambda name=name: ds.field(name, index).to_field()) for name in ds.field_names(index)},
                      kind)


def write(path: str, steps: Iterable[Step], *, leaf_size: Optional[int] = None, lod_count: Optional[int] = None,
          sync: Optional[bool] = None, threads: Optional[int] = None, index: Optional[Dict[str, str]] = None,
          memory_limit: int = 1 << 30) -> None:
    """Writes the steps into a new motes dataset. A species whose data fit in
    ``memory_limit`` bytes is gathered and written as one file (the best layout); a larger
    one is sorted into spatial buckets on disk first (two passes over the source) and each
    bucket becomes one part file, so parts stay spatially disjoint and queries skip them.
    The writing options are :class:`motes.Writer`'s (None: the core's defaults)."""
    w = Writer(path, leaf_size=leaf_size, lod_count=lod_count, sync=sync, threads=threads)
    wrote = False
    for st in steps:
        if not st.species and not st.fields:
            continue
        attrs = step_attributes(st)
        st = replace(st, species={name: for_motes(sp) for name, sp in st.species.items()})
        spill = path.rstrip("/") + ".spill"
        try:
            w.write_step_chunks(st.index, {name: _parts(sp, memory_limit, spill) for name, sp in st.species.items()},
                                time=st.time, attributes=attrs, index=index,
                                units={name: sp.units for name, sp in st.species.items()},
                                fields={name: st.fields[name] for name in st.fields})
        finally:
            shutil.rmtree(spill, ignore_errors=True)
        wrote = True
    if not wrote:
        raise UsageError("nothing to write: the source has no steps with species or fields")


def _row_bytes(sp: Species) -> int:
    return sum(np.dtype(dt).itemsize for _, dt in sp.columns)


def _parts(sp: Species, memory_limit: int, spill: str) -> Iterator[Chunk]:
    """The part files' rows of a species: all of it at once when it fits in memory_limit,
    else spatial buckets of at most about memory_limit / 2 bytes each."""
    if sp.count * _row_bytes(sp) <= memory_limit:
        yield gather(sp)
    else:
        yield from _buckets(sp, max(1, memory_limit // 2 // _row_bytes(sp)), spill)


def gather(sp: Species) -> Chunk:
    """Every row of a species, in memory: one array per column."""
    out = {name: np.empty(sp.count, dtype=dt) for name, dt in sp.columns}
    at = 0
    for c in sp.chunks():
        n = len(next(iter(c.values()))) if c else 0
        if at + n > sp.count:
            raise UsageError(f"species '{sp.name}' gave more rows than the {sp.count} it announced")
        for name, _ in sp.columns:
            out[name][at:at + n] = c[name]
        at += n
    if at != sp.count:
        raise UsageError(f"species '{sp.name}' gave {at} rows, announced {sp.count}")
    return out


def _buckets(sp: Species, bucket_rows: int, spill: str) -> Iterator[Chunk]:
    """External spatial sort: k-d split planes from a sample of the positions (pass 1),
    rows appended to per-bucket files (pass 2), then each bucket read back whole."""
    stride = max(1, sp.count // (1 << 20))
    sample = [[], [], []]
    for c in sp.chunks():
        for a, axis in enumerate("xyz"):
            sample[a].append(np.asarray(c[axis][::stride], dtype=np.float64))
    pts = np.stack([np.concatenate(s) for s in sample], axis=1)
    buckets = max(1, -(-sp.count // bucket_rows))
    # Nodes of a k-d tree with `buckets` leaves: (axis, value, left, right); leaves are -1 - bucket.
    nodes: List[Tuple[int, float, int, int]] = []

    def build(p: np.ndarray, k: int) -> int:
        if k <= 1 or len(p) < 2:
            build.leaves += 1
            return -build.leaves
        axis = int(np.argmax(p.max(axis=0) - p.min(axis=0)))
        left_k = k // 2
        cut = np.partition(p[:, axis], len(p) * left_k // k)[len(p) * left_k // k]
        lo, hi = p[p[:, axis] < cut], p[p[:, axis] >= cut]
        me = len(nodes)
        nodes.append((axis, float(cut), 0, 0))
        left = build(lo, left_k)
        right = build(hi, k - left_k)
        nodes[me] = (axis, float(cut), left, right)
        return me

    build.leaves = 0
    root = build(pts, buckets)
    del pts, sample
    os.makedirs(spill, exist_ok=True)
    counts: Dict[int, int] = {}
    axis_of = np.array([n[0] for n in nodes], dtype=np.int64)
    value_of = np.array([n[1] for n in nodes], dtype=np.float64)
    left_of = np.array([n[2] for n in nodes], dtype=np.int64)
    right_of = np.array([n[3] for n in nodes], dtype=np.int64)
    for c in sp.chunks():
        n = len(c["x"])
        pos = [np.asarray(c[a], dtype=np.float64) for a in "xyz"]
        where = np.full(n, root, dtype=np.int64)
        active = np.arange(n) if root >= 0 else np.empty(0, dtype=np.int64)
        while active.size:  # one tree level per pass, all rows at once
            node = where[active]
            coord = np.choose(axis_of[node], [pos[0][active], pos[1][active], pos[2][active]])
            step = np.where(coord < value_of[node], left_of[node], right_of[node])
            where[active] = step
            active = active[step >= 0]
        bucket = -1 - where
        order = np.argsort(bucket, kind="stable")
        bounds = np.searchsorted(bucket[order], np.arange(build.leaves + 1))
        for b in range(build.leaves):
            sel = order[bounds[b]:bounds[b + 1]]
            if not len(sel):
                continue
            counts[b] = counts.get(b, 0) + len(sel)
            for name, dt in sp.columns:
                with open(os.path.join(spill, f"{b}.{name}"), "ab") as f:
                    np.ascontiguousarray(c[name][sel], dtype=dt).tofile(f)
    for b in sorted(counts):
        yield {name: np.fromfile(os.path.join(spill, f"{b}.{name}"), dtype=dt) for name, dt in sp.columns}
        for name, _ in sp.columns:
            os.remove(os.path.join(spill, f"{b}.{name}"))
