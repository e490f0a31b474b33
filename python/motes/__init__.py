"""motes: parallel I/O, indexing and exploration of particle simulation data.

>>> import motes
>>> motes.write("run.motes", {"x": x, "y": y, "z": z, "energy": e}, step=0)
>>> ds = motes.open("run.motes")
>>> hot = ds.query("energy > 1.3", box=(0, 0, 0, 10, 10, 10))
>>> counts, xedges, yedges = ds.histogram("ux", "uy", bins=128, where="x < 5")
"""

from ._core import CancelToken, parse_expression
from ._core import version as __version__  # project(motes VERSION ...) of CMakeLists.txt
from .errors import (CancelledError, DatasetReplacedError, FormatError, InternalError, MotesError, NotFoundError,
                     OutOfMemoryError, StorageError, UsageError)
from .dataset import Dataset, follow, open
from .partition import read_partition
from .expressions import isin
from .field import Field  # motes.field: the public name of motes.fields.model
from .table import Column, Table
from .writer import Writer, write

__all__ = ["open", "write", "read_partition", "follow", "Writer", "Dataset", "Table", "Column", "Field", "synth",
           "parse_expression", "isin", "CancelToken",
           "MotesError", "UsageError", "FormatError", "StorageError", "NotFoundError", "OutOfMemoryError",
           "InternalError", "CancelledError", "DatasetReplacedError", "BacklogWarning", "SkippedStep", "ingest",
           "__version__"]

#: Names of motes.background, loaded on first use (with the first background writer).
_BACKGROUND = ("BacklogWarning", "SkippedStep")


def __getattr__(name):
    # motes.synth (the synthetic data generators) loads on first use: `import motes` stays
    # light (numpy and the core only; no synth, matplotlib, pandas, pyarrow, h5py, openpmd_api).
    if name == "synth":
        import importlib

        return importlib.import_module(f"{__name__}.synth")
    if name in _BACKGROUND:
        from . import background

        return getattr(background, name)
    if name == "ingest":  # motes.transit, a tool loaded on first use as synth is (openpmd-api with it)
        import importlib

        return importlib.import_module(f"{__name__}.transit").ingest
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"synth", "ingest", *_BACKGROUND})
