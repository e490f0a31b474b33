"""What the golden fixtures read back as: the reads listed in each folder's ``queries.json``,
done on the fixtures of that folder.

Both sides use this module: the script that wrote a folder (``make_<folder>.py``) stored
what these reads gave then in ``answers.json`` (or ``answers.npz``), and
tests/python/test_golden.py does the same reads on a copy of the folder and compares. The
list of reads is in one place, ``queries.json``, so the answers cannot stop lining up with
the queries that made them.

``queries.json`` holds ``{"answers": FILE, "reads": [READ, ...]}``; each READ names the
dataset of the folder it reads (``"dataset"``), what it reads (``"read"``) and the answer
key(s) it fills (``"key"``: a pattern with ``{column}``, ``{field}``, ``{component}`` or
``{level}``):

* ``query``: ``Dataset.query(**query)`` of ``columns`` (a list, or ``"all"``: the schema's),
  one answer per column when the key has ``{column}``; otherwise one answer holding the
  count and each column (format 2.2). Every query's ``count`` must equal its rows.
* ``file``: an attribute of ``Dataset.file()`` (``attribute``), as it is.
* ``track``: ``Dataset.track(ids)``: ``present`` under ``present_key``, each column's array.
* ``field_levels``: each field of ``fields`` (a list, or ``"all"``) read at every level
  (of each component when the key has ``{component}``: ``None`` for a scalar field).
* ``field_box``: the same fields read in ``index_box``.
* ``field_geometry``: [geometry, modes, imag, dims, origin, spacing, centering].

Arrays are answered as [dtype, size, SHA-256 of the bytes] in ``answers.json`` and as
themselves in ``answers.npz`` (the first release's fixtures).
"""
import hashlib
import json
import os
import shutil
import struct

import numpy as np

import motes

HERE = os.path.dirname(os.path.abspath(__file__))


def folders():
    """The golden folders: those with a queries.json."""
    return sorted(d for d in os.listdir(HERE) if os.path.isfile(os.path.join(HERE, d, "queries.json")))


def queries(folder):
    with open(os.path.join(folder, "queries.json")) as fh:
        return json.load(fh)


def digest(a):
    a = np.asarray(a)
    return [str(a.dtype), int(a.size), hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()]


def copy(name, dst):
    """A copy of golden folder ``name`` under ``dst`` (nothing a test does may touch the originals)."""
    path = os.path.join(dst, name)
    shutil.copytree(os.path.join(HERE, name), path)
    return path


def clear(folder):
    """Empties ``folder`` for its script to write the fixtures again, but for its queries.json
    (created when absent)."""
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if name != "queries.json":
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def header(path):
    """The (major, minor) version and the feature bits of a particle or field file."""
    with open(path, "rb") as fh:
        b = fh.read(24)
    return struct.unpack_from("<HH", b, 8), struct.unpack_from("<Q", b, 16)[0]


def _query_args(q):
    """queries.json's query (JSON: lists) as Dataset.query's keywords: a quality range is a tuple."""
    q = dict(q)
    if isinstance(q.get("quality"), list):
        q["quality"] = tuple(q["quality"])
    return q


def _fields(ds, read):
    names = read["fields"]
    return ds.field_names() if names == "all" else names


def _read(ds, read, out):
    kind, key = read["read"], read["key"]
    if kind == "query":
        q = _query_args(read.get("query", {}))
        scope = {k: q[k] for k in ("step", "species") if k in q}
        cols = read["columns"]
        if cols == "all":
            cols = [c.name for c in ds.schema(**scope)]
        t = ds.query(columns=cols, **q)
        count = ds.count(**q)
        assert count == len(t), (read, count, len(t))  # analyses agree with the rows the query returns
        if "{column}" in key:
            out.update({key.format(column=c): t[c] for c in cols})
        else:
            out[key] = {"count": count, **{c: t[c] for c in cols}}
    elif kind == "file":
        out[key] = getattr(ds.file(), read["attribute"])
    elif kind == "track":
        t = ds.track(read["ids"])
        out[read["present_key"]] = t.present
        out.update({key.format(column=c): v for c, v in sorted(t.arrays.items())})
    elif kind in ("field_levels", "field_box"):
        for name in _fields(ds, read):
            f = ds.field(name)
            components = (f.components or (None,)) if "{component}" in key else (None,)
            for c in components:
                if kind == "field_box":
                    box = tuple(tuple(b) for b in read["index_box"])
                    out[key.format(field=name, component=c)] = f.read(index_box=box, component=c)
                else:
                    for level in range(f.levels + 1):
                        out[key.format(field=name, component=c, level=level)] = f.read(level=level, component=c)
    elif kind == "field_geometry":
        for name in _fields(ds, read):
            f = ds.field(name)
            out[key.format(field=name)] = [f.geometry, f.modes, f.imag if f.geometry == "thetaMode" else None,
                                           list(f.dims), list(f.origin), list(f.spacing), f.centering]
    else:
        raise ValueError(f"queries.json: unknown read '{kind}'")


def answers_of(folder):
    """What the reads of ``folder``'s queries.json give on its fixtures (arrays as arrays)."""
    out = {}
    datasets = {}
    for read in queries(folder)["reads"]:
        name = read["dataset"]
        if name not in datasets:
            datasets[name] = motes.open(os.path.join(folder, name))
        _read(datasets[name], read, out)
    return out


def as_stored(answers):
    """``answers`` as answers.json holds them: arrays as digests, tuples as lists."""

    def encode(v):
        if isinstance(v, np.ndarray):
            return digest(v)
        if isinstance(v, dict):
            return {k: encode(x) for k, x in v.items()}
        return v

    return json.loads(json.dumps({k: encode(v) for k, v in answers.items()}))


def stored_answers(folder):
    """answers.json as it is; answers.npz as digests (compared bit for bit, NaN payloads included)."""
    name = queries(folder)["answers"]
    path = os.path.join(folder, name)
    if name.endswith(".npz"):
        with np.load(path) as a:
            return {k: digest(a[k]) for k in a.files}
    with open(path) as fh:
        return json.load(fh)


def write_answers(folder, indent=1):
    """Writes the answers of ``folder`` (json; format 1's npz kept its arrays: see make_format1.py)."""
    with open(os.path.join(folder, queries(folder)["answers"]), "w") as fh:
        json.dump(as_stored(answers_of(folder)), fh, indent=indent, sort_keys=True)
