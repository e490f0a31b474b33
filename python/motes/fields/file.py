"""Field files on disk (docs/format.md §14): ``write_field_file`` stores a
:class:`motes.Field` in HZ order, ``open_field_file`` reads any box of it at any level.

Level k keeps every 2^k-th sample of the grid along each axis, counted from sample 0 (as
``array[::2**k, ::2**k, ::2**k]``); a read touches only the blocks holding the samples of
its box at its level, so a coarse preview reads a small prefix of the file.

    f = motes.fields.file.open_field_file("bz.mfd")
    f.read()                           # the whole grid, (z, y, x)
    f.read(level=2)                    # every 4th sample along each axis
    f.read(box=(0, 0, 0, 10, 5, 5))    # the samples whose positions lie in a box (x0, y0, z0, x1, y1, z1)
    f.read(index_box=((4, 0, 0), (20, 8, 8)))   # sample indexes [lo, hi), (x, y, z)
"""

from __future__ import annotations

import itertools
import os
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from .. import _core
from ..dtypes import numpy_dtype
from ..errors import UsageError
from .model import AXES, THETA_AXES, Field, index_box_in, require_cartesian
from .halo import axis_ints, fill_value, ghost_widths, halo_pieces, periodic_flags

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
            "bitmask": s.bitmask, "ranges": s.ranges, "zfp_blocks": s.zfp_blocks}


