"""Field files on disk (docs/format.md §14): ``write_field_file`` stores a
:class:`motes.Field` in HZ order, ``open_field_file`` reads any box of it at any level.

Level k keeps every 2^k-th sample of the grid along each axis, counted from sample 0 (as
``array[::2**k, ::2**k, ::2**k]``); a read touches only the blocks holding the samples of
its box at its level, so a coarse preview reads a small prefix of the file.

    f = motes.field_file.open_field_file("bz.mfd")
    f.read()                           # the whole grid, (z, y, x)
    f.read(level=2)                    # every 4th sample along each axis
    f.read(box=(0, 0, 0, 10, 5, 5))    # the samples whose positions lie in a box (x0, y0, z0, x1, y1, z1)
    f.read(index_box=((4, 0, 0), (20, 8, 8)))   # sample indexes [lo, hi), (x, y, z)
"""

from __future__ import annotations

import math
import os
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from . import _core
from .dtypes import numpy_dtype
from .errors import UsageError
from .field import AXES, Field

__all__ = ["write_field_file", "open_field_file", "StoredField", "field_tuple"]


def write_field_file(path, field: Field, *, name: str = "field", compression: str = "lossless",
                     zstd_level: Optional[int] = None, block_bits: Optional[int] = None, sync: bool = True,
                     threads: int = 0) -> Dict[str, Any]:
    """Writes ``field`` as the field file ``path`` (atomically); returns its sizes, bitmask and
    per-component (min, max, NaN count)."""
    options = _core.FieldWriteOptions()
    try:
        options.compression = _core.Compression.__members__[compression]
    except KeyError:
        raise UsageError(f"compression must be 'lossless' or 'none', got {compression!r}") from None
    if zstd_level is not None:
        options.zstd_level = zstd_level
    if block_bits is not None:
        options.block_bits = block_bits
    options.sync, options.threads = sync, threads
    s = _core.write_field_file(os.fspath(path), field_tuple(name, field), options)
    return {"file_bytes": s.file_bytes, "data_bytes": s.data_bytes, "stored_bytes": s.stored_bytes,
            "bitmask": s.bitmask, "ranges": s.ranges}


def field_tuple(name: str, field: Field) -> tuple:
    """What the core takes for a field to write: (name, one C-order array per component,
    ndim, components, centering, origin, spacing, coords, unit, attributes)."""
    if not isinstance(field, Field):
        raise UsageError(f"field '{name}' must be a motes.Field, got {type(field).__name__}")
    a = field.array
    if field.components is None:
        arrays = [np.ascontiguousarray(a)]
    else:
        arrays = [np.ascontiguousarray(a[..., k]) for k in range(a.shape[-1])]
    uniform = field.coords is None
    return (name, arrays, field.ndim, list(field.components or ()), field.centering,
            list(field.origin) if uniform else None, list(field.spacing) if uniform else None,
            None if uniform else [list(c) for c in field.coords], field.unit, field.attributes)


def open_field_file(path) -> "StoredField":
    return StoredField(_core.FieldFile.open(os.fspath(path)))


