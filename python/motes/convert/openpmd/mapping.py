"""The mapping between openPMD particle records and motes columns, without openpmd-api.

This module owns the rules of docs/convert-openpmd.md that do not touch a file:

* reading: the particle count of a species and which records fit it (:func:`particle_count`,
  :func:`extent_problem`: FBPIC and other h5py-based writers give constants the shape
  ``[1]``), the columns a species' record components become (:func:`columns_of`:
  ``position`` + ``positionOffset`` -> ``x``, ``y``, ``z``; ``R/C`` -> ``R_C``; a scalar
  record ``R`` -> ``R``; constants -> no column), the unit text of a column
  (:func:`unit_text`) and the rows of a chunk (:func:`assemble`);
* writing: the records and components a motes species becomes (:func:`plan_species`), the
  unitSI and unitDimension of a column's unit (:func:`unit_of`) and the values stored for
  a component (:func:`stored_values`).

The reader and writer hand it plain descriptions (:class:`Component`; the openpmd-api
object rides along in ``handle``, untouched here), so every rule is testable without
openpmd-api installed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...errors import FormatError, UsageError
from ...units import si_of_text
from ..base import Species, check_dtype, openpmd_unit, parse_openpmd_unit

AXES = ("x", "y", "z")
LENGTH = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
DIMENSIONLESS = [0.0] * 7

RESERVED_RECORDS = ("position", "positionOffset", "particlePatches")

#: Codes whose position components are not named x, y, z: which component each motes axis
#: holds, by the series' ``software`` attribute (docs/convert-openpmd.md, "Positions"). WarpX,
#: FBPIC, PIConGPU and HiPACE++ name theirs x, y, z (or some of them, in 1-D and 2-D).
CODE_AXES: Dict[str, Dict[str, str]] = {
    "ImpactX": {"x": "x", "y": "y", "z": "t"},  # t: the longitudinal position, c·Δt behind the reference (m)
}

#: Codes whose iteration ``time`` is not a time: what it is and its unit, kept in the step's
#: attributes (``time_quantity``, ``time_unit``) beside ``Step.time`` (``time * timeUnitSI``).
CODE_TIMES: Dict[str, Tuple[str, str]] = {
    "ImpactX": ("path length s of the reference particle", "m"),
}


def position_axes(where: str, components: Sequence[str], software: Optional[str] = None,
                  axes: Optional[Sequence[str]] = None) -> Tuple[Dict[str, str], str]:
    """Which ``position`` component each motes axis holds (motes axis -> component; an axis
    holding none is filled with zeros), and the rule that chose it:

    * ``"axes"``: ``axes`` given (``--axes``; ``axes=`` in Python), the components on x, y,
      z in that order, ``"-"`` (or ``""``) for an axis that holds none;
    * ``"names"``: every component is named x, y or z, and is on that axis;
    * the code's name (``CODE_AXES``, by the series' ``software``);
    * ``"order"``: components named x, y or z on their axes, the others on the axes left,
      in x, y, z order, as the series lists them.

    More than three components need ``axes``."""
    comps = list(components)
    if axes is not None:
        names = ["" if a in ("", "-") else str(a) for a in axes]
        if not 1 <= len(names) <= 3 or not any(names):
            raise UsageError(f"axes must name 1 to 3 position components (x, y, z in order; '-' for none), "
                             f"got {list(axes)}")
        for n in names:
            if n and n not in comps:
                raise UsageError(f"{where}: axes names '{n}', which is no component of 'position' "
                                 f"(components: {', '.join(comps)})")
            if n and names.count(n) > 1:
                raise UsageError(f"axes names '{n}' twice")
        left = [c for c in comps if c not in names]
        if left:
            raise UsageError(f"{where}: position component(s) {', '.join(left)} on no axis of axes="
                             f"{','.join(n or '-' for n in names)}")
        return {AXES[i]: n for i, n in enumerate(names) if n}, "axes"
    if len(comps) > 3:
        raise UsageError(f"{where}, record 'position': {len(comps)} components ({', '.join(comps)}); motes has "
                         "three spatial axes: choose them with --axes (axes= in Python), e.g. --axes "
                         + ",".join(comps[:3]))
    if set(comps) <= set(AXES):
        return {c: c for c in comps}, "names"
    table = CODE_AXES.get(str(software or ""))
    if table and set(comps) <= set(table.values()):
        return {a: c for a, c in table.items() if c in comps}, str(software)
    out = {c: c for c in comps if c in AXES}
    free = [a for a in AXES if a not in out]
    for c in comps:
        if c not in AXES:
            out[free.pop(0)] = c
    return {a: out[a] for a in AXES if a in out}, "order"


def canon(dtype: Any) -> np.dtype:
    """A native, canonical dtype: openpmd-api refuses arrays whose dtype is a byte-order variant
    (``np.dtype('f8').newbyteorder('=')``) of the dataset's."""
    dt = np.dtype(dtype)
    return np.dtype(dt.name) if dt.kind in "biufc" and dt.isnative else dt


