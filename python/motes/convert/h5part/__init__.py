"""H5Part files (as read by ParaView's and VisIt's H5Part readers): read and write.

Layout::

    /                       root attribute motes_species = "<name>" (written by motes; optional)
    /Step#0                 attributes: TimeValue (float64), motes_step (int64), step attributes
        x, y, z             1-D datasets, one per variable, all of one length
        px, id, ...         (dataset attribute "unit": the column's unit text, when it has one)
    /Step#1
        ...

Step groups are numbered from 0 consecutively; the motes step index is kept in the
``motes_step`` attribute (without it, reading takes N of ``Step#N``). ``TimeValue`` is the
time (without it, reading takes the step index, as ParaView does). Step attributes that are
strings, integers, floats or flat lists of only integers / only floats are stored as plain
HDF5 attributes; others (booleans, null, dicts, nested or mixed lists) as JSON text, their
names listed in the step attribute ``motes_json``. Species attributes go as JSON text in the
step attribute ``motes_species_attributes``.

H5Part has no species: a file holds one. :func:`write` takes the only species of the steps
or the one named by ``species=``; :func:`read` names it by the root attribute
``motes_species``, else ``"particles"``.

Grid fields of a step (``Step.fields``) live in the step group as H5hut writes them,
``/Step#n/Block/<field>/0, 1, ...``: see :mod:`motes.convert.h5part.h5block`.
"""

from __future__ import annotations

import json
import os
import re
from typing import Iterable, Iterator, List, Optional, Sequence, Union

import numpy as np

from ...errors import FormatError, UsageError
from . import h5block
from ..base import (DEFAULT_CHUNK_ROWS, LazyFields, Species, Step, check_dtype, chunk_column, one_species, pick_species,
                    species_selection)
from ..hdf5 import (H5_CHUNK_ROWS, attr_to_json, check_chunk_rows, created_file, dtype_of, file_chunks, h5_filter,
                   open_file, read_attributes,
                   unit_of, write_attributes)

__all__ = ["read", "write"]

STEP_RE = re.compile(r"^Step#(\d+)$")
DEFAULT_SPECIES = "particles"
SPECIES_ATTR = "motes_species"          # root: the species name
STEP_ATTR = "motes_step"                # step group: the motes step index
TIME_ATTR = "TimeValue"                 # step group: the time (H5Part / ParaView convention)
JSON_ATTR = "motes_json"                # step group: names of attributes stored as JSON text
SPECIES_ATTRS_ATTR = "motes_species_attributes"   # step group: species attributes, JSON text
_RESERVED_STEP_ATTRS = {TIME_ATTR, STEP_ATTR, JSON_ATTR, SPECIES_ATTRS_ATTR}


def _steps_selection(steps) -> Optional[List[int]]:
    if steps is None:
        return None
    if isinstance(steps, (int, np.integer)) and not isinstance(steps, bool):
        return [int(steps)]
    try:
        items = list(steps)
        if any(isinstance(s, (bool, float)) for s in items):
            raise TypeError
        out = [int(s) for s in items]
    except (TypeError, ValueError):
        raise UsageError(f"steps must be a step index or a list of step indices, got {steps!r}") from None
    return out


def _scalar(value) -> Optional[float]:
    a = np.asarray(value)
    if a.size != 1 or a.dtype.kind not in "iuf":
        return None
    return float(a.reshape(-1)[0])


