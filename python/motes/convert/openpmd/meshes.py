"""The mapping between openPMD mesh records and motes grid fields (:class:`motes.Field`),
without openpmd-api: the rules of docs/convert-openpmd.md, "Meshes and fields".

Reading (:func:`plan_fields`): a mesh record, described as :class:`Mesh`, becomes one
field, or one per component when its components do not share one grid:

* axes: ``dataOrder`` "C" lists ``axisLabels``, ``gridSpacing``, ``gridGlobalOffset`` and
  every ``position`` in the order of the dataset's dims, "F" in the reverse order. The
  labels name the axes: the array is transposed into motes' (z, y, x) order, the geometry
  listed in (x, y, z). Labels {x}, {x, y} or {x, y, z} make a 1-, 2- or 3-D field; others
  ({x, z}, {z}, ...) a 3-D field whose missing axes have one sample (origin 0, spacing 1);
* geometry in the grid's units (``gridSpacing``, ``gridGlobalOffset`` as stored; times
  ``gridUnitSI`` is metres): ``position`` 0 on every axis is a node-centred field with
  origin ``gridGlobalOffset``; 0.5 on every axis a cell-centred one (cells start at
  ``gridGlobalOffset``); any other position a node-centred field whose origin is
  ``gridGlobalOffset + position * gridSpacing`` (per axis);
* a vector record is one vector field when its components share shape, dtype, position and
  unitSI, else one scalar field ``<record>_<component>`` per component (a staggered grid);
* the unit is ``openpmd_unit(unitSI, unitDimension)``; what openPMD says beyond the Field
  goes to ``field.attributes["openpmd"]`` (see :func:`plan_fields`) so that writing gives
  the same record back.

Writing (:func:`plan_meshes`) is the inverse: the stored layout when it still gives the
field's grid exactly, else axisLabels (z, y, x) in "C" order, position 0 (node) or 0.5
(cell) and ``gridGlobalOffset`` = the field's origin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ...fields.model import AXES, Field
from ...errors import FormatError, UsageError
from ..base import check_dtype
from . import theta
from .mapping import DIMENSIONLESS, canon, unit_of, unit_text

KEY = "openpmd"   # field.attributes[KEY]: the openPMD description of a field read from openPMD


@dataclass
class MeshComp:
    """One mesh record component as read."""
    comp: str                       # "" for a scalar record
    shape: Tuple[int, ...]
    dtype: np.dtype
    unit_si: float
    position: List[float]           # as stored (the order of axisLabels)
    constant: Any = None            # the value of a constant component, else None
    attributes: Dict[str, Any] = field(default_factory=dict)   # custom attributes, typed
    handle: Any = None              # the reader's object (an openpmd_api Mesh_Record_Component)


@dataclass
class Mesh:
    """One mesh record as read (attribute lists as stored)."""
    name: str
    scalar: bool
    geometry: str
    data_order: str
    axis_labels: List[str]
    grid_spacing: List[float]
    grid_global_offset: List[float]
    grid_unit_si: float
    unit_dimension: List[float]
    comps: List[MeshComp]
    geometry_parameters: Optional[str] = None
    time_offset: Any = None                                     # typed entry or None
    attributes: Dict[str, Any] = field(default_factory=dict)    # custom record attributes, typed
    extra: Dict[str, Any] = field(default_factory=dict)         # motes field attributes kept by an export


@dataclass
class FieldPlan:
    """A field to make of the components of a mesh, once their arrays are loaded."""
    name: str
    comps: List[MeshComp]
    vector: bool
    perm: Tuple[int, ...]           # a component's dataset dims -> the field's axes present, (z, y, x)
    shape: Tuple[int, ...]          # the field's grid shape, (z, y, x)
    dtype: np.dtype                 # the field's (bool read as uint8, half floats as float32)
    geometry: Dict[str, Any]        # origin, spacing, centering
    unit: str
    attributes: Dict[str, Any]

    def field(self, arrays: Sequence[np.ndarray]) -> Field:
        """The Field of the loaded component arrays (one per component, dataset dims)."""
        if not self.vector:
            return self._make(np.transpose(arrays[0], self.perm).reshape(self.shape).astype(self.dtype, copy=False))
        out = np.empty(self.shape + (len(arrays),), dtype=self.dtype)
        for k, a in enumerate(arrays):
            out[..., k] = np.transpose(a, self.perm).reshape(self.shape)
        return self._make(out)

    def _make(self, values: np.ndarray) -> Field:
        return Field(values, components=tuple(c.comp for c in self.comps) if self.vector else None,
                     unit=self.unit, attributes=self.attributes, **self.geometry)


def _c_order(order: str, values: Sequence[Any]) -> List[Any]:
    return list(values) if order == "C" else list(values)[::-1]


def grid_axes(labels_c: Sequence[str]) -> Tuple[int, List[Optional[int]]]:
    """The field's number of axes for axis labels in dataset order, and for each field axis
    (x, y, z order) the dataset axis that holds it (None: an axis of one sample)."""
    present = set(labels_c)
    n = len(present) if present in ({"x"}, {"x", "y"}, {"x", "y", "z"}) else 3
    return n, [labels_c.index(a) if a in present else None for a in AXES[:n]]


def geometry(n: int, where_axes: Sequence[Optional[int]], spacing_c: Sequence[float],
             offset_c: Sequence[float], position_c: Sequence[float]) -> Dict[str, Any]:
    """origin, spacing (x, y, z) and centering of a component (see the module doc)."""
    ps = [float(position_c[d]) for d in where_axes if d is not None]
    cell = all(p == 0.5 for p in ps)
    shifted = not cell and any(p != 0.0 for p in ps)   # node-centred, its origin moved by position
    origin, spacing = [], []
    for d in where_axes:
        if d is None:   # an axis the mesh does not have: one sample
            origin.append(0.0)
            spacing.append(1.0)
            continue
        o, h = float(offset_c[d]), float(spacing_c[d])
        origin.append(o + float(position_c[d]) * h if shifted else o)
        spacing.append(h)
    return {"origin": tuple(origin), "spacing": tuple(spacing), "centering": "cell" if cell else "node"}


def labels_problem(labels: Sequence[Any]) -> str:
    """Why axis labels cannot name a motes field's axes ("" if they can)."""
    labels = list(labels)
    if not labels or len(set(labels)) != len(labels) or not set(labels) <= set(AXES):
        return f"axisLabels {labels} are not distinct names among x, y, z"
    return ""


