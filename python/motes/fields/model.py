"""A grid field in memory: the values of a 1-, 2- or 3-D grid with its geometry, as
``motes.write(..., fields=)`` takes them, ``Dataset.field(...).read()`` describes them
and the converters (IDX, openPMD meshes, H5Block, VTKHDF) exchange them.

Conventions (one place; docs/guide.md "Fields" repeats them for users):

* ``array`` is a numpy array in C order indexed ``(z, y, x)`` for a 3-D grid, ``(y, x)`` in
  2-D, ``(x,)`` in 1-D: x varies fastest, as numpy users, H5Block and OpenVisus see it. A
  vector field has one more, last axis: its components (``components`` names them).
* ``origin`` and ``spacing`` are given as ``(x, y, z)`` (as many as the grid has axes); a
  rectilinear grid gives ``coords`` instead: one increasing coordinate array per axis, in
  ``(x, y, z)`` order.
* ``centering="node"`` (the default): sample ``i`` sits at ``origin + i * spacing``.
  ``"cell"``: the grid's cells start at ``origin``, sample ``i`` is the cell's centre,
  ``origin + (i + 0.5) * spacing``.
* ``geometry="thetaMode"`` (FBPIC, WarpX RZ: azimuthal modes on an (r, z) grid; docs/format.md
  §14.9): a uniform 2-D grid whose axes are z (the first, "x" place) and r (the second), so
  that ``array`` is openPMD's ``(2 * modes - 1, Nr, Nz)`` per component (components last):
  slot 0 is mode 0, slots 2m - 1 and 2m the real and imaginary parts of mode m. The field at
  (r, θ, z) is F₀ + Σₘ (Reₘ cos mθ + Imₘ sin mθ) (``imag="-"``: − Imₘ sin mθ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from ..dtypes import stored_array
from ..errors import UsageError

__all__ = ["Field", "FieldBlock", "Grid", "CENTERINGS", "AXES", "GEOMETRIES", "THETA_AXES", "require_cartesian"]

#: How samples sit in their grid.
CENTERINGS = ("node", "cell")

#: Axis names in the order origin, spacing and coords are given.
AXES = ("x", "y", "z")

#: How a field's grid maps to space: its axes are x, y, z, or (thetaMode) z, r with azimuthal modes.
GEOMETRIES = ("cartesian", "thetaMode")

#: The axes of a thetaMode field's grid, in the order origin, spacing and dims are given.
THETA_AXES = ("z", "r")

#: The most modes of a thetaMode field (its components' mode arrays: at most 64 in all).
MAX_MODES = 32


def require_cartesian(field, where: str, what: str) -> None:
    """UsageError when ``field`` (a Field or a StoredField) is not a Cartesian grid: ``what``
    (an operation, a format) takes x, y, z grids only."""
    if getattr(field, "geometry", "cartesian") != "cartesian":
        raise UsageError(f"{where}: is a {field.geometry} field (azimuthal modes on a (z, r) grid); {what} takes "
                         "Cartesian grids: resample it first (StoredField.cartesian(...).to_field())")


def _floats(name: str, values, n: int) -> Tuple[float, ...]:
    try:
        out = tuple(float(v) for v in np.atleast_1d(np.asarray(values, dtype=np.float64)))
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be {n} numbers (x, y, z order), got {values!r}") from None
    if len(out) != n:
        raise UsageError(f"{name} must have {n} numbers for a {n}-D grid (x, y, z order), got {len(out)}")
    if not all(np.isfinite(out)):
        raise UsageError(f"{name} must be finite, got {out}")
    return out


def _check_theta(a: np.ndarray, ndim: int, imag, coords, ncomp: int) -> None:
    """A thetaMode field's array: (2 * modes - 1, Nr, Nz) (components last)."""
    if ndim != 2:
        raise UsageError(f"a thetaMode field's array is (2 * modes - 1, Nr, Nz) (plus a last axis of components "
                         f"for a vector field), got shape {a.shape}")
    if a.shape[0] % 2 != 1 or a.shape[0] > 2 * MAX_MODES - 1:
        raise UsageError(f"a thetaMode field's first axis holds 2 * modes - 1 mode arrays (mode 0, then Re and Im of "
                         f"each mode m >= 1; at most {MAX_MODES} modes), got {a.shape[0]}")
    if a.shape[0] * ncomp > 64:
        raise UsageError(f"a thetaMode field stores at most 64 mode arrays in all: {ncomp} component(s) of "
                         f"{a.shape[0]} mode arrays are {a.shape[0] * ncomp}")
    if imag not in ("+", "-"):
        raise UsageError(f"imag (the sign of a thetaMode field's sin terms) must be '+' or '-', got {imag!r}")
    if coords is not None:
        raise UsageError("a thetaMode field is a uniform grid: give origin and spacing (z, r), not coords")


