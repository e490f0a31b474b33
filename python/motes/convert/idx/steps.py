"""``motes convert`` to and from IDX: the streaming steps of :mod:`motes.convert.base` over
:mod:`motes.convert.idx`. IDX holds grid fields only: a source's steps become IDX time steps
(all on one grid), their particles are left out with a ConversionWarning; an IDX dataset
reads back as steps of fields, each read whole when it is looked up."""

from __future__ import annotations

from typing import Iterable, Iterator

from ...errors import UsageError
from .. import idx
from ..base import LazyFields, Step, warn


def read(path: str, *, chunk_rows: int = 0, steps=None, **_options) -> Iterator[Step]:
    ds = idx.read(path)
    times = ds.times if ds.times is not None else (0,)
    for t in times:
        index = int(t)
        if steps is not None and index not in steps:
            continue
        loaders = {name: (lambda name=name, t=t: ds.to_field(name, t)) for name in ds.fields}
        yield Step(index, float(t), {}, {}, fields=LazyFields(loaders))


def write(path: str, steps: Iterable[Step], *, compression: str = "zip", layout: str = "row-major",
          bits_per_block: int = 16, **_options) -> None:
    """Writes the steps' fields as one IDX dataset (``path``.idx and its block folder)."""
    out, warned = [], False
    for n, st in enumerate(steps):
        if st.species and not warned:
            warned = True
            warn(f"{path}: IDX holds grid fields only: the particles are left out", stacklevel=2)
        if st.fields:
            out.append((st.index if st.index is not None else n, {name: st.fields[name] for name in st.fields}))
    if not out:
        raise UsageError(f"{path}: nothing to write: the source has no grid fields (IDX holds fields only)")
    idx.write(path, out, compression=compression, layout=layout, bits_per_block=bits_per_block)