def read(path, *, chunk_rows: int = DEFAULT_CHUNK_ROWS, species=None, steps=None) -> Iterator[Step]:
    """Steps of an H5Part file, one species each; columns stream in chunks of ``chunk_rows`` rows.

    species: a name or list of names to read; an H5Part file holds one species, so any other
    name is an error. When the file names no species (no ``motes_species`` root attribute), a
    single name given here names it (default ``"particles"``).
    steps: a step index or a list of them (motes_step, else N of Step#N); default all.

    A step's H5Block fields (``/Step#n/Block``) become its ``fields``, each read when looked up.

    The whole layout is checked before the first step is returned: FormatError for a file
    without Step#N groups, datasets that are not 1-D or of unequal lengths within a step,
    H5Block fields that are not as :mod:`~motes.convert.h5part.h5block` describes; UsageError for
    datasets of a type motes cannot store (strings, complex, compound)."""
    chunk_rows = check_chunk_rows(chunk_rows)
    path = os.fspath(path)
    wanted_species = species_selection(species)
    wanted_steps = _steps_selection(steps)

    with open_file(path) as f:
        groups = []
        for name in f:
            m = STEP_RE.match(name)
            if m is not None:
                groups.append((int(m.group(1)), name))
        if not groups:
            found = ", ".join(sorted(f)[:10]) or "nothing"
            raise FormatError(f"{path}: not an H5Part file (no Step#N groups at the root; found: {found})")
        groups.sort()

        named = attr_to_json(f.attrs[SPECIES_ATTR]) if SPECIES_ATTR in f.attrs else None
        if named is not None and (not isinstance(named, str) or not named):
            raise FormatError(f"{path}: root attribute {SPECIES_ATTR} must be a species name, got {named!r}")
        sp_name = named or DEFAULT_SPECIES
        if wanted_species is not None:
            if named is None and len(wanted_species) == 1:
                sp_name = wanted_species[0]
            else:
                missing = [s for s in wanted_species if s != sp_name]
                if missing:
                    raise UsageError(f"{path}: no species {', '.join(repr(s) for s in missing)} "
                                     f"(the file holds species '{sp_name}' only)")
        root_attrs = read_attributes(f, json_attr=JSON_ATTR, skip={SPECIES_ATTR})

        plans = []
        for n, gname in groups:
            g = f[gname]
            if not hasattr(g, "keys"):
                raise FormatError(f"{path}: '{gname}' is a dataset; H5Part steps are groups")
            index = n
            if STEP_ATTR in g.attrs:
                v = _scalar(g.attrs[STEP_ATTR])
                if v is None or v != int(v):
                    raise FormatError(f"{path}: {gname}: attribute {STEP_ATTR} must be an integer")
                index = int(v)
            plans.append((index, n, gname))

        if wanted_steps is not None:
            have = {p[0]: p for p in plans}
            missing = [s for s in wanted_steps if s not in have]
            if missing:
                avail = ", ".join(str(p[0]) for p in plans[:20]) + (", ..." if len(plans) > 20 else "")
                raise UsageError(f"{path}: no step {', '.join(map(str, missing))} (steps: {avail})")
            plans = [have[s] for s in dict.fromkeys(wanted_steps)]

        out: List[Step] = []
        for index, n, gname in plans:
            g = f[gname]
            where = f"{path}: {gname}"
            datasets = []
            for name in g:
                obj = g.get(name)
                if obj is None or not hasattr(obj, "shape"):
                    continue  # subgroups (H5hut field blocks) and broken links are not particle variables
                if obj.shape is None or len(obj.shape) != 1:
                    raise FormatError(f"{where}: dataset '{name}' is not 1-D (shape {obj.shape}); "
                                      "H5Part variables are 1-D arrays, one value per particle")
                datasets.append((name, obj))
            lengths = {name: int(obj.shape[0]) for name, obj in datasets}
            if len(set(lengths.values())) > 1:
                detail = ", ".join(f"{k}: {v}" for k, v in lengths.items())
                raise FormatError(f"{where}: datasets have unequal lengths ({detail}); "
                                  "an H5Part step holds one value per particle in every dataset")
            count = next(iter(lengths.values()), 0)
            schema, plan, units = [], [], {}
            for name, obj in datasets:
                dt = dtype_of(where, name, obj)
                schema.append((name, dt))
                plan.append((name, name, None, dt))
                u = unit_of(obj)
                if u is not None:
                    units[name] = u
            time = float(index)
            if TIME_ATTR in g.attrs:
                t = _scalar(g.attrs[TIME_ATTR])
                if t is None:
                    raise FormatError(f"{where}: attribute {TIME_ATTR} must be a number")
                time = t
            attributes = read_attributes(g, json_attr=JSON_ATTR, skip=_RESERVED_STEP_ATTRS)
            sp_attrs = dict(root_attrs)
            if SPECIES_ATTRS_ATTR in g.attrs:
                try:
                    extra = json.loads(attr_to_json(g.attrs[SPECIES_ATTRS_ATTR]))
                except (TypeError, ValueError):
                    raise FormatError(f"{where}: attribute {SPECIES_ATTRS_ATTR} is not JSON text") from None
                if isinstance(extra, dict):
                    sp_attrs.update(extra)
            sp = Species(name=sp_name, columns=schema, count=count,
                         chunks=file_chunks(path, gname, plan, count, chunk_rows),
                         units=units, attributes=sp_attrs)
            fields = h5block.read(path, g)
            # a step group with fields and no particle dataset (H5hut's field-only steps) holds no species
            species_of = {} if fields and not datasets else {sp_name: sp}
            out.append(Step(index=index, time=time, attributes=attributes, species=species_of,
                            fields=LazyFields(fields)))
    return iter(out)