def column_dtype(where: str, name: str, dtype: Any) -> np.dtype:
    """The motes dtype of a column (UsageError naming it for types motes cannot store)."""
    return canon(check_dtype(where, name, dtype))


def scalar_of(dtype_name: str, value: Any):
    return np.dtype(dtype_name).type(value)


def where_of(path: str, index: int, species: str, record: Optional[str] = None, comp: str = "") -> str:
    """The place an error names: file, iteration, species and record component."""
    w = f"{path}: iteration {index}, species '{species}'"
    return w if record is None else record_at(w, record, comp)


def record_at(where: str, record: str, comp: str = "") -> str:
    return f"{where}, record '{record}{'/' + comp if comp else ''}'"


# ---------------------------------------------------------------------------------------------
# reading: record components -> columns
# ---------------------------------------------------------------------------------------------

@dataclass
class Component:
    """One record component as read: what the mapping needs of it."""
    record: str
    comp: str                  # "" for the component of a scalar record
    shape: Tuple[int, ...]
    is_constant: bool
    dtype: Optional[np.dtype] = None
    unit_si: float = 1.0
    constant: Optional[Any] = None   # the value of a constant component, else None
    handle: Any = None               # the reader's object (an openpmd_api Record_Component)

    @property
    def label(self) -> str:
        return f"{self.record}{'/' + self.comp if self.comp else ''}"


@dataclass
class Column:
    """A motes column of a species read from openPMD, and where its values come from."""
    name: str
    dtype: np.dtype
    unit: str
    kind: str                  # "data" | "fill" | "axis"
    comp: Optional[Component] = None
    axis: str = ""
    fill: Any = 0
    offset: Optional[Component] = None  # for "axis": positionOffset component (None: no offset)
    ratio: float = 1.0                  # positionOffset unitSI / position unitSI


def particle_count(records: Dict[str, List[Component]], where: str) -> Tuple[int, str]:
    """The number of particles and the component that gives it: the extent of the first
    non-constant 1-D component (``position`` first). Constant components may have any
    extent: openPMD says [N], FBPIC and other h5py-based writers give [1]; either way the
    value holds for every particle. With constants only, their declared extent."""
    names = sorted(records, key=lambda r: (r != "position", r))
    for constants in (False, True):
        for rname in names:
            for c in records[rname]:
                if (constants or not c.is_constant) and len(c.shape) == 1:
                    return int(c.shape[0]), c.label
    raise FormatError(f"{where}: has no 1-D record component, so no particle count")


def extent_problem(members: Sequence[Component], count: int, count_from: str) -> str:
    """Why the components of a record cannot be columns of ``count`` rows ("" if they can)."""
    for c in members:
        if c.is_constant:
            continue  # a constant holds for every particle, whatever extent it declares
        label = f"component '{c.comp}'" if c.comp else "it"
        if len(c.shape) != 1:
            return f"{label} has shape {list(c.shape)}; particle record components must be 1-D"
        if int(c.shape[0]) != count:
            return f"{label} has {int(c.shape[0])} values, but '{count_from}' has {count} particles"
    return ""


def holds_data(c: Component, count: int) -> bool:
    """Whether a component's values become a column: the non-constant ones, and in a species
    of no particles also the constants of shape [0]. openpmd-api stores every dataset of
    extent [0] as a constant of that shape (its value means nothing), so an empty column
    written to openPMD comes back this way; it must come back as an empty column of its
    dtype, not vanish into the constants. (``position`` and ``positionOffset`` are always
    read as x, y, z: see :func:`columns_of`.)"""
    return not c.is_constant or (count == 0 and tuple(c.shape) == (0,))