def skip_reason(mesh: Mesh) -> str:
    """Why a mesh cannot be a motes field ("" if it can): fields are cartesian x, y, z grids
    or thetaMode (r, z) grids of azimuthal modes."""
    if mesh.geometry == "thetaMode":
        return theta.problem(mesh)
    if mesh.geometry != "cartesian":
        return f"geometry '{mesh.geometry}' is neither cartesian nor thetaMode"
    return labels_problem(mesh.axis_labels)


def _check(where: str, mesh: Mesh) -> None:
    """FormatError for attributes that do not fit the datasets' dims."""
    if mesh.data_order not in ("C", "F"):
        raise FormatError(f"{where}: dataOrder must be 'C' or 'F', got {mesh.data_order!r}")
    ndim = {len(c.shape) for c in mesh.comps}
    if len(ndim) != 1:
        raise FormatError(f"{where}: components have different numbers of dims "
                          f"({', '.join(f'{c.comp or repr(mesh.name)}: {list(c.shape)}' for c in mesh.comps)})")
    (nd,) = ndim
    for label, values in (("axisLabels", mesh.axis_labels), ("gridSpacing", mesh.grid_spacing),
                          ("gridGlobalOffset", mesh.grid_global_offset)):
        if len(values) != nd:
            raise FormatError(f"{where}: {label} has {len(values)} values ({list(values)}) but the mesh is "
                              f"{nd}-D (shape {list(mesh.comps[0].shape)})")
    for c in mesh.comps:
        if len(c.position) != nd:
            raise FormatError(f"{where}{f', component {c.comp!r}' if c.comp else ''}: position has "
                              f"{len(c.position)} values ({list(c.position)}) but the mesh is {nd}-D")
    if not all(np.isfinite(v) for v in [*mesh.grid_spacing, *mesh.grid_global_offset, mesh.grid_unit_si]):
        raise FormatError(f"{where}: gridSpacing, gridGlobalOffset and gridUnitSI must be finite")