def field_tuple(name: str, field: Field, samples=None) -> tuple:
    """What the core takes for a field to write: (name, one C-order array per stored array,
    ndim, components, centering, origin, spacing, coords, unit, attributes, tolerance,
    geometry). ``samples`` (an array shaped as ``field.array`` would be, components last)
    replaces the field's own: a rank's block of a global grid whose geometry ``field``
    describes. A thetaMode field stores each component's mode arrays, one after the other
    (component-major), and its geometry is ("thetaMode", modes, imag)."""
    if not isinstance(field, Field):
        raise UsageError(f"field '{name}' must be a motes.Field, got {type(field).__name__}")
    a = field.array if samples is None else samples
    per_component = [a] if field.components is None else [a[..., k] for k in range(a.shape[-1])]
    geometry = None
    if field.geometry == "thetaMode":
        per_component = [c[s] for c in per_component for s in range(c.shape[0])]
        geometry = ("thetaMode", field.modes, field.imag)
    arrays = [np.ascontiguousarray(c) for c in per_component]
    uniform = field.coords is None
    return (name, arrays, field.ndim, list(field.components or ()), field.centering,
            list(field.origin) if uniform else None, list(field.spacing) if uniform else None,
            None if uniform else [list(c) for c in field.coords], field.unit, field.attributes,
            float(field.tolerance), geometry)


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
        """The array shape of a full read: (z, y, x) (and the components last); a thetaMode
        field's (2 * modes - 1, Nr, Nz) (and the components last)."""
        modes = (self.slots,) if self.geometry == "thetaMode" else ()
        return modes + tuple(reversed(self.dims)) + ((len(self.components),) if self.components else ())

    @property
    def geometry(self) -> str:
        """"cartesian" (the grid's axes are x, y, z), or "thetaMode" (axes z, r; azimuthal
        modes: see :mod:`motes.field`)."""
        return self._f.geometry

    @property
    def modes(self) -> int:
        """A thetaMode field's modes (0 to modes - 1); 0 for a Cartesian field."""
        return self._f.modes if self.geometry == "thetaMode" else 0

    @property
    def imag(self) -> str:
        """A thetaMode field's sign of the sin terms ("+": F₀ + Σ Reₘ cos mθ + Imₘ sin mθ)."""
        return self._f.imag

    @property
    def slots(self) -> int:
        """Arrays stored per component: 2 * modes - 1 for a thetaMode field, else 1."""
        return 2 * self.modes - 1 if self.geometry == "thetaMode" else 1

    @property
    def axis_names(self) -> Tuple[str, ...]:
        """The grid's axes in the order of origin, spacing and dims: ("z", "r") for a thetaMode
        field, else ("x", "y", "z")[:ndim]."""
        return THETA_AXES if self.geometry == "thetaMode" else AXES[: self.ndim]

    @property
    def sample_components(self) -> Tuple[str, ...]:
        """The components :meth:`sample` takes: the components, and for a thetaMode field with
        components r and t also x and y (reconstructed)."""
        return tuple(self._f.sample_components)

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
    def tolerance(self) -> float:
        """0: the samples are stored exactly; > 0: within this absolute error (ZFP)."""
        return self._f.tolerance

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
        """Per stored array, (min, max) of the samples that are not NaN: per component; for a
        thetaMode field per component and mode slot (component-major)."""
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
        if self.geometry == "thetaMode":
            return Field(np.broadcast_to(np.zeros((), self.dtype), (self.slots,) + shape), origin=self.origin,
                         spacing=self.spacing, centering=self.centering, geometry=self.geometry, imag=self.imag)
        return Field(np.broadcast_to(np.zeros((), self.dtype), shape), origin=self.origin, spacing=self.spacing,
                     coords=self.coords, centering=self.centering)

    def __repr__(self) -> str:
        comps = f", components={self.components}" if self.components else ""
        theta = f", thetaMode modes={self.modes}" if self.geometry == "thetaMode" else ""
        return f"StoredField({self.name!r}, {self.dtype}, dims={self.dims}{comps}{theta}, levels={self.levels})"

    # ---- reading -------------------------------------------------------------------------
    def index_box_of(self, box: Sequence[float]) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
        """The sample indexes [lo, hi) (x, y, z) whose positions lie in a physical box
        (x0, y0, z0, x1, y1, z1), bounds inclusive, axes past the grid's ignored."""
        return index_box_in(self.name, box, [self.axis(k) for k in range(self.ndim)], self.axis_names)

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
        axis counted from sample 0; the box keeps those it holds. A thetaMode field's read is
        its modes, as openPMD stores them: (2 * modes - 1, r, z) (the box and index_box in its
        axes' order, z then r); :meth:`cartesian` and :meth:`sample` reconstruct the field."""
        lo, hi = self._index_box(box, index_box)
        level = int(level)
        names = self.components
        if component is not None:
            if not names or component not in names:
                extra = (" (x and y of a thetaMode field are reconstructed: sample(), cartesian())"
                         if component in self.sample_components else "")
                raise UsageError(f"field '{self.name}' has no component {component!r} (components: {names}){extra}")
            return self._read_component(lo, hi, level, names.index(component), threads)
        if not names:
            return self._read_component(lo, hi, level, 0, threads)
        return np.stack([self._read_component(lo, hi, level, k, threads) for k in range(len(names))], axis=-1)

    def _read_component(self, lo, hi, level: int, k: int, threads: int) -> np.ndarray:
        """Component k of a box at a level (a thetaMode field's: its mode arrays, stacked)."""
        if self.geometry != "thetaMode":
            return self._f.read(lo, hi, level, k, threads)
        n = self.slots
        return np.stack([self._f.read(lo, hi, level, k * n + s, threads) for s in range(n)])

    def read_block(self, offset: Sequence[int], count: Sequence[int], ghosts=0, periodic=False, fill=0, *,
                   component: Optional[str] = None, threads: int = 0) -> np.ndarray:
        """An MPI rank's block of the global grid with its halo, from the file: the samples
        ``[offset, offset + count)`` (x, y, z indexes, as many as the grid has axes) and
        ``ghosts`` more on each side (an int, or per axis an int or a (lo, hi) pair), as a
        C-order array ((z, y, x); a vector field's components last, or only ``component``).
        Where the halo leaves the grid it wraps around along the axes that are ``periodic``
        (a bool, or one per axis) and holds ``fill`` along the others. The part inside the
        grid is one read; each wrapped piece is another. Cartesian fields only."""
        require_cartesian(self, f"field '{self.name}'", "read_block (halos of x, y, z blocks)")
        nd = self.ndim
        offset = axis_ints(offset, nd, "offset")
        count = axis_ints(count, nd, "count")
        widths = ghost_widths(ghosts, nd)
        wrap = periodic_flags(periodic, nd)
        dims = self.dims
        for k in range(nd):
            if offset[k] < 0 or count[k] < 1 or offset[k] + count[k] > dims[k]:
                raise UsageError(f"field '{self.name}': the block [{offset[k]}, {offset[k] + count[k]}) along "
                                 f"{AXES[k]} is not a non-empty range of the grid's {dims[k]} samples")
        names = self.components
        if component is not None and (not names or component not in names):
            raise UsageError(f"field '{self.name}' has no component {component!r} (components: {names})")
        # Per axis, the window's pieces: (first in the window, first in the grid or None for
        # fill, length); the piece inside the grid comes first.
        pieces = [halo_pieces(offset[k] - widths[k][0], offset[k] + count[k] + widths[k][1], dims[k], wrap[k])
                  for k in range(nd)]
        window = [count[k] + widths[k][0] + widths[k][1] for k in range(nd)]
        extra = (len(names),) if names and component is None else ()
        out = np.full(tuple(reversed(window)) + extra, fill_value(fill, self.dtype), dtype=self.dtype)
        read_cache: Dict[Tuple[Tuple[int, ...], Tuple[int, ...]], np.ndarray] = {}
        for combo in itertools.product(*pieces):
            if any(src is None for _, src, _ in combo):
                continue  # at least one axis leaves a non-periodic grid: fill
            lo = tuple(src for _, src, _ in combo)
            hi = tuple(src + n for _, src, n in combo)
            key = (lo, hi)
            part = read_cache.get(key)
            if part is None:
                part = read_cache[key] = self.read(index_box=(lo, hi), component=component, threads=threads)
            dst = tuple(slice(at, at + n) for at, _, n in reversed(combo))
            out[dst] = part
        return out

    def blocks(self, box=None, level: int = 0, *, index_box=None):
        """The blocks a read of this box at this level touches (of each component)."""
        lo, hi = self._index_box(box, index_box)
        return self._f.blocks(lo, hi, int(level))

    def to_field(self, level: int = 0) -> Field:
        """The whole field at a level as a motes.Field (its origin and spacing those of the
        level; a thetaMode field's modes, as stored)."""
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
        theta = {"geometry": self.geometry, "imag": self.imag} if self.geometry == "thetaMode" else {}
        return Field(a, origin=origin, spacing=spacing, centering=self.centering, components=self.components,
                     unit=self.unit, attributes=self.attributes, **theta)

    def sample(self, x, y=None, z=None, *, component: Optional[str] = None, fill: float = float("nan"),
               threads: int = 0) -> np.ndarray:
        """The field at points (x, y, z positions; as many arrays as the grid has axes): linear
        along each axis between the samples around each point (trilinear in 3-D; between cell
        centres for a cell-centred field), ``fill`` outside the samples' hull. A vector field
        needs ``component``. The grid is read whole once (kept for later calls).

        The positions broadcast together as numpy arrays do, and the result has their shape:
        1-D arrays give a 1-D result, ``np.meshgrid`` planes a plane, numbers a 0-d array.
        Positions must be numbers (integers or floats), else UsageError naming the dtype.

        A thetaMode field takes x, y, z and reconstructs F₀ + Σₘ (Reₘ cos mθ ± Imₘ sin mθ)
        at r = √(x² + y²), θ = atan2(y, x), each mode linear in (z, r) as openPMD-viewer's
        slice is; ``component`` "x" and "y" of a field with components r and t are
        Fr cos θ − Ft sin θ and Fr sin θ + Ft cos θ (docs/guide.md, "thetaMode fields")."""
        s = self.sampler(component, threads)
        given = [c for c in (x, y, z) if c is not None]
        if self.geometry == "thetaMode" and len(given) < 3:
            raise UsageError(f"field '{self.name}' is a thetaMode field: give x, y and z (r = sqrt(x² + y²))")
        if len(given) < self.ndim:
            raise UsageError(f"field '{self.name}' is {self.ndim}-D: give {'x, y, z'[: 3 * self.ndim - 2]}")
        arrays = []
        for axis, c in zip("xyz", given):
            a = np.asarray(c)
            if a.dtype.kind not in "iuf":
                raise UsageError(f"sample: {axis} must be numbers (positions), got an array of dtype {a.dtype}")
            arrays.append(a)
        try:
            arrays = np.broadcast_arrays(*arrays)
        except ValueError:
            shapes = ", ".join(f"{axis} {a.shape}" for axis, a in zip("xyz", arrays))
            raise UsageError(f"sample: the positions' shapes do not broadcast together ({shapes})") from None
        shape = arrays[0].shape
        flat = [np.ascontiguousarray(a, dtype=np.float64).reshape(-1) for a in arrays]
        out = s.sample(*(flat + [None] * (3 - len(flat))), fill=float(fill), threads=threads)
        return np.asarray(out).reshape(shape)

    def sampler(self, component: Optional[str] = None, threads: int = 0):
        """The core's sampler of one component (the grid read whole once, then kept); a
        vector field needs ``component``."""
        names = self.sample_components or None
        if names and component is None:
            raise UsageError(f"field '{self.name}' has components {names}: pass component=")
        if component is not None and (not names or component not in names):
            raise UsageError(f"field '{self.name}' has no component {component!r} (components: {names})")
        key = component or ""
        s = self._samplers.get(key)
        if s is None:
            s = self._samplers[key] = _core.FieldSampler(self._f, key, threads)
        return s

    def cartesian(self, dims: Optional[Sequence[int]] = None, *, spacing: Optional[Sequence[float]] = None):
        """A thetaMode field resampled on a Cartesian (x, y, z) grid, read box by box as a
        stored field is (:class:`motes.fields.theta.CartesianView`: ``read``, ``to_field``):
        x and y over [-r, r] of the last radial sample, z over the field's z samples; by
        default x and y at the radial spacing (through ±r of the radial samples) and z at the
        field's z samples; ``dims`` (nx, ny, nz) or ``spacing`` (dx, dy, dz) choose another
        resolution."""
        from .theta import CartesianView

        return CartesianView(self, dims=dims, spacing=spacing)

    def verify(self) -> None:
        """Checks every block against its checksum (FormatError naming the block)."""
        self._f.verify()