def unit_text(rmeta: Dict[str, Any], unit_si: float) -> str:
    """The motes unit of a column: openpmd_unit(unitSI, unitDimension), or the free-text unit a
    motes export kept in the record attribute 'motesUnit': when openPMD knew no better (unitSI 1,
    no dimension), or when unitSI and unitDimension are that text's (si_of_text: "cm")."""
    free = (rmeta.get("attributes") or {}).get("motesUnit")
    if isinstance(free, dict) and free.get("dtype") == "string" and isinstance(free.get("value"), str):
        dims = [float(v) for v in (rmeta.get("unitDimension") or [])]
        if unit_si == 1.0 and not any(dims):
            return free["value"]
        named = si_of_text(free["value"])
        if named is not None and math.isclose(named[0], unit_si, rel_tol=1e-12) and list(named[1]) == dims:
            return free["value"]
    return openpmd_unit(unit_si, rmeta["unitDimension"])


def columns_of(where: str, records_meta: Dict[str, Any], comps: Dict[Tuple[str, str], Component],
               count: int, software: Optional[str] = None, axes: Optional[Sequence[str]] = None) -> List[Column]:
    """The columns of a species of ``count`` particles from its records (``records_meta``:
    scalar, unitDimension, attributes and components per record, as kept in
    ``species.attributes["openpmd"]``; ``comps``: the components by (record, component)).
    The position components go on the motes axes x, y, z by :func:`position_axes`
    (``software``: the series' attribute; ``axes``: the user's choice). Notes in
    ``records_meta`` which column each component became ("column", "rawColumn") and, in
    the position record, the axes and their rule ("axes", "axesRule")."""
    if "position" not in records_meta:
        raise FormatError(f"{where}: has no 'position' record (required by openPMD; motes needs positions)")
    pos = records_meta["position"]
    if pos["scalar"]:
        raise FormatError(f"{where}, record 'position': is a scalar record; positions have components "
                          "(x, y, z, or the code's)")
    on_axis, rule = position_axes(where, list(pos["components"]), software, axes)
    pos["axes"], pos["axesRule"] = dict(on_axis), rule
    off = records_meta.get("positionOffset")
    if off is not None and (off["scalar"] or not set(off["components"]) <= set(pos["components"])):
        raise FormatError(f"{where}, record 'positionOffset': components {sorted(off['components'])} are not "
                          f"among the position's ({', '.join(sorted(pos['components']))})")

    columns: List[Column] = []
    raw_columns: List[Column] = []
    offset_columns: List[Column] = []
    for a in AXES:
        pc = on_axis.get(a)  # the position component on axis a
        if pc is None:
            columns.append(Column(a, np.dtype(np.float64), "", "fill", axis=a, fill=0.0))
            continue
        p = comps[("position", pc)]
        pdt = column_dtype(record_at(where, "position", pc), a, p.dtype) if p.constant is None else canon(p.dtype)
        pos_unit = unit_text(pos, p.unit_si)
        o = comps.get(("positionOffset", pc))
        zero_offset = o is None or (o.constant is not None and float(o.constant) == 0.0)
        dtype = pdt if zero_offset and pdt.kind == "f" else np.dtype(np.float64)
        ratio = 1.0 if o is None else o.unit_si / p.unit_si
        columns.append(Column(a, dtype, pos_unit, "axis", comp=p, axis=a,
                              offset=None if zero_offset else o, ratio=ratio))
        if not zero_offset:
            # x = position + offset rounds; the raw position keeps the round trip exact
            raw_columns.append(Column(f"position_{pc}", pdt, pos_unit, "data", comp=p))
            pos["components"][pc]["rawColumn"] = f"position_{pc}"
        if o is not None and o.constant is None:
            col = f"positionOffset_{pc}"
            offset_columns.append(Column(col, column_dtype(record_at(where, "positionOffset", pc), col, o.dtype),
                                         unit_text(off, o.unit_si), "data", comp=o))
            off["components"][pc]["column"] = col
    columns += raw_columns + offset_columns
    # a missing axis (1-D or 2-D data) takes the dtype and unit of the present ones
    first = next(c for c in columns if c.kind == "axis")
    for c in columns:
        if c.kind == "fill" and c.name in AXES:
            c.dtype, c.unit = first.dtype, first.unit

    for (rname, cname), comp in comps.items():
        if rname in ("position", "positionOffset") or not holds_data(comp, count):
            continue
        col = rname if records_meta[rname]["scalar"] else f"{rname}_{cname}"
        records_meta[rname]["components"][cname]["column"] = col
        dtype = column_dtype(record_at(where, rname, cname), col, comp.dtype)
        columns.append(Column(col, dtype, unit_text(records_meta[rname], comp.unit_si), "data", comp=comp))
    seen: Dict[str, str] = {}
    for c in columns:
        src = f"{c.comp.record}/{c.comp.comp}" if c.comp is not None else "position"
        if c.name in seen:
            raise UsageError(f"{where}: records '{seen[c.name]}' and '{src}' both map to column '{c.name}'")
        seen[c.name] = src
    for a, pc in on_axis.items():
        pos["components"][pc]["column"] = a
    return columns