class StoredField:
    """A field on disk: its geometry, and reads of any box at any level."""

    def __init__(self, core):
        self._f = core
        self._samplers: Dict[int, Any] = {}

    # ---- what it is --------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._f.name

    @property
    def dtype(self) -> np.dtype:
        return numpy_dtype(self._f.dtype)

    @property
    def ndim(self) -> int:
        return self._f.ndim

    @property
    def dims(self) -> Tuple[int, ...]:
        """Samples along (x, y, z)."""
        return tuple(self._f.dims[: self.ndim])

    @property
    def shape(self) -> Tuple[int, ...]:
        """The array shape of a full read: (z, y, x) (and the components last)."""
        return tuple(reversed(self.dims)) + ((len(self.components),) if self.components else ())

    @property
    def components(self) -> Optional[Tuple[str, ...]]:
        return tuple(self._f.components) or None

    @property
    def centering(self) -> str:
        return self._f.centering

    @property
    def origin(self) -> Optional[Tuple[float, ...]]:
        return None if self._f.rectilinear else tuple(self._f.origin[: self.ndim])

    @property
    def spacing(self) -> Optional[Tuple[float, ...]]:
        return None if self._f.rectilinear else tuple(self._f.spacing[: self.ndim])

    @property
    def coords(self) -> Optional[Tuple[np.ndarray, ...]]:
        if not self._f.rectilinear:
            return None
        return tuple(np.asarray(c, dtype=np.float64) for c in self._f.coords[: self.ndim])

    @property
    def unit(self) -> str:
        return self._f.unit

    @property
    def attributes(self) -> Dict[str, Any]:
        return self._f.attributes

    @property
    def levels(self) -> int:
        """The coarsest level: every axis down to one sample (level 0 is the full grid)."""
        return self._f.levels

    @property
    def bitmask(self) -> str:
        return self._f.bitmask

    @property
    def ranges(self):
        """Per component, (min, max) of the samples that are not NaN."""
        return self._f.ranges

    @property
    def stored_bytes(self) -> int:
        return self._f.stored_bytes

    def axis(self, k: int) -> np.ndarray:
        """Positions of the samples along axis k (0 = x)."""
        return self.to_geometry().axis(k)

    def to_geometry(self) -> Field:
        """A one-sample stand-in Field with this field's geometry (for positions and bounds)."""
        shape = tuple(reversed(self.dims))
        return Field(np.broadcast_to(np.zeros((), self.dtype), shape), origin=self.origin, spacing=self.spacing,
                     coords=self.coords, centering=self.centering)

    def __repr__(self) -> str:
        comps = f", components={self.components}" if self.components else ""
        return f"StoredField({self.name!r}, {self.dtype}, dims={self.dims}{comps}, levels={self.levels})"

    # ---- reading -------------------------------------------------------------------------
    def index_box_of(self, box: Sequence[float]) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
        """The sample indexes [lo, hi) (x, y, z) whose positions lie in a physical box
        (x0, y0, z0, x1, y1, z1), bounds inclusive, axes past the grid's ignored."""
        box = [float(v) for v in box]
        if len(box) != 6 or any(math.isnan(v) for v in box):
            raise UsageError(f"box must be 6 numbers (x0, y0, z0, x1, y1, z1), got {box!r}")
        lo, hi = [0, 0, 0], [1, 1, 1]
        for k in range(self.ndim):
            pos = self.axis(k)
            lo[k] = int(np.searchsorted(pos, box[k], side="left"))
            hi[k] = int(np.searchsorted(pos, box[3 + k], side="right"))
            if lo[k] >= hi[k]:
                raise UsageError(f"field '{self.name}': no sample lies in the box along {AXES[k]} "
                                 f"([{box[k]!r}, {box[3 + k]!r}]; samples from {pos[0]!r} to {pos[-1]!r})")
        return tuple(lo), tuple(hi)

    def _index_box(self, box, index_box):
        if box is not None and index_box is not None:
            raise UsageError("give box (positions) or index_box (sample indexes), not both")
        if box is not None:
            return self.index_box_of(box)
        if index_box is None:
            return (0, 0, 0), tuple(self._f.dims)
        lo, hi = index_box
        lo, hi = list(lo) + [0] * (3 - len(lo)), list(hi) + [1] * (3 - len(hi))
        if len(lo) != 3 or len(hi) != 3 or any(int(v) != v or v < 0 for v in lo + hi):
            raise UsageError(f"index_box must be ((x0, y0, z0), (x1, y1, z1)) of sample indexes, got {index_box!r}")
        return tuple(int(v) for v in lo), tuple(int(v) for v in hi)

    def read(self, box=None, level: int = 0, *, index_box=None, component: Optional[str] = None,
             threads: int = 0) -> np.ndarray:
        """The samples of a box at a level as a C-order array ((z, y, x); a vector field's
        components last, or only ``component``). Level k keeps every 2^k-th sample along each
        axis counted from sample 0; the box keeps those it holds."""
        lo, hi = self._index_box(box, index_box)
        level = int(level)
        names = self.components
        if component is not None:
            if not names or component not in names:
                raise UsageError(f"field '{self.name}' has no component {component!r} (components: {names})")
            return self._f.read(lo, hi, level, names.index(component), threads)
        if not names:
            return self._f.read(lo, hi, level, 0, threads)
        return np.stack([self._f.read(lo, hi, level, k, threads) for k in range(len(names))], axis=-1)

    def blocks(self, box=None, level: int = 0, *, index_box=None):
        """The blocks a read of this box at this level touches (of each component)."""
        lo, hi = self._index_box(box, index_box)
        return self._f.blocks(lo, hi, int(level))

    def to_field(self, level: int = 0) -> Field:
        """The whole field at a level as a motes.Field (its origin and spacing those of the level)."""
        a = self.read(level=level)
        first, _count, stride_bits, _ = self._f.region((0, 0, 0), tuple(self._f.dims), int(level))
        if self._f.rectilinear:
            coords = [c[:: 2 ** stride_bits[k]] for k, c in enumerate(self.coords)]
            return Field(a, coords=coords, centering=self.centering, components=self.components, unit=self.unit,
                         attributes=self.attributes)
        steps = [2 ** stride_bits[k] for k in range(self.ndim)]
        spacing = [s * n for s, n in zip(self.spacing, steps)]
        origin = list(self.origin)
        if self.centering == "cell":  # keep the kept samples at their positions: cells n times as wide
            origin = [o + 0.5 * s * (1 - n) for o, s, n in zip(origin, self.spacing, steps)]
        return Field(a, origin=origin, spacing=spacing, centering=self.centering, components=self.components,
                     unit=self.unit, attributes=self.attributes)

    def sample(self, x, y=None, z=None, *, component: Optional[str] = None, fill: float = float("nan"),
               threads: int = 0) -> np.ndarray:
        """The field at points (x, y, z positions; as many arrays as the grid has axes): linear
        along each axis between the samples around each point (trilinear in 3-D; between cell
        centres for a cell-centred field), ``fill`` outside the samples' hull. A vector field
        needs ``component``. The grid is read whole once (kept for later calls)."""
        s = self.sampler(component, threads)
        given = [c for c in (x, y, z) if c is not None]
        if len(given) < self.ndim:
            raise UsageError(f"field '{self.name}' is {self.ndim}-D: give {'x, y, z'[: 3 * self.ndim - 2]}")
        arrays = [np.ascontiguousarray(np.asarray(c, dtype=np.float64).ravel()) for c in given]
        if len({a.size for a in arrays}) > 1:
            raise UsageError("x, y and z must have the same length")
        return s.sample(*(arrays + [None] * (3 - len(arrays))), fill=float(fill), threads=threads)

    def sampler(self, component: Optional[str] = None, threads: int = 0):
        """The core's sampler of one component (the grid read whole once, then kept); a
        vector field needs ``component``."""
        names = self.components
        if names and component is None:
            raise UsageError(f"field '{self.name}' has components {names}: pass component=")
        if component is not None and (not names or component not in names):
            raise UsageError(f"field '{self.name}' has no component {component!r} (components: {names})")
        k = names.index(component) if component is not None else 0
        s = self._samplers.get(k)
        if s is None:
            s = self._samplers[k] = _core.FieldSampler(self._f, k, threads)
        return s

    def verify(self) -> None:
        """Checks every block against its checksum (FormatError naming the block)."""
        self._f.verify()