def description(mesh: Mesh, comps: Sequence[MeshComp], split: bool) -> Dict[str, Any]:
    """field.attributes["openpmd"] of a field made of ``comps`` of ``mesh``."""
    d: Dict[str, Any] = {
        "record": mesh.name, "geometry": mesh.geometry, "dataOrder": mesh.data_order,
        "axisLabels": list(mesh.axis_labels), "gridSpacing": list(mesh.grid_spacing),
        "gridGlobalOffset": list(mesh.grid_global_offset), "gridUnitSI": mesh.grid_unit_si,
        "unitDimension": list(mesh.unit_dimension), "timeOffset": mesh.time_offset, "attributes": mesh.attributes,
        "components": {c.comp: {"unitSI": c.unit_si, "position": list(c.position), "attributes": c.attributes,
                                **({"constant": c.constant} if c.constant is not None else {})} for c in comps},
    }
    if mesh.geometry_parameters is not None:
        d["geometryParameters"] = mesh.geometry_parameters
    if split:
        d["component"] = comps[0].comp
    return d


def plan_fields(where: str, mesh: Mesh) -> List[FieldPlan]:
    """The fields of a mesh (FormatError for attributes that contradict its datasets;
    call :func:`skip_reason` first)."""
    if mesh.geometry == "thetaMode":
        return theta.plan(where, mesh, lambda perm, where_axes, extra: _plans(
            where, mesh, 2, where_axes, perm, lambda c: theta.shape_of(c.shape, perm), extra))
    _check(where, mesh)
    n, where_axes = grid_axes(_c_order(mesh.data_order, mesh.axis_labels))
    perm = tuple(d for d in reversed(where_axes) if d is not None)
    return _plans(where, mesh, n, where_axes, perm,
                  lambda c: tuple(c.shape[d] if d is not None else 1 for d in reversed(where_axes)), {})


def _plans(where: str, mesh: Mesh, n: int, where_axes, perm, shape_of, extra: Dict[str, Any]) -> List[FieldPlan]:
    """The field plans of a mesh whose dataset axis of each field axis (x, y, z order) is
    ``where_axes`` (in the order of axisLabels as stored, made C order), its dims permuted
    by ``perm`` into the field's array, of shape ``shape_of(component)``; ``extra``: the
    geometry's Field keywords."""
    spacing_c = _c_order(mesh.data_order, mesh.grid_spacing)
    offset_c = _c_order(mesh.data_order, mesh.grid_global_offset)
    dtypes = {c.comp: check_dtype(f"{where}{f', component {c.comp!r}' if c.comp else ''}", mesh.name, c.dtype)
              for c in mesh.comps}   # UsageError for complex, strings, ...

    def key(c: MeshComp):
        return (c.shape, np.dtype(c.dtype), tuple(c.position), c.unit_si)

    groups = [list(mesh.comps)] if len({key(c) for c in mesh.comps}) == 1 else [[c] for c in mesh.comps]
    split = len(groups) > 1
    plans = []
    for comps in groups:
        c0 = comps[0]
        shape = shape_of(c0)
        rmeta = {"attributes": mesh.attributes, "unitDimension": mesh.unit_dimension}
        attributes = dict(mesh.extra.get(c0.comp, {}) if split else mesh.extra.get("", {}))
        attributes[KEY] = description(mesh, comps, split)
        grid = dict(geometry(n, where_axes, spacing_c, offset_c, _c_order(mesh.data_order, c0.position)), **extra)
        plan = FieldPlan(f"{mesh.name}_{c0.comp}" if split else mesh.name, comps, not mesh.scalar and not split,
                         perm, shape, dtypes[c0.comp], grid, unit_text(rmeta, c0.unit_si), attributes)
        try:   # the geometry checked now, before any value is read
            plan._make(np.broadcast_to(np.zeros((), plan.dtype), shape + ((len(comps),) if plan.vector else ())))
        except UsageError as e:
            raise FormatError(f"{where}: {e}") from None
        plans.append(plan)
    return plans


# ---------------------------------------------------------------------------------------------
# writing: fields -> mesh records
# ---------------------------------------------------------------------------------------------