def assemble(columns: Sequence[Column], n: int, loaded: Dict[Tuple[str, str], np.ndarray]) -> Dict[str, np.ndarray]:
    """The ``n`` rows of every column from the loaded component values (constants and
    missing axes are filled; x = position + positionOffset * ratio in float64)."""

    def values(comp: Component) -> np.ndarray:
        if comp.constant is not None:
            return np.full(n, comp.constant, dtype=comp.dtype)
        return loaded[(comp.record, comp.comp)]

    out: Dict[str, np.ndarray] = {}
    for c in columns:
        if c.kind == "fill":
            out[c.name] = np.full(n, c.fill, dtype=c.dtype)
        elif c.kind == "axis":
            p = values(c.comp)
            if c.offset is None:
                out[c.name] = np.asarray(p, dtype=c.dtype)
            else:
                o = values(c.offset).astype(np.float64)
                out[c.name] = p.astype(np.float64) + (o if c.ratio == 1.0 else o * c.ratio)
        else:
            v = values(c.comp)
            out[c.name] = v.view(np.uint8) if v.dtype == np.bool_ else np.asarray(v, dtype=c.dtype)
    return out


# ---------------------------------------------------------------------------------------------
# writing: columns -> record components
# ---------------------------------------------------------------------------------------------

@dataclass
class Out:
    """One record component to write."""
    record: str
    comp: str                                   # "" = scalar record
    dtype: np.dtype
    unit_si: float
    column: Optional[str] = None                # data from this column
    constant: Any = None                        # or this constant (a numpy scalar)
    axis: str = ""                              # position: x - offset * ratio
    offset_column: Optional[str] = None
    offset_value: float = 0.0
    ratio: float = 1.0
    raw: bool = False                           # position: the column holds the raw position
    attributes: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Rec:
    """One record to write."""
    scalar: bool
    unit_dimension: List[float]
    time_offset: Any = None                     # typed entry or None (openpmd-api's default 0.0f)
    attributes: Dict[str, Any] = field(default_factory=dict)
    comps: Dict[str, Out] = field(default_factory=dict)


def unit_of(units: Dict[str, str], column: str, meta_si: Optional[float], meta_dim: Optional[List[float]],
            default_dim: List[float]) -> Tuple[float, List[float], Optional[str]]:
    """(unitSI, unitDimension, free-text unit or None) for a column: from its openPMD unit
    text, else from the record's metadata, else unitSI 1 and ``default_dim``."""
    text = units.get(column, "") or ""
    parsed = parse_openpmd_unit(text)
    if parsed is not None:
        return parsed[0], parsed[1], None
    named = si_of_text(text)  # "cm": unitSI 0.01, a length; the text kept beside it
    if named is not None:
        return named[0], list(named[1]), text
    si = 1.0 if meta_si is None else float(meta_si)
    dim = list(default_dim if meta_dim is None else meta_dim)
    return si, dim, (text if text.strip() else None)


