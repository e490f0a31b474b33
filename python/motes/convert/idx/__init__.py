"""IDX version 6 (OpenVisus, PIDX): grid fields in HZ order, readable at every resolution.

    from motes.convert import idx
    idx.write("run.idx", [(0, {"rho": motes.Field(rho, spacing=(0.1,) * 3)})], compression="zip")
    ds = idx.read("run.idx")                     # any IDX v6, OpenVisus' included
    coarse = ds.read("rho", time=0, level=2)     # every 4th sample per axis, (z, y, x)

One job per module: :mod:`.header` (the .idx text), :mod:`.blockfile` (the binary block
files), :mod:`.geometry` (physic_box and the (motes) line), :mod:`.writer`,
:mod:`.reader`. docs/convert-idx.md gives the exact mapping.
"""

from .header import IdxField, IdxHeader
from .reader import IdxDataset, read
from .writer import write

__all__ = ["write", "read", "IdxDataset", "IdxField", "IdxHeader"]