@dataclass
class Grid:
    """What a :class:`Field` and a rank's :class:`FieldBlock` of one are both given: samples
    (``array``) and the geometry of the (global) grid they belong to, declared here once."""

    array: Any
    origin: Optional[Sequence[float]] = None
    spacing: Optional[Sequence[float]] = None
    coords: Optional[Sequence[Any]] = None
    centering: str = "node"
    components: Optional[Sequence[str]] = None
    unit: str = ""
    attributes: Dict[str, Any] = field(default_factory=dict)
    tolerance: float = 0.0

    def grid_keywords(self) -> Dict[str, Any]:
        """The geometry (every field of :class:`Grid` but ``array``) as keywords of :class:`Field`."""
        return {f.name: getattr(self, f.name) for f in fields(Grid) if f.name != "array"}


@dataclass
class Field(Grid):
    """A field on a uniform (``origin``, ``spacing``) or rectilinear (``coords``) grid.

    >>> motes.Field(bz, origin=(0, 0, 0), spacing=(0.5, 0.5, 0.5))              # bz.shape (nz, ny, nx)
    >>> motes.Field(e, spacing=(1, 1, 1), components=("x", "y", "z"), unit="V/m")  # e.shape (nz, ny, nx, 3)
    >>> motes.Field(rho, tolerance=1e-3)   # stored within 1e-3 of each value (ZFP; float32/float64)
    >>> motes.Field(er, geometry="thetaMode", origin=(zmin, 0), spacing=(dz, dr), centering="cell")
    ...                                    # er.shape (2 * modes - 1, Nr, Nz): FBPIC's modes

    ``tolerance`` > 0 stores the samples lossily within that absolute error (ZFP fixed
    accuracy, block by block: a block ZFP cannot keep within it, or holding NaN or an
    infinity, is stored exactly); 0 (the default) stores them exactly.

    The samples take the dtypes of particle columns, converted the same way
    (``motes.dtypes.stored_array``): float32/64, int8-64 and uint8-64 as they are,
    big-endian arrays in native byte order, booleans as uint8.
    """

    geometry: str = "cartesian"
    imag: str = "+"

    def __post_init__(self):
        a = stored_array("a field", np.asarray(self.array))  # as particle columns: big-endian, booleans
        if self.geometry not in GEOMETRIES:
            raise UsageError(f"geometry must be one of {GEOMETRIES}, got {self.geometry!r}")
        theta = self.geometry == "thetaMode"
        if self.components is not None:
            self.components = tuple(str(c) for c in self.components)
            if a.ndim < 2 or a.shape[-1] != len(self.components):
                raise UsageError(f"a vector field with components {self.components} needs a last axis of "
                                 f"{len(self.components)}, got shape {a.shape}")
            if len(set(self.components)) != len(self.components) or not all(self.components):
                raise UsageError(f"component names must be distinct and not empty, got {self.components}")
        ndim = a.ndim - (self.components is not None) - theta
        if theta:
            _check_theta(a, ndim, self.imag, self.coords, len(self.components or (0,)))
        elif not 1 <= ndim <= 3:
            raise UsageError(f"a field is a 1-, 2- or 3-D grid (plus a last axis of components for a vector "
                             f"field), got an array of shape {a.shape}")
        if 0 in a.shape:
            raise UsageError(f"a field's grid has no samples along an axis: shape {a.shape}")
        self.array = a
        if self.centering not in CENTERINGS:
            raise UsageError(f"centering must be one of {CENTERINGS}, got {self.centering!r}")
        if self.coords is not None:
            if self.origin is not None or self.spacing is not None:
                raise UsageError("give a field origin and spacing (a uniform grid) or coords (a rectilinear one), "
                                 "not both")
            if len(self.coords) != ndim:
                raise UsageError(f"coords must have {ndim} arrays (x, y, z order) for a {ndim}-D grid, "
                                 f"got {len(self.coords)}")
            coords = []
            for k, c in enumerate(self.coords):
                c = np.ascontiguousarray(c, dtype=np.float64)
                n = self.shape[ndim - 1 - k]
                if c.shape != (n,):
                    raise UsageError(f"coords of {AXES[k]} must have {n} values (the grid's {AXES[k]} size), "
                                     f"got shape {c.shape}")
                if not np.all(np.isfinite(c)) or np.any(np.diff(c) <= 0):
                    raise UsageError(f"coords of {AXES[k]} must be finite and increasing")
                coords.append(c)
            self.coords = tuple(coords)
        else:
            self.origin = _floats("origin", (0.0,) * ndim if self.origin is None else self.origin, ndim)
            self.spacing = _floats("spacing", (1.0,) * ndim if self.spacing is None else self.spacing, ndim)
            if any(s <= 0 for s in self.spacing):
                raise UsageError(f"spacing must be positive, got {self.spacing}")
            if theta and self.origin[1] < 0:
                raise UsageError(f"a thetaMode field's radial axis (origin[1]) must start at r >= 0, "
                                 f"got {self.origin[1]}")
        try:
            self.tolerance = float(self.tolerance)
        except (TypeError, ValueError):
            raise UsageError(f"tolerance must be a number, got {self.tolerance!r}") from None
        if not (np.isfinite(self.tolerance) and self.tolerance >= 0):
            raise UsageError(f"tolerance must be finite and >= 0, got {self.tolerance}")
        if self.tolerance > 0 and a.dtype not in (np.float32, np.float64):
            raise UsageError(f"a tolerance (ZFP) needs float32 or float64 samples, got {a.dtype}")
        if not isinstance(self.unit, str):
            raise UsageError(f"a field's unit must be text, got {self.unit!r}")
        self.attributes = dict(self.attributes)

    @property
    def ndim(self) -> int:
        """Axes of the grid (1, 2 or 3; the components' axis and the modes' are not one)."""
        return self.array.ndim - (self.components is not None) - (self.geometry == "thetaMode")

    @property
    def shape(self) -> Tuple[int, ...]:
        """The grid's shape, (z, y, x) order (without the components and the modes; (r, z)
        for a thetaMode field)."""
        first = 1 if self.geometry == "thetaMode" else 0
        return tuple(self.array.shape[first: first + self.ndim])

    @property
    def modes(self) -> int:
        """A thetaMode field's modes (0 to modes - 1; its array holds 2 * modes - 1 slots); 0
        for a Cartesian field."""
        return (self.array.shape[0] + 1) // 2 if self.geometry == "thetaMode" else 0

    @property
    def dims(self) -> Tuple[int, ...]:
        """The grid's sample counts in (x, y, z) order."""
        return tuple(reversed(self.shape))

    @property
    def uniform(self) -> bool:
        return self.coords is None

    def axis(self, k: int) -> np.ndarray:
        """Positions of the samples along axis ``k`` (0 = x) as float64."""
        if not 0 <= k < self.ndim:
            raise UsageError(f"a {self.ndim}-D field has no axis {k}")
        if self.coords is not None:
            return self.coords[k]
        n = self.dims[k]
        shift = 0.5 if self.centering == "cell" else 0.0
        return self.origin[k] + (np.arange(n, dtype=np.float64) + shift) * self.spacing[k]

    def bounds(self) -> Tuple[Tuple[float, ...], Tuple[float, ...]]:
        """(lo, hi) of the samples' positions, (x, y, z) order."""
        axes = [self.axis(k) for k in range(self.ndim)]
        return tuple(float(a[0]) for a in axes), tuple(float(a[-1]) for a in axes)