def _plan_positions(mrecs: Dict[str, Any], dtypes: Dict[str, np.dtype], units: Dict[str, str],
                    consumed: set) -> Tuple[Rec, Rec, Dict[str, str]]:
    """plan_species' first phase: the ``position`` and ``positionOffset`` records, and the
    position components written with the motes axis each holds; adds the columns they take
    (raw positions, offsets) to ``consumed``."""
    pmeta = mrecs.get("position") or {}
    pcomps = pmeta.get("components") or {}
    # the position components written, each with the motes axis it was read onto (the
    # component's "column"; x, y, z for a motes dataset of no openPMD origin)
    read_onto = {c: m.get("column") if m.get("column") in AXES else c for c, m in pcomps.items()}
    axes = {c: a for c, a in read_onto.items() if a in AXES} or {a: a for a in AXES}
    ometa = mrecs.get("positionOffset") or {}
    ocomps = ometa.get("components") or {}
    pos = Rec(False, list(pmeta.get("unitDimension") or LENGTH), pmeta.get("timeOffset"),
              dict(pmeta.get("attributes") or {}))
    offr = Rec(False, list(ometa.get("unitDimension") or LENGTH), ometa.get("timeOffset"),
               dict(ometa.get("attributes") or {}))
    for c, a in axes.items():
        pm = pcomps.get(c) or {}
        si, dim, free = unit_of(units, a, pm.get("unitSI"), pmeta.get("unitDimension"), LENGTH)
        pos.unit_dimension = dim
        if free:
            pos.attributes.setdefault("motesUnit", free)
        raw_col = f"position_{c}"
        raw = raw_col in dtypes
        dtype = np.dtype(pm["dtype"]) if "dtype" in pm else dtypes[raw_col if raw else a]
        out = Out("position", c, dtype, si, axis=a, attributes=dict(pm.get("attributes") or {}))
        if "constant" in pm:
            out.constant = scalar_of(pm["dtype"], pm["constant"])
        elif raw:
            out.column, out.raw = raw_col, True
        else:
            out.column = a
        if raw:
            consumed.add(raw_col)
        om = ocomps.get(c) or {}
        ocol = f"positionOffset_{c}"
        if ocol in dtypes:
            osi, odim, _ = unit_of(units, ocol, om.get("unitSI"), ometa.get("unitDimension"), LENGTH)
            offr.unit_dimension = odim
            offr.comps[c] = Out("positionOffset", c, dtypes[ocol], osi, column=ocol,
                                attributes=dict(om.get("attributes") or {}))
            out.offset_column, out.ratio = ocol, osi / si
            consumed.add(ocol)
        elif "constant" in om:
            osi = float(om.get("unitSI", 1.0))
            value = scalar_of(om["dtype"], om["constant"])
            offr.comps[c] = Out("positionOffset", c, np.dtype(om["dtype"]), osi, constant=value,
                                attributes=dict(om.get("attributes") or {}))
            out.offset_value, out.ratio = float(value), osi / si
        else:
            zero_dtype = dtype if dtype.kind in "fiu" else np.dtype(np.float64)
            offr.comps[c] = Out("positionOffset", c, zero_dtype, si, constant=zero_dtype.type(0))
        pos.comps[c] = out
    return pos, offr, axes


