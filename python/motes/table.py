"""Query results (Table) and the columns of a schema (Column)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from . import units


@dataclass(frozen=True)
class Column:
    """One column of a species' schema."""

    name: str
    dtype: np.dtype
    index: str  # "none" or "quantile": the extra index built for spatially incoherent columns
    unit: str = ""  # as stored: free text, or an openPMD unit as JSON (see motes.units)
    error_bound: float = 0.0  # largest difference between a value written and the value stored; 0 = exact

    @property
    def unit_label(self) -> str:
        """The unit as a person writes it: "m", "kg m s^-1", "J", "µm", or the free text."""
        return units.label(self.unit)

    @property
    def unit_si(self) -> Optional[float]:
        """For an openPMD unit: the factor that turns stored values into SI units, else None."""
        return units.parse(self.unit).unit_si

    @property
    def unit_dimension(self) -> Optional[Tuple[float, ...]]:
        """For an openPMD unit: the powers of L, M, T, I, theta, N, J, else None."""
        return units.parse(self.unit).dimension


class Table(dict):
    """Query result: column name -> numpy array (all of equal length).

    Converts to pandas (:meth:`to_pandas`), Arrow (:meth:`to_arrow`) and pyvista
    (:meth:`to_pyvista`).
    ``counters`` tells how much the indexes pruned.
    """

    counters: Dict[str, int]

    def __init__(self, columns: Mapping[str, np.ndarray], counters: Optional[Dict[str, int]] = None):
        super().__init__(columns)
        self.counters = counters or {}

    def __len__(self) -> int:  # number of rows, like a DataFrame
        for v in self.values():
            return len(v)
        return 0

    @property
    def num_rows(self) -> int:
        return len(self)

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(dict(self), copy=False)

    def to_arrow(self):
        import pyarrow as pa

        return pa.table({k: pa.array(v) for k, v in self.items()})

    def to_pyvista(self):
        """The rows as a ``pyvista.PolyData`` (needs pyvista): points from x, y, z with a
        vertex each, the other columns as point data (copied); ``.plot(scalars="energy")``
        draws them. The same conversion as motes' ParaView reader."""
        import pyvista

        from .errors import UsageError
        from ._polydata import polydata

        if not {"x", "y", "z"} <= set(self):
            raise UsageError("to_pyvista needs the columns x, y and z (query them too)")
        return pyvista.wrap(polydata(self, [c for c in self if c not in ("x", "y", "z")]))
