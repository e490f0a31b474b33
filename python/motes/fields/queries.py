"""Grid fields as output columns of a query: ``ds.query(columns=["x", "field('E', 'x')"])``.
The particles are selected by the core as for any query; their positions are gathered and
the field sampled there by the core's sampler (trilinear, NaN outside the grid). A field as
a histogram axis is the core's, like any numeric expression (``motes._core.histogram``)."""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from .. import _core


def field_reference(text, known: Sequence[str]) -> Optional[Tuple[str, Optional[str]]]:
    """(name, component) when ``text`` is no column of ``known`` but a ``field('name'[,
    'component'])`` alone (the core's ``column_field``), else None."""
    ref = _core.column_field(text, list(known)) if isinstance(text, str) else None
    return None if ref is None else (ref[0], ref[1] or None)


def gather_with_fields(ds, sel, names: Sequence[str], step, known: Sequence[str]) -> Dict[str, np.ndarray]:
    """The columns ``names`` of a selection, field references among them sampled at the
    selected particles' positions (``known``: the species' columns)."""
    refs = {n: field_reference(n, known) for n in names}
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