@dataclass
class CompOut:
    """One mesh record component to write."""
    comp: str                        # "" = scalar record
    values: np.ndarray               # in the dataset's dims
    unit_si: float
    position: List[float]            # in the order of axisLabels
    constant: Any = None             # write as a constant of this value
    attributes: Dict[str, Any] = field(default_factory=dict)
    extra: Dict[str, Any] = field(default_factory=dict)   # motes field attributes of a split component


@dataclass
class MeshOut:
    """One mesh record to write."""
    scalar: bool
    data_order: str
    axis_labels: List[str]
    grid_spacing: List[float]
    grid_global_offset: List[float]
    grid_unit_si: float
    unit_dimension: List[float]
    geometry_parameters: Optional[str] = None
    time_offset: Any = None
    attributes: Dict[str, Any] = field(default_factory=dict)
    extra: Dict[str, Any] = field(default_factory=dict)   # motes field attributes (motesAttributes)
    geometry: str = "cartesian"                           # or "thetaMode"


def _layout(fld: Field, meta: Dict[str, Any], comp_names: Sequence[str]) -> Dict[str, Any]:
    """Axis labels, order, spacing, offset and positions that give ``fld``'s grid: the stored
    ones when they still do, exactly, else (z, y, x) in C order ((r, z) for thetaMode)."""
    if fld.geometry == "thetaMode":
        return theta.layout(fld, meta if meta.get("geometry", "thetaMode") == "thetaMode" else {}, comp_names, geometry)
    if meta.get("geometry", "cartesian") != "cartesian":
        meta = {}   # the description of a mesh of another geometry (a thetaMode field's, resampled) does not apply
    labels, order = meta.get("axisLabels"), meta.get("dataOrder")
    if isinstance(labels, list) and order in ("C", "F") and all(isinstance(a, str) for a in labels):
        labels_c = _c_order(order, labels)
        comps = meta.get("components") or {}
        try:
            n, where_axes = grid_axes(labels_c)
            spacing_c = _c_order(order, meta["gridSpacing"])
            offset_c = _c_order(order, meta["gridGlobalOffset"])
            positions = {c: list(comps[c]["position"]) for c in comp_names}
            fits = (not labels_problem(labels) and n == fld.ndim
                    and len(spacing_c) == len(offset_c) == len(labels_c)
                    and all(fld.shape[n - 1 - k] == 1 for k, d in enumerate(where_axes) if d is None)
                    and all(len(p) == len(labels_c) and geometry(n, where_axes, spacing_c, offset_c, _c_order(order, p))
                            == {"origin": tuple(fld.origin), "spacing": tuple(fld.spacing), "centering": fld.centering}
                            for p in positions.values()))
        except (KeyError, TypeError, ValueError):
            fits = False
        if fits:
            return {"order": order, "labels": list(labels), "where_axes": where_axes,
                    "spacing": list(meta["gridSpacing"]), "offset": list(meta["gridGlobalOffset"]),
                    "positions": positions}
    n = fld.ndim
    labels_c = list(reversed(AXES[:n]))
    p = 0.5 if fld.centering == "cell" else 0.0
    return {"order": "C", "labels": labels_c, "where_axes": list(reversed(range(n))),
            "spacing": list(reversed(fld.spacing)), "offset": list(reversed(fld.origin)),
            "positions": {c: [p] * n for c in comp_names}}


def _file_values(a: np.ndarray, layout: Dict[str, Any]) -> np.ndarray:
    """A component's (z, y, x) array in the dataset's dims (the inverse of FieldPlan.field)."""
    if "where_axes" not in layout:   # thetaMode: (modes, r, z)
        return theta.file_values(a, layout)
    present = [d for d in reversed(layout["where_axes"]) if d is not None]   # dataset axis of each array axis
    squeezed = a.reshape(tuple(a.shape[i] for i, d in enumerate(reversed(layout["where_axes"])) if d is not None))
    return np.ascontiguousarray(np.transpose(squeezed, [present.index(d) for d in range(len(present))]))


