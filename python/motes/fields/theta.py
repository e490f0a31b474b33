"""thetaMode fields (FBPIC, WarpX RZ: azimuthal modes on an (r, z) grid) seen as Cartesian
grids: :class:`CartesianView`, what ``StoredField.cartesian(...)`` returns, reads any box of a
Cartesian (x, y, z) resampling at any level as a stored field reads its grid, each sample
reconstructed from the modes by the core's sampler (``StoredField.sample``: F₀ + Σₘ (Reₘ cos
mθ ± Imₘ sin mθ), each mode linear in (z, r), as openPMD-viewer reconstructs it).

    E = ds.field("E", step)                   # modes: E.read(component="r").shape == (2m - 1, Nr, Nz)
    cart = E.cartesian()                      # x, y at the radial spacing through ±r of the samples, z as stored
    ex = cart.read(component="x")             # (nz, ny, nx)
    plane = cart.read(index_box=((0, cart.dims[1] // 2, 0), (cart.dims[0], cart.dims[1] // 2 + 1, cart.dims[2])))
    fine = E.cartesian(dims=(256, 256, 400)).to_field(level=1)   # a motes.Field, every 2nd sample

The server presents a thetaMode field to the viewer through this view (docs/http-api.md).
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from ..errors import UsageError
from .model import AXES, Field, index_box_in

__all__ = ["CartesianView", "RANGE_SAMPLES"]

#: The ranges of a view's components are taken over its finest level of at most this many samples.
RANGE_SAMPLES = 1 << 18

# A spacing that divides an extent within rounding (2 r_last / dr of FBPIC's grid) counts as dividing it.
_SLACK = 1e-9


def _axis_count(extent: float, step: float) -> int:
    return int(math.floor(extent / step + _SLACK)) + 1


class CartesianView:
    """A thetaMode field resampled on a uniform, node-centred Cartesian grid (x, y, z): the
    interface of :class:`motes.fields.file.StoredField` for reads (``read``, ``to_field``,
    ``axis``, ``index_box_of``, ``levels``, ``ranges``), each sample reconstructed from the
    modes at read time. Its components are those the field's ``sample`` takes (a field with
    components r, t, z: r, t, z, x, y). Points outside the field's radius or z range read as
    ``fill`` (NaN)."""

    def __init__(self, stored, dims: Optional[Sequence[int]] = None, spacing: Optional[Sequence[float]] = None):
        if stored.geometry != "thetaMode":
            raise UsageError(f"field '{stored.name}' is a Cartesian grid already: read it as it is "
                             "(cartesian() resamples thetaMode fields)")
        if dims is not None and spacing is not None:
            raise UsageError("give dims (samples along x, y, z) or spacing (dx, dy, dz), not both")
        self.stored = stored
        zs, rs = stored.axis(0), stored.axis(1)
        r_last = float(rs[-1])
        extent = (2 * r_last, 2 * r_last, float(zs[-1] - zs[0]))
        if dims is None and spacing is None:   # the field's own resolution: dr across, its z samples along
            spacing = (stored.spacing[1], stored.spacing[1], stored.spacing[0])
        if dims is not None:
            dims = _positive_ints(dims)
            spacing = tuple(e / (n - 1) if n > 1 and e > 0 else 1.0 for e, n in zip(extent, dims))
        else:
            spacing = _positive_floats(spacing)
            dims = tuple(_axis_count(e, h) for e, h in zip(extent, spacing))
        self._dims = tuple(int(n) for n in dims)
        self._spacing = tuple(float(h) for h in spacing)
        # x and y centred on the axis, z from the field's first z sample.
        self._origin = (-(self._dims[0] - 1) * self._spacing[0] / 2, -(self._dims[1] - 1) * self._spacing[1] / 2,
                        float(zs[0]))
        self._ranges = None

    # ---- what it is (as StoredField) -----------------------------------------------------
    name = property(lambda self: self.stored.name)
    unit = property(lambda self: self.stored.unit)
    tolerance = property(lambda self: self.stored.tolerance)
    ndim = 3
    centering = "node"
    coords = None
    geometry = "cartesian"
    axis_names = AXES

    @property
    def dtype(self) -> np.dtype:
        """float64: the reconstruction's."""
        return np.dtype(np.float64)

    @property
    def attributes(self) -> Dict[str, Any]:
        """The field's attributes, but its openPMD description (that of the thetaMode mesh, which
        no longer describes these samples)."""
        return {k: v for k, v in self.stored.attributes.items() if k != "openpmd"}

    @property
    def dims(self) -> Tuple[int, ...]:
        return self._dims

    @property
    def origin(self) -> Tuple[float, ...]:
        return self._origin

    @property
    def spacing(self) -> Tuple[float, ...]:
        return self._spacing

    @property
    def components(self) -> Optional[Tuple[str, ...]]:
        return self.stored.sample_components or None

    @property
    def sample_components(self) -> Tuple[str, ...]:
        return self.stored.sample_components

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(reversed(self._dims)) + ((len(self.components),) if self.components else ())

    @property
    def levels(self) -> int:
        """The coarsest level: every axis down to one sample (as a stored field's)."""
        return max((n - 1).bit_length() for n in self._dims)

    @property
    def ranges(self):
        """Per component, (min, max) of the reconstruction over the finest level of at most
        RANGE_SAMPLES samples (NaN outside the radius left out; (nan, nan) when none)."""
        if self._ranges is None:
            level = next(k for k in range(self.levels + 1)
                         if np.prod([-(-n // 2 ** k) for n in self._dims]) <= RANGE_SAMPLES)
            out = []
            for c in (self.components or (None,)):
                v = self.read(level=level, component=c)
                v = v[~np.isnan(v)]
                out.append((float(v.min()), float(v.max())) if v.size else (float("nan"), float("nan")))
            self._ranges = out
        return self._ranges

    def axis(self, k: int) -> np.ndarray:
        """Positions of the samples along axis k (0 = x)."""
        if not 0 <= k < 3:
            raise UsageError(f"a 3-D grid has no axis {k}")
        return self._origin[k] + np.arange(self._dims[k], dtype=np.float64) * self._spacing[k]

    def __repr__(self) -> str:
        return f"CartesianView({self.name!r} of thetaMode, dims={self.dims}, spacing={self.spacing})"

    # ---- reading -------------------------------------------------------------------------
    def index_box_of(self, box: Sequence[float]) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
        """The sample indexes [lo, hi) (x, y, z) whose positions lie in a box (x0, y0, z0, x1,
        y1, z1), bounds inclusive."""
        return index_box_in(self.name, box, [self.axis(k) for k in range(3)], AXES)

    def read(self, box=None, level: int = 0, *, index_box=None, component: Optional[str] = None,
             threads: int = 0, fill: float = float("nan")) -> np.ndarray:
        """The reconstruction at the samples of a box at a level, as StoredField.read gives a
        grid's: C order (z, y, x), a vector field's components last (or only ``component``).
        Level k keeps every 2^k-th sample along each axis, counted from sample 0."""
        if box is not None and index_box is not None:
            raise UsageError("give box (positions) or index_box (sample indexes), not both")
        if box is not None:
            lo, hi = self.index_box_of(box)
        elif index_box is None:
            lo, hi = (0, 0, 0), self._dims
        else:
            lo, hi = (tuple(int(v) for v in b) for b in index_box)
            if len(lo) != 3 or len(hi) != 3:
                raise UsageError(f"index_box must be ((x0, y0, z0), (x1, y1, z1)), got {index_box!r}")
        level = int(level)
        if level < 0:
            raise UsageError(f"level must be >= 0, got {level}")
        stride = 2 ** min(level, self.levels)
        positions = []
        for k in range(3):
            a, b = max(0, lo[k]), min(self._dims[k], hi[k])
            first = -(-a // stride) * stride
            if first >= b:
                raise UsageError(f"field '{self.name}': the box [{lo[k]}, {hi[k]}) along {AXES[k]} holds no sample "
                                 f"of level {level} (of {self._dims[k]} samples)")
            positions.append(self.axis(k)[first:b:stride])
        z, y, x = np.meshgrid(positions[2], positions[1], positions[0], indexing="ij")
        shape = z.shape
        x, y, z = (np.ascontiguousarray(c.ravel()) for c in (x, y, z))
        names = self.components
        if component is not None:
            if not names or component not in names:
                raise UsageError(f"field '{self.name}' has no component {component!r} (components: {names})")
            return self.stored.sample(x, y, z, component=component, fill=fill, threads=threads).reshape(shape)
        if not names:
            return self.stored.sample(x, y, z, fill=fill, threads=threads).reshape(shape)
        return np.stack([self.stored.sample(x, y, z, component=c, fill=fill, threads=threads).reshape(shape)
                         for c in names], axis=-1)

    def to_field(self, level: int = 0) -> Field:
        """The resampling at a level as a Cartesian motes.Field (NaN outside the radius)."""
        stride = 2 ** min(int(level), self.levels)
        return Field(self.read(level=level), origin=self._origin, spacing=tuple(h * stride for h in self._spacing),
                     components=self.components, unit=self.unit, attributes=self.attributes)

    def sample(self, x, y=None, z=None, *, component: Optional[str] = None, fill: float = float("nan"),
               threads: int = 0) -> np.ndarray:
        """The field at points, reconstructed from the modes (StoredField.sample)."""
        return self.stored.sample(x, y, z, component=component, fill=fill, threads=threads)


def _positive_ints(values) -> Tuple[int, int, int]:
    try:
        out = tuple(int(v) for v in values)
        ok = len(out) == 3 and all(v >= 1 and v == w for v, w in zip(out, values))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise UsageError(f"dims must be 3 sample counts >= 1 (x, y, z), got {values!r}")
    return out


def _positive_floats(values) -> Tuple[float, float, float]:
    try:
        out = tuple(float(v) for v in values)
        ok = len(out) == 3 and all(math.isfinite(v) and v > 0 for v in out)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise UsageError(f"spacing must be 3 finite numbers > 0 (dx, dy, dz), got {values!r}")
    return out
