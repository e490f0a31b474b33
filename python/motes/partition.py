"""motes.read_partition: the collective read of one step over the ranks of an MPI
communicator, whatever number of ranks wrote it (the core's parallel/read.cpp), its request
checked as a query's by :meth:`motes.Dataset.request`."""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Union

from . import _core
from ._ranks import comm_handle, on_every_rank
from .dataset import Dataset
from .errors import storage_errors
from .request import BoxLike, checked_columns
from .table import Table

__all__ = ["read_partition"]


def read_partition(path: Union[str, os.PathLike], comm: Any, *, box: BoxLike = None, where: Optional[str] = None,
                   columns: Optional[Sequence[str]] = None, step: Optional[int] = None,
                   species: Optional[str] = None, quality: Optional[float] = None, fraction: Optional[float] = None,
                   threads: Optional[int] = None) -> Table:
    """Collective read of one step over the ranks of ``comm`` (mpi4py), whatever number of
    ranks wrote it. With ``box`` (this rank's region, inclusive; every rank passes one) each
    rank gets the particles inside its box, e.g. to restart a simulation on a new
    decomposition; without, each rank gets an even share of the matching particles.
    ``quality`` < 1 reads a level-of-detail preview (the particles of ``ds.query(quality=q)``).
    Part files are read by ranks spread over the communicator and the rows sent to the
    ranks that asked for them."""
    handle = comm_handle(comm)

    def prepare():
        ds = Dataset(path)
        asked = ds.request(where, box, quality, fraction=fraction, columns=columns, step=step, species=species,
                           threads=threads)  # checked as a query's
        spec = asked.spec
        req = _core.PartitionRequest()  # what is None keeps the core's default
        if quality is not None:
            req.quality = spec.quality_to
        if fraction is not None:
            req.fraction = spec.fraction
        if where is not None:
            req.where = spec.where
        req.box = spec.box
        if threads is not None:
            req.threads = spec.threads
        asked.source()  # the files, checked against the manifest
        req.columns = checked_columns(columns, asked.known)
        return asked.step.species[asked.species]["path"], req

    src, req = on_every_rank(comm, prepare, f"opening '{os.fspath(path)}' for a parallel read")
    with storage_errors(path, "cannot read"):
        cols = _core.read_partition(handle, src, req)
    return Table({n: cols[n] for n in req.columns})
