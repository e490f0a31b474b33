"""A yt frontend for motes datasets: ``yt.load("run.motes")`` (the last step; ``step=`` any
other), ``motes.yt.series(path)`` (every step as a ``yt.DatasetSeries``), and
``motes.yt.grid(path)`` (a step's uniform grid fields as a yt grid dataset). motes registers
this package in the entry point group ``yt.frontends``, which yt (>= 4.2) imports before it
identifies a path; ``import motes.yt`` does the same by hand.

The modules: :mod:`.particles` (the dataset yt loads: a step as cells yt indexes by their
boxes, each a motes query), :mod:`.meta` (units, domain, periodicity, cosmology and particle
masses from the dataset's units and the step's attributes), :mod:`.grid` (grid fields).
"""

from __future__ import annotations

#: At most about this many particles per cell of the grid yt sees (at most 16 cells a side):
#: yt reads a cell's rows at once, and each cell costs an exact count when yt loads the
#: step (a step in one cell costs none). Cells do not make reads selective: a cell is read
#: as a motes query cut to the selector's box. Measured with bench/yt_sphere.py's 16M
#: particles (load and a small sphere, fresh processes): 0.43 s in 64 cells of 1M, 0.36 s
#: in 8, 0.34 s in one.
CELL_PARTICLES = 1 << 24

from .grid import grid  # noqa: E402
from .particles import MotesDataset, series  # noqa: E402

__all__ = ["MotesDataset", "series", "grid", "CELL_PARTICLES"]
