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

from .grid import grid
from .particles import CELL_PARTICLES, MotesDataset, series

__all__ = ["MotesDataset", "series", "grid", "CELL_PARTICLES"]
