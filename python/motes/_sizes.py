"""Where a dataset's bytes go (``motes info --sizes``, :meth:`motes.Dataset.sizes`): every
section of every particle file (``File.section_sizes()``: role, column, kind, bytes), summed
over the steps, species and part files chosen, by column and by role, with what each index
costs against the index budget and why the writer built it.

Layout of the dict (every byte count an int; shares in percent)::

    {"path", "steps": [indexes], "files", "particles", "raw_bytes", "file_bytes",
     "species": [{"name", "files", "particles", "raw_bytes", "file_bytes",
                  "columns": [{"name", "dtype", "raw_bytes", "values_bytes", "values_percent",
                               "bits_per_particle", "index", "quantile_files", "quantile_bytes",
                               "tail_bytes", "ranges_bytes", "bitmaps_bytes"}],
                  "file_level": {"tree", "tail covers", "id index", "derived quantities",
                                 "schema", "other", "header and padding"},
                  "id_index": None | {"column", "bytes", "bits_per_particle",
                                      "log2_n_factorial_per_particle"}}],
     "roles": {role: bytes},
     "index": {"bytes", "percent_of_raw", "budget_percent", "largest_file_percent", "roles": {role: bytes}},
     "why": {role: text}}

``raw_bytes`` are the columns' bytes as numbers (count x dtype size, the id column included).
The index counted against the budget is the roles of :data:`INDEX_ROLES` (the tree, node
ranges and bitmaps, quantile codes and edges, tail indexes and their covers); the id index
(with ids by index, the id column's only storage) and derived quantities (asked by name) are
not. The roles together are the files' bytes: every byte of a particle file is in a section,
its table or header, or padding."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from .dtypes import numpy_dtype

__all__ = ["sizes", "INDEX_ROLES", "INDEX_BUDGET_PERCENT"]

#: What the index budget counts (File.section_sizes roles).
INDEX_ROLES = ("tree", "node ranges", "bitmaps", "quantile index", "tail index", "tail covers")
#: The writer's default index budget (WriteOptions.index_budget), in percent of the raw bytes.
INDEX_BUDGET_PERCENT = 5.0
#: The roles that are not per column, in the order they are printed.
FILE_ROLES = ("tree", "tail covers", "id index", "derived quantities", "schema", "other", "header and padding")

#: Why each index is there: the writer's rules (cpp/motes/particles/writer.cpp, choose_indexes).
WHY = {
    "tree": "always: the spatial k-d tree (8 bytes a node) whose level-of-detail order lets a "
            "box or a preview read a prefix of each node's points",
    "node ranges": "always: each column's minimum and maximum per tree node (x, y, z stored raw, "
                   "others zstd-coded), which prunes the tree for a range on that column",
    "bitmaps": "always: each column's 32 value bins present per tree node",
    "quantile index": "a 1-byte quantile code per particle and 257 edges: automatic for a "
                      "spatially incoherent column (its tree leaves hold most of its value bins) "
                      "when its codes fit what the other indexes leave of the index budget "
                      "(first those that pay for themselves in smaller values); or asked "
                      "(index='quantile'); the later steps of a series follow its first step",
    "tail index": "default (tails=): every column but x, y, z and the id column, about 0.5% of "
                  "its values beyond each of two limits with their rows, for thresholds that "
                  "select a tail; a smaller share on files too small for the budget",
    "tail covers": "default (covering=): beside each tail, every other column's values at its "
                   "outermost 0.2% per side; shrunk, first, when the indexes would exceed the budget",
    "id index": "ids= (default: an integer column named id): the ids sorted with their rows, for "
                "tracking; with ids by index (format 2.7) the id column's only storage, so "
                "outside the budget; about log2(N!)/N bits a particle is what any order of N ids costs",
    "derived quantities": "asked by name (derived=): statistics and a tail index of each, outside the budget",
}


def _part_files(ds, step: Optional[int], species: Optional[str]):
    """(step, species name, File) of every part file chosen."""
    steps = ds.steps if step is None else [ds.step(step).index]
    found = False
    for s in steps:
        for name in ds.species_names(s):
            if species is not None and name != species:
                continue
            found = True
            src = ds.source(s, name)
            for k in range(src.part_count):
                yield s, name, src.part(k)
    if species is not None and not found and steps:
        ds.request(step=step, species=species)  # raises UsageError naming the species there are


def sizes(ds, step: Optional[int] = None, species: Optional[str] = None) -> Dict[str, Any]:
    """See :meth:`motes.Dataset.sizes`."""
    out_species: Dict[str, Dict[str, Any]] = {}
    roles: Dict[str, int] = {}
    steps_seen: List[int] = []
    files = particles = raw_total = file_total = 0
    largest = 0.0
    for s, name, f in _part_files(ds, step, species):
        if s not in steps_seen:
            steps_seen.append(s)
        info = f.column_info(False)
        n = int(f.count)
        sp = out_species.setdefault(name, {"name": name, "files": 0, "particles": 0, "raw_bytes": 0, "file_bytes": 0,
                                           "columns": {}, "file_level": {r: 0 for r in FILE_ROLES},
                                           "_id": {"column": None, "bytes": 0, "log2_fact": 0.0}})
        cols = sp["columns"]
        raw_file = 0
        for c in info:
            col = cols.setdefault(c["name"], {"name": c["name"], "dtype": c["dtype"], "raw_bytes": 0,
                                              "values_bytes": 0, "index": "none", "quantile_files": 0,
                                              "quantile_bytes": 0, "tail_bytes": 0, "ranges_bytes": 0,
                                              "bitmaps_bytes": 0})
            raw = n * numpy_dtype(c["dtype"]).itemsize
            col["raw_bytes"] += raw
            raw_file += raw
            if c["index"] == "quantile":
                col["index"] = "quantile"
                col["quantile_files"] += 1
        index_file = 0
        file_bytes = 0
        for role, column, _kind, nbytes in f.section_sizes():
            nbytes = int(nbytes)
            roles[role] = roles.get(role, 0) + nbytes
            file_bytes += nbytes
            if role in INDEX_ROLES:
                index_file += nbytes
            if role == "id index":
                sp["_id"]["column"] = column or sp["_id"]["column"]
            key = {"values": "values_bytes", "quantile index": "quantile_bytes", "tail index": "tail_bytes",
                   "node ranges": "ranges_bytes", "bitmaps": "bitmaps_bytes"}.get(role)
            if key and column in cols:
                cols[column][key] += nbytes
            else:
                sp["file_level"][role if role in sp["file_level"] else "other"] += nbytes
        if f.id_column:
            sp["_id"]["column"] = f.id_column
            sp["_id"]["log2_fact"] += math.lgamma(n + 1) / math.log(2)
        sp["files"] += 1
        sp["particles"] += n
        sp["raw_bytes"] += raw_file
        sp["file_bytes"] += file_bytes
        files += 1
        particles += n
        raw_total += raw_file
        file_total += file_bytes
        if raw_file:
            largest = max(largest, 100.0 * index_file / raw_file)
    species_list = []
    for sp in out_species.values():
        ident = sp.pop("_id")
        n = sp["particles"]
        columns = list(sp["columns"].values())
        for c in columns:
            c["values_percent"] = 100.0 * c["values_bytes"] / c["raw_bytes"] if c["raw_bytes"] else None
            c["bits_per_particle"] = 8.0 * c["values_bytes"] / n if n else None
        sp["columns"] = columns
        id_bytes = sp["file_level"]["id index"]
        sp["id_index"] = None if not ident["column"] else {
            "column": ident["column"], "bytes": id_bytes,
            "bits_per_particle": 8.0 * id_bytes / n if n else None,
            "log2_n_factorial_per_particle": ident["log2_fact"] / n if n else None}
        species_list.append(sp)
    index_roles = {r: roles.get(r, 0) for r in INDEX_ROLES}
    index_bytes = sum(index_roles.values())
    return {
        "path": ds.path,
        "steps": steps_seen,
        "files": files,
        "particles": particles,
        "raw_bytes": raw_total,
        "file_bytes": file_total,
        "species": species_list,
        "roles": roles,
        "index": {"bytes": index_bytes, "percent_of_raw": 100.0 * index_bytes / raw_total if raw_total else None,
                  "budget_percent": INDEX_BUDGET_PERCENT, "largest_file_percent": largest if files else None,
                  "roles": index_roles},
        "why": {r: WHY[r] for r in WHY if roles.get(r, 0)},
    }