def _record(fld: Field, meta: Dict[str, Any], layout: Dict[str, Any], scalar: bool) -> MeshOut:
    """A mesh record's attributes (its components are written by the caller)."""
    theta_mode = fld.geometry == "thetaMode"
    same = meta.get("geometry", "thetaMode" if theta_mode else "cartesian") == fld.geometry
    return MeshOut(scalar=scalar, data_order=layout["order"], axis_labels=layout["labels"],
                   grid_spacing=[float(v) for v in layout["spacing"]],
                   grid_global_offset=[float(v) for v in layout["offset"]],
                   grid_unit_si=float(meta.get("gridUnitSI", 1.0)),
                   unit_dimension=list(meta.get("unitDimension") or DIMENSIONLESS),
                   geometry_parameters=theta.geometry_parameters(fld, meta) if theta_mode else
                   meta.get("geometryParameters") if same else None, time_offset=meta.get("timeOffset"),
                   attributes=dict(meta.get("attributes") or {}), geometry=fld.geometry)


def plan_meshes(where: str, fields: Mapping[str, Field]) -> Iterator[Tuple[str, MeshOut, bool, List[CompOut]]]:
    """The mesh records to write for a step's fields, one field at a time (a source's
    LazyFields reads each when it comes): (mesh name, record, whether it is new, the
    components of this field). A field read from one component of a staggered mesh
    (``attributes["openpmd"]["component"]``) goes back into that mesh with its other
    components. See the module doc for the rules."""
    records: Dict[str, Tuple[MeshOut, set]] = {}
    owner: Dict[str, str] = {}    # record -> the field that is all of it
    for name in fields:
        fld = fields[name]
        w = f"{where}, field '{name}'"
        if not isinstance(fld, Field):
            raise UsageError(f"{w}: a step's fields must be motes.Field objects, got {type(fld).__name__}")
        if not fld.uniform:
            raise UsageError(f"{w}: is on a rectilinear grid (coords); openPMD meshes are uniform grids "
                             "(origin and spacing)")
        meta = fld.attributes.get(KEY) if isinstance(fld.attributes.get(KEY), dict) else {}
        extra = {k: v for k, v in fld.attributes.items() if k != KEY}
        split = isinstance(meta.get("component"), str) and isinstance(meta.get("record"), str)
        record = meta["record"] if split else name
        comp_names = [meta["component"]] if split else list(fld.components or [""])
        if not record or "/" in record or any("/" in c for c in comp_names):
            raise UsageError(f"{w}: {record!r} (components {comp_names}) cannot be an openPMD mesh name")
        if record in owner or (not split and record in records):
            raise UsageError(f"{w}: mesh '{record}' is already given by field '{owner.get(record, record)}'")
        layout = _layout(fld, meta, comp_names)
        new = record not in records
        if new:
            records[record] = (_record(fld, meta, layout, scalar=not split and fld.components is None), set())
            if not split:
                owner[record], records[record][0].extra = name, extra
        rec, done = records[record]
        if (rec.axis_labels, rec.data_order, rec.grid_spacing, rec.grid_global_offset, rec.geometry) != \
                (layout["labels"], layout["order"], [float(v) for v in layout["spacing"]],
                 [float(v) for v in layout["offset"]], fld.geometry):
            raise UsageError(f"{w}: component '{comp_names[0]}' of mesh '{record}' lies on another grid than its "
                             "other components (axisLabels, gridSpacing, gridGlobalOffset)")
        stored = meta.get("components") or {}
        si, dim, free = unit_of({name: fld.unit}, name, (stored.get(comp_names[0]) or {}).get("unitSI"),
                                meta.get("unitDimension"), DIMENSIONLESS)
        if not new and dim != rec.unit_dimension:
            raise UsageError(f"{w}: component '{comp_names[0]}' of mesh '{record}' has unitDimension {dim}, its "
                             f"other components {rec.unit_dimension}")
        rec.unit_dimension = dim
        if free:
            rec.attributes.setdefault("motesUnit", free)
        comps = []
        for k, c in enumerate(comp_names):
            if c in done:
                raise UsageError(f"{w}: component '{c}' of mesh '{record}' is given twice")
            done.add(c)
            values = _file_values(fld.array[..., k] if fld.components is not None else fld.array, layout)
            smeta = stored.get(c) or {}
            const = smeta.get("constant")
            const = const if const is not None and np.all(values == const) else None
            comps.append(CompOut(c, np.ascontiguousarray(values, dtype=canon(values.dtype)), si,
                                 layout["positions"][c], const, dict(smeta.get("attributes") or {}),
                                 extra if split else {}))
        yield record, rec, new, comps