def plan_species(where: str, sp: Species) -> Tuple[Dict[str, Rec], Dict[str, str]]:
    """The records to write for a species, and the position components written with the
    motes axis each holds (component -> axis: ``{"t": "z"}`` for ImpactX's)."""
    meta = sp.attributes.get("openpmd") if isinstance(sp.attributes.get("openpmd"), dict) else {}
    mrecs: Dict[str, Any] = meta.get("records") or {}
    dtypes = {n: np.dtype(d) for n, d in sp.columns}
    units = sp.units or {}
    for a in AXES:
        if a not in dtypes:
            raise UsageError(f"{where}: has no column '{a}' (openPMD export needs x, y, z)")
    consumed = set(AXES)
    records: Dict[str, Rec] = {}

    # position and positionOffset
    records["position"], records["positionOffset"], axes = _plan_positions(mrecs, dtypes, units, consumed)

    # records described by the openPMD metadata of the species
    for rname, rm in mrecs.items():
        if rname in ("position", "positionOffset"):
            continue
        rec = Rec(bool(rm.get("scalar")), list(rm.get("unitDimension") or DIMENSIONLESS), rm.get("timeOffset"),
                  dict(rm.get("attributes") or {}))
        for cname, cm in (rm.get("components") or {}).items():
            col = cm.get("column")
            has_column = col in dtypes and col not in consumed
            if "constant" in cm and not (has_column and sp.count > 0):
                if has_column:  # an empty column read from a constant of shape [0] (see holds_data)
                    consumed.add(col)
                rec.comps[cname] = Out(rname, cname, np.dtype(cm["dtype"]), float(cm.get("unitSI", 1.0)),
                                       constant=scalar_of(cm["dtype"], cm["constant"]),
                                       attributes=dict(cm.get("attributes") or {}))
                continue
            if not has_column:
                continue   # the column was dropped on the way: so is the component
            si, dim, free = unit_of(units, col, cm.get("unitSI"), rm.get("unitDimension"), DIMENSIONLESS)
            rec.unit_dimension = dim
            if free:
                rec.attributes.setdefault("motesUnit", free)
            rec.comps[cname] = Out(rname, cname, dtypes[col], si, column=col,
                                   attributes=dict(cm.get("attributes") or {}))
            consumed.add(col)
        if rec.comps:
            records[rname] = rec

    # the other columns: <record>_<component> -> vector records, the rest -> scalar records
    rest = [n for n, _ in sp.columns if n not in consumed]
    prefixes: Dict[str, List[str]] = {}
    for n in rest:
        if "_" in n.strip("_"):
            pre, suf = n.rsplit("_", 1)
            if pre and suf:
                prefixes.setdefault(pre, []).append(n)
    groups: Dict[str, List[str]] = {}
    for pre, cols in prefixes.items():
        if pre in records or pre in RESERVED_RECORDS or pre in rest:
            continue
        if len(cols) >= 2 or cols[0].rsplit("_", 1)[1] in AXES:
            dims = {tuple(unit_of(units, c, None, None, DIMENSIONLESS)[1]) for c in cols}
            if len(dims) == 1:
                groups[pre] = cols
    grouped = {c for cols in groups.values() for c in cols}
    for n in rest:
        if n in grouped:
            continue
        if n in RESERVED_RECORDS or n in records:
            raise UsageError(f"{where}: column '{n}' clashes with the openPMD record '{n}'")
        si, dim, free = unit_of(units, n, None, None, DIMENSIONLESS)
        rec = Rec(True, dim, attributes={"motesUnit": free} if free else {})
        rec.comps[""] = Out(n, "", dtypes[n], si, column=n)
        records[n] = rec
    for pre, cols in groups.items():
        if pre in records:
            raise UsageError(f"{where}: columns {cols} map to record '{pre}', which already exists")
        rec = Rec(False, DIMENSIONLESS)
        for c in cols:
            si, dim, free = unit_of(units, c, None, None, DIMENSIONLESS)
            rec.unit_dimension = dim
            if free:
                rec.attributes.setdefault("motesUnit", free)
            rec.comps[c.rsplit("_", 1)[1]] = Out(pre, c.rsplit("_", 1)[1], dtypes[c], si, column=c)
        records[pre] = rec
    for rec in records.values():
        for o in rec.comps.values():
            if o.column is not None and o.axis == "":
                o.dtype = column_dtype(f"{where}, record '{o.record}'", o.column, o.dtype)
    return records, axes


def stored_values(o: Out, chunk: Dict[str, np.ndarray]) -> np.ndarray:
    """The values written for a data component from a chunk of columns: the column in the
    component's dtype; for a position, ``x - offset * ratio`` in float64 first."""
    v = np.asarray(chunk[o.column])
    if o.axis and not o.raw:
        if o.offset_column:
            v = v.astype(np.float64) - np.asarray(chunk[o.offset_column], dtype=np.float64) * o.ratio
        elif o.offset_value != 0.0:
            v = v.astype(np.float64) - o.offset_value * o.ratio
        return np.ascontiguousarray(v, dtype=o.dtype)
    return np.ascontiguousarray(v.view(np.uint8) if v.dtype == np.bool_ else v, dtype=o.dtype)
