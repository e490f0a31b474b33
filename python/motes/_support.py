"""Where dataset.py and mpi.py still import these from (their owner's change switches them to
the modules below, then this file goes): progress bars are :mod:`motes._progress`, the
rank helpers :mod:`motes._ranks`, ``storage_method`` is in :mod:`motes.errors`."""

from ._progress import Progress  # noqa: F401
from ._ranks import comm_handle, on_every_rank  # noqa: F401
from .errors import storage_method  # noqa: F401
