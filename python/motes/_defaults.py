"""The core's defaults, as the Python API and the command line show them.

Every default of a writing or query option is written once, in the C++ struct that holds
it (``LayoutOptions``, ``WriteOptions``, ``AggregationOptions``, ``ParallelWriteOptions``,
``QuerySpec``, bound as ``motes._core`` classes). Arguments of the Python API default to
``None``, meaning "the core's default"; docstrings and ``--help`` texts show the value read
here from a default-constructed struct, with the struct field's own description.

The defaults of histograms are the core's analysis layer's (analysis/analysis.hpp): the
bins per axis (:data:`HISTOGRAM_BINS`; :data:`HISTOGRAM_BINS_2D` for a 2-D histogram the
command line draws) and the default range (:func:`histogram_range`).
"""

from __future__ import annotations

import enum
from typing import Any, Dict, Iterable, Optional, Tuple

from . import _core

__all__ = ["OPTIONS", "default", "describe", "help_text", "options_doc", "HISTOGRAM_BINS", "HISTOGRAM_BINS_2D",
           "histogram_range"]

#: Bins per axis of a histogram when none are given (the Python API, motes.mpi, motes.dask, the server).
HISTOGRAM_BINS: int = _core.histogram_bins
#: Bins per axis of a 2-D histogram the command line draws (motes hist x y): an image.
HISTOGRAM_BINS_2D: int = _core.histogram_bins_2d


def histogram_range(given: Optional[Tuple[float, float]], min: Optional[float] = None,  # noqa: A002
                    max: Optional[float] = None) -> Tuple[float, float]:  # noqa: A002
    """The range of a histogram axis: ``given``, else ``(min, max)`` of the values to bin
    (None: none, (0, 1)); a range of one value v is (v - 0.5, v + 0.5), as numpy.histogram's."""
    return _core.histogram_range(None if given is None else (float(given[0]), float(given[1])), min, max)

#: Python argument -> (core struct, path of its field). The Python names are the API's.
OPTIONS: Dict[str, Tuple[type, Tuple[str, ...]]] = {
    "leaf_size": (_core.WriteOptions, ("layout", "leaf_size")),
    "lod_count": (_core.WriteOptions, ("layout", "lod_count")),
    "treelet_size": (_core.WriteOptions, ("layout", "treelet_size")),
    "prefix_share": (_core.WriteOptions, ("layout", "prefix_share")),
    "region_points": (_core.WriteOptions, ("layout", "region_points")),
    "threads": (_core.WriteOptions, ("layout", "threads")),
    "sync": (_core.WriteOptions, ("sync",)),
    "compression": (_core.WriteOptions, ("compression",)),
    "stage_rows": (_core.WriteOptions, ("stage_rows",)),
    "aggregation": (_core.ParallelWriteOptions, ("method",)),
    "target_bytes": (_core.ParallelWriteOptions, ("aggregation", "target_bytes")),
    "best_axis": (_core.ParallelWriteOptions, ("aggregation", "best_axis")),
    "overfull": (_core.ParallelWriteOptions, ("aggregation", "overfull")),
    "local_aggregators": (_core.ParallelWriteOptions, ("aggregation", "local")),
    "lock_timeout": (_core.ParallelWriteOptions, ("lock_timeout",)),
    "query_threads": (_core.QuerySpec, ("threads",)),
    "quality": (_core.QuerySpec, ("quality_to",)),
}


def default(name: str) -> Any:
    """The core's default of option ``name`` (an enum as its name: "lossless")."""
    cls, path = OPTIONS[name]
    value = cls()
    for field in path:
        value = getattr(value, field)
    return value.name if isinstance(value, enum.Enum) else value


def describe(name: str) -> str:
    """The description of option ``name``: its core field's docstring."""
    cls, path = OPTIONS[name]
    for field in path[:-1]:
        cls = type(getattr(cls(), field))
    return getattr(cls, path[-1]).__doc__ or ""


def help_text(name: str, text: str = "") -> str:
    """A ``--help`` line: ``text`` (else the core's description) and the core's default."""
    return f"{text or describe(name)} (default: {default(name)})"


def options_doc(names: Iterable[str]) -> str:
    """Docstring lines for keyword arguments that default to None (the core's defaults)."""
    names = list(names)
    width = max(map(len, names))
    lines = ["", "    Options (None, the default, takes the core's value, shown):"]
    for n in names:
        shown = "" if n == "lock_timeout" else f" [{default(n)!r}]"  # lock_timeout's text says it
        lines.append(f"      {n:<{width}}  {describe(n)}{shown}")
    return "\n".join(lines) + "\n"
