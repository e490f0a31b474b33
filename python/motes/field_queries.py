"""Grid fields as histogram axes and output columns: ``ds.histogram("energy", "field('Bz')")``
and ``ds.query(columns=["x", "field('E', 'x')"])``. The particles are selected by the core as
for any query; their positions are gathered and the field sampled there (trilinear, NaN
outside the grid), then binned as ``numpy.histogram``/``histogram2d`` bin (the conventions of
:meth:`motes.Dataset.histogram`)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._args import histogram_range

_FIELD = re.compile(r"""^\s*field\(\s*(['"])([A-Za-z0-9_.\-]+)\1\s*(?:,\s*(['"])([A-Za-z0-9_.\-]+)\3\s*)?\)\s*$""")


def field_reference(text) -> Optional[Tuple[str, Optional[str]]]:
    """(name, component) when ``text`` is exactly a field('name'[, 'component']), else None."""
    m = _FIELD.match(text) if isinstance(text, str) else None
    return (m.group(2), m.group(4)) if m else None


def gather_with_fields(ds, sel, names: Sequence[str], step) -> Dict[str, np.ndarray]:
    """The columns ``names`` of a selection, field references among them sampled at the
    selected particles' positions."""
    refs = {n: field_reference(n) for n in names}
    real = [n for n in names if refs[n] is None]
    need = list(dict.fromkeys(real + (["x", "y", "z"] if any(refs.values()) else [])))
    got = dict(zip(need, sel.gather_columns(need, 0, sel.size))) if need else {}
    out = {}
    for n in names:
        if refs[n] is None:
            out[n] = got[n]
        else:
            field, component = refs[n]
            out[n] = ds.field(field, step).sample(got["x"], got["y"], got["z"], component=component)
    return out


def histogram(ds, sel, axes: List[str], nbins: List[int], ranges: List[Optional[Tuple[float, float]]],
              weights: Optional[str], step):
    """numpy's histogram of axes that may be field references (NaN values are not counted)."""
    cols = gather_with_fields(ds, sel, axes + ([weights] if weights else []), step)
    resolved = []
    for name, r in zip(axes, ranges):
        if r is None:
            v = cols[name].astype(np.float64, copy=False)
            v = v[~np.isnan(v)]
            lo, hi = (0.0, 1.0) if v.size == 0 else (float(v.min()), float(v.max()))
        else:
            lo, hi = r
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        histogram_range(name, lo, hi)
        resolved.append((lo, hi))
    w = cols[weights].astype(np.float64) if weights else None
    if len(axes) == 1:
        counts, edges = np.histogram(cols[axes[0]].astype(np.float64), bins=int(nbins[0]), range=resolved[0],
                                     weights=w)
        return (counts if w is not None else counts.astype(np.int64)), edges
    counts, xe, ye = np.histogram2d(cols[axes[0]].astype(np.float64), cols[axes[1]].astype(np.float64),
                                    bins=[int(nbins[0]), int(nbins[1])], range=resolved, weights=w)
    return (counts if w is not None else counts.astype(np.int64)), xe, ye
