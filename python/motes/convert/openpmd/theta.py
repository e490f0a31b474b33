"""thetaMode meshes (FBPIC, WarpX RZ: azimuthal modes on an (r, z) grid) and motes thetaMode
fields, both ways (docs/convert-openpmd.md, "thetaMode meshes"); :mod:`.meshes` hands them here.

Reading: a component's dataset is ``(2m - 1, N_a, N_b)``, its axes after the first named by
``axisLabels`` (``(r, z)`` or ``(z, r)``, ``dataOrder`` "C"); the field keeps the modes as
they are, transposed to ``(2m - 1, Nr, Nz)`` when the labels are ``(z, r)`` (a permutation:
no value changes). Its grid's axes are z then r (origin, spacing in that order), placed by
``gridGlobalOffset``, ``gridSpacing`` and ``position`` as a Cartesian mesh's are; ``imag``
comes from ``geometryParameters`` (``"m=2;imag=+"``; "+" when absent), which is kept with the
rest of the mesh's description so that writing gives the same record back.

Writing is the inverse: the stored layout when it still gives the field's grid exactly, else
axisLabels (r, z) in "C" order, position 0 (node) or 0.5 (cell) on both axes, and
``geometryParameters`` as stored when its imag is the field's, else ``m=<modes>;imag=<imag>``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ...fields.model import Field
from ...errors import FormatError

LABELS = ("r", "z")


def problem(mesh) -> str:
    """Why a thetaMode mesh cannot be a motes field ("" if it can)."""
    labels = list(mesh.axis_labels)
    if sorted(labels) != sorted(LABELS):
        return f"a thetaMode mesh's axisLabels must be r and z, got {labels}"
    if mesh.data_order != "C":
        return f"thetaMode meshes in dataOrder {mesh.data_order!r} are not supported (only 'C')"
    return ""


def parameters(text: Optional[str]) -> Dict[str, str]:
    """``geometryParameters`` ("m=2;imag=+") as a dict (empty for None)."""
    out: Dict[str, str] = {}
    for item in (text or "").split(";"):
        key, sep, value = item.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def imag_of(where: str, text: Optional[str]) -> str:
    imag = parameters(text).get("imag", "+")
    if imag not in ("+", "-"):
        raise FormatError(f"{where}: geometryParameters {text!r}: imag must be '+' or '-'")
    return imag


def check(where: str, mesh) -> None:
    """FormatError for attributes that do not fit the datasets' dims ((2m - 1, Na, Nb))."""
    shapes = {c.shape for c in mesh.comps}
    for c in mesh.comps:
        if len(c.shape) != 3 or c.shape[0] % 2 != 1:
            raise FormatError(f"{where}{f', component {c.comp!r}' if c.comp else ''}: a thetaMode dataset is "
                              f"(2m - 1, N, N) (modes, then the two axes), got shape {list(c.shape)}")
        if len(c.position) != 2:
            raise FormatError(f"{where}{f', component {c.comp!r}' if c.comp else ''}: position has "
                              f"{len(c.position)} values ({list(c.position)}), a thetaMode mesh 2 (r and z)")
    if len({s[0] for s in shapes}) != 1:
        raise FormatError(f"{where}: components hold different numbers of modes ({sorted({s[0] for s in shapes})})")
    for label, values in (("gridSpacing", mesh.grid_spacing), ("gridGlobalOffset", mesh.grid_global_offset)):
        if len(values) != 2:
            raise FormatError(f"{where}: {label} has {len(values)} values ({list(values)}), a thetaMode mesh 2")
    if not all(np.isfinite(v) for v in [*mesh.grid_spacing, *mesh.grid_global_offset, mesh.grid_unit_si]):
        raise FormatError(f"{where}: gridSpacing, gridGlobalOffset and gridUnitSI must be finite")


def plan(where: str, mesh, make_plans) -> List[Any]:
    """The field plans of a thetaMode mesh: ``make_plans(perm, where_axes, extra)`` of
    :mod:`.meshes` with the permutation of a dataset's dims to (modes, r, z), the axis (of
    axisLabels) of z and of r, and the thetaMode keywords of the fields."""
    check(where, mesh)
    labels = list(mesh.axis_labels)
    ir, iz = labels.index("r"), labels.index("z")
    perm = (0, 1 + ir, 1 + iz)   # dataset (modes, a, b) -> (modes, r, z)
    extra = {"geometry": "thetaMode", "imag": imag_of(where, mesh.geometry_parameters)}
    return make_plans(perm, [iz, ir], extra)


def shape_of(comp_shape: Sequence[int], perm: Sequence[int]) -> tuple:
    return tuple(int(comp_shape[d]) for d in perm)


# ---- writing ---------------------------------------------------------------------------------
def layout(fld: Field, meta: Dict[str, Any], comp_names: Sequence[str], geometry) -> Dict[str, Any]:
    """Axis labels, order, spacing, offset and positions that give ``fld``'s (z, r) grid: the
    stored ones when they still do, exactly, else (r, z) in C order."""
    labels = meta.get("axisLabels")
    want = {"origin": tuple(fld.origin), "spacing": tuple(fld.spacing), "centering": fld.centering}
    if isinstance(labels, list) and sorted(labels) == sorted(LABELS) and meta.get("dataOrder") == "C":
        comps = meta.get("components") or {}
        try:
            where_axes = [labels.index("z"), labels.index("r")]
            positions = {c: list(comps[c]["position"]) for c in comp_names}
            fits = all(len(p) == 2 and geometry(2, where_axes, meta["gridSpacing"], meta["gridGlobalOffset"], p) == want
                       for p in positions.values()) and len(meta["gridSpacing"]) == len(meta["gridGlobalOffset"]) == 2
        except (KeyError, TypeError, ValueError):
            fits = False
        if fits:
            return {"order": "C", "labels": list(labels), "spacing": list(meta["gridSpacing"]),
                    "offset": list(meta["gridGlobalOffset"]), "positions": positions}
    p = 0.5 if fld.centering == "cell" else 0.0
    return {"order": "C", "labels": list(LABELS), "spacing": [fld.spacing[1], fld.spacing[0]],
            "offset": [fld.origin[1], fld.origin[0]], "positions": {c: [p, p] for c in comp_names}}


def file_values(a: np.ndarray, lay: Dict[str, Any]) -> np.ndarray:
    """A component's (modes, r, z) array in the dataset's dims."""
    return np.ascontiguousarray(a if lay["labels"] == list(LABELS) else np.transpose(a, (0, 2, 1)))


def geometry_parameters(fld: Field, meta: Dict[str, Any]) -> str:
    """The stored geometryParameters when its imag is the field's, else m=<modes>;imag=<imag>."""
    stored = meta.get("geometryParameters")
    if isinstance(stored, str) and parameters(stored).get("imag", "+") == fld.imag:
        return stored
    return f"m={fld.modes};imag={fld.imag}"