def _write_species(path: str, g, gname: str, sp: Species, compression: str = "none") -> None:
    where = f"{path}: {gname} (species '{sp.name}')"
    count = int(sp.count)
    if count < 0:
        raise UsageError(f"{where}: negative row count {count}")
    dsets = {}
    for col, dt in sp.columns:
        if not isinstance(col, str) or not col or "/" in col or col in (".", ".."):
            raise UsageError(f"{where}: column name {col!r} cannot be an HDF5 dataset name")
        if col in dsets:
            raise UsageError(f"{where}: column '{col}' appears twice")
        if col == h5block.BLOCK and col in g:
            raise UsageError(f"{where}: column '{col}' clashes with the group of the step's H5Block fields")
        dtype = check_dtype(where, col, dt)
        if compression == "none" or count == 0:
            ds = g.create_dataset(col, shape=(count,), dtype=dtype)
        else:
            ds = g.create_dataset(col, shape=(count,), dtype=dtype, chunks=(min(count, H5_CHUNK_ROWS),),
                                  **h5_filter(compression))
        unit = sp.units.get(col)
        if unit:
            ds.attrs["unit"] = str(unit)
        dsets[col] = ds
    unknown = set(sp.units) - set(dsets)
    if unknown:
        raise UsageError(f"{where}: units given for unknown column(s) {', '.join(sorted(map(str, unknown)))}")
    pos = 0
    if not dsets:
        return
    for chunk in sp.chunks():
        n = None
        for col, ds in dsets.items():
            a = chunk_column(chunk, col, where)
            if n is None:
                n = len(a)
                if pos + n > count:
                    raise UsageError(f"{where}: chunks hold more rows than the species' count {count}")
            elif len(a) != n:
                raise UsageError(f"{where}: chunk columns have unequal lengths ('{col}': {len(a)}, expected {n})")
            if n:
                ds[pos:pos + n] = a.astype(ds.dtype, copy=False)
        pos += n or 0
    if pos != count:
        raise UsageError(f"{where}: chunks hold {pos} rows but the species' count is {count}")


def write(path, steps: Iterable[Step], *, species: Optional[Union[str, Sequence[str]]] = None,
          compression: str = "none") -> None:
    """Writes steps as an H5Part file, one ``Step#i`` group per step (i = 0, 1, ...), streaming each
    column chunk by chunk into a dataset of the species' full length.

    compression: "none" (contiguous datasets, the default), or an HDF5 filter on chunked
    datasets: "gzip" (every HDF5 reads it), "zstd" or "blosc2" (readers need hdf5plugin).

    species: the species to write; needed when a step holds several. A step without it is
    written as an empty step group (time and attributes kept). The step's ``fields`` are
    written as H5Block fields (:mod:`~motes.convert.h5part.h5block`), compressed like the columns.
    The file is removed on error."""
    path = os.fspath(path)
    filters = h5_filter(compression)  # checked before the file is created
    wanted = one_species(species, "an H5Part file")
    with created_file(path) as f:
        chosen = wanted
        i = -1
        for i, step in enumerate(steps):
            gname = f"Step#{i}"
            g = f.create_group(gname, track_order=True)   # datasets read back in column order
            try:
                t = float(step.time)
                idx = int(step.index)
            except (TypeError, ValueError):
                raise UsageError(f"{path}: step {step.index!r}: time must be a number and index an integer") from None
            g.attrs[TIME_ATTR] = np.float64(t)
            g.attrs[STEP_ATTR] = np.int64(idx)
            write_attributes(g, step.attributes or {}, f"{path}: {gname} (step {idx})", JSON_ATTR,
                             reserved=_RESERVED_STEP_ATTRS)
            h5block.write(path, g, step.fields, filters)
            sp = pick_species(path, step, wanted, chosen, "an H5Part file")
            if sp is None:
                continue
            if chosen is None:
                chosen = sp.name
                f.attrs[SPECIES_ATTR] = str(chosen)
            if sp.attributes:
                try:
                    g.attrs[SPECIES_ATTRS_ATTR] = json.dumps(sp.attributes)
                except (TypeError, ValueError) as e:
                    raise UsageError(f"{path}: species '{sp.name}' attributes are not JSON-serialisable ({e})") from None
            _write_species(path, g, gname, sp, compression)
        if chosen is not None and SPECIES_ATTR not in f.attrs:
            f.attrs[SPECIES_ATTR] = str(chosen)
        if i < 0:
            raise UsageError(f"{path}: no steps to write")