@dataclass
class FieldBlock(Grid):
    """One MPI rank's block of a global grid, for parallel writes (as H5Block's views):
    ``array`` holds the block with its ghost zones, C order ``(z, y, x)`` (components last for
    a vector field); ``offset`` is the (x, y, z) index, in the global grid, of the block's first
    sample *inside* the ghosts; ``ghosts`` the widths ``((x_lo, x_hi), (y_lo, y_hi), (z_lo,
    z_hi))`` dropped on write (default none); ``dims`` the global grid's (x, y, z) samples.
    The blocks of all ranks must cover the global grid exactly once. ``origin``, ``spacing``,
    ``coords``, ``centering``, ``components``, ``unit``, ``attributes`` and ``tolerance`` are
    those of the global field (:class:`Grid`, as for :class:`Field`). ``offset`` and ``dims``
    are required, by keyword."""

    offset: Optional[Sequence[int]] = None
    dims: Optional[Sequence[int]] = None
    ghosts: Optional[Sequence[Sequence[int]]] = None

    def __post_init__(self):
        if self.offset is None or self.dims is None:
            raise UsageError("a FieldBlock needs offset= (its first sample's index in the global grid) and dims= "
                             "(the global grid's samples), by keyword")

    def interior(self) -> np.ndarray:
        """The block without its ghost zones."""
        a = np.asarray(self.array)
        ndim = len(self.dims)
        ghosts = self.ghosts or [(0, 0)] * ndim
        if len(ghosts) != ndim or any(len(g) != 2 or min(g) < 0 for g in ghosts):
            raise UsageError(f"ghosts must be {ndim} pairs (lo, hi) of widths >= 0, got {self.ghosts!r}")
        index = []
        for k in reversed(range(ndim)):  # array axes are (z, y, x)
            lo, hi = (int(v) for v in ghosts[k])
            n = a.shape[ndim - 1 - k]
            if lo + hi >= n:
                raise UsageError(f"ghost widths {lo}, {hi} along {AXES[k]} leave no sample of a block of {n}")
            index.append(slice(lo, n - hi))
        return a[tuple(index)]


def index_box_in(name: str, box: Sequence[float], positions: Sequence[np.ndarray],
                 axis_names: Sequence[str]) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
    """The sample indexes [lo, hi) (x, y, z) of a grid whose axes have the sample
    ``positions`` (ascending, one array per axis) that lie in a physical box (x0, y0, z0,
    x1, y1, z1), bounds inclusive; axes past ``positions`` are [0, 1). UsageError when the
    box is malformed or holds no sample along an axis."""
    box = [float(v) for v in box]
    if len(box) != 6 or any(math.isnan(v) for v in box):
        raise UsageError(f"box must be 6 numbers (x0, y0, z0, x1, y1, z1), got {box!r}")
    lo, hi = [0, 0, 0], [1, 1, 1]
    for k, pos in enumerate(positions):
        lo[k] = int(np.searchsorted(pos, box[k], side="left"))
        hi[k] = int(np.searchsorted(pos, box[3 + k], side="right"))
        if lo[k] >= hi[k]:
            raise UsageError(f"field '{name}': no sample lies in the box along {axis_names[k]} "
                             f"([{box[k]!r}, {box[3 + k]!r}]; samples from {pos[0]!r} to {pos[-1]!r})")
    return tuple(lo), tuple(hi)
