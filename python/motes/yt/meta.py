"""What yt is told about a step beyond its particles: the unit of each column, the length unit
and the domain (periodic or not), the cosmology, and a particle mass that is one value for a
whole species.

Everything comes from the dataset itself: the unit text of each column (free text such as
``"cm"`` or ``"Mpccm/h"``, or the openPMD units ``motes convert`` keeps, see
:mod:`motes.units`) and the step's attributes, read under the names real codes give them
(:data:`NAMES`), as yt's own N-body frontends read their headers.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .. import units
from ..errors import UsageError

#: The step attributes read, by meaning, each under the names codes give it (the first
#: present wins): pysco's parameters (``boxlen``, its box side in comoving Mpc/h; ``H0`` in
#: km/s/Mpc; ``Om_m``, ``Om_lambda``, ``aexp``; ``mpart``, its particle mass in kg), Gadget's
#: and SWIFT's header names (``BoxSize``, in the positions' unit, ``HubbleParam``, ``Omega0``,
#: ``Scale-factor``...) and yt's own (``hubble_constant``, ``omega_matter``...).
NAMES: Dict[str, Tuple[str, ...]] = {
    "redshift": ("redshift", "Redshift", "current_redshift"),
    "scale_factor": ("aexp", "scale_factor", "Scale-factor"),
    "H0": ("H0",),
    "h": ("hubble_constant", "HubbleParam", "h"),
    "omega_matter": ("Om_m", "Omega_m", "Omega0", "omega_matter"),
    "omega_lambda": ("Om_lambda", "Omega_lambda", "OmegaLambda", "omega_lambda"),
    "boxlen": ("boxlen",),
    "box_size": ("box_size", "BoxSize"),
    "mass": ("mpart",),
}

_SI = ("m", "kg", "s", "A", "K", "mol", "cd")  # openPMD's order of unitDimension
_LENGTH = (1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
_MASS = (0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0)
#: Room left around the particles of a domain that is not a periodic box: yt's index wants
#: them strictly inside (a fraction of the extent on each axis).
PAD = 1e-6


def number(attrs: Mapping[str, Any], meaning: str) -> Optional[float]:
    """The finite number an attribute of this meaning holds (None when absent or not a number)."""
    for name in NAMES[meaning]:
        value = attrs.get(name)
        if isinstance(value, bool) or value is None:
            continue
        try:
            v = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(v):
            return v
    return None


def yt_unit(text: Optional[str], registry=None) -> str:
    """yt's unit for a column's unit text: openPMD units as SI (``"9.1e-31*kg"``), free text
    where yt parses it (with the dataset's ``registry``: ``h``, ``a``, comoving ``Mpccm``),
    else "" (dimensionless)."""
    u = units.parse(text)
    if u.dimension is not None:
        return si_unit(u.unit_si if u.unit_si is not None else 1.0, u.dimension)
    if not u.text.strip():
        return ""
    try:
        from unyt import Unit

        Unit(u.text, registry=registry)
        return u.text
    except Exception:  # noqa: BLE001 (unyt raises several kinds for text it does not know)
        return ""


def si_unit(unit_si: float, dims: Sequence[float]) -> str:
    """``unit_si`` times the SI unit of the 7 powers ``dims``, as unyt parses it."""
    parts = []
    for base, p in zip(_SI, dims):
        if p:
            parts.append(base if p == 1 else f"{base}**{int(p) if float(p).is_integer() else p}")
    body = "*".join(parts)
    if unit_si == 1.0:
        return body
    return f"{unit_si!r}*{body}" if body else repr(unit_si)


@dataclass
class Cosmology:
    """yt's cosmological parameters (``cosmological``: the step gives a redshift and h)."""

    redshift: Optional[float] = None
    h: Optional[float] = None
    omega_matter: float = 0.0
    omega_lambda: float = 0.0

    @property
    def cosmological(self) -> bool:
        return self.redshift is not None and self.h is not None


def cosmology(attrs: Mapping[str, Any]) -> Cosmology:
    """The cosmology the step's attributes give (redshift from the scale factor if need be)."""
    z = number(attrs, "redshift")
    if z is None:
        a = number(attrs, "scale_factor")
        z = 1.0 / a - 1.0 if a is not None and a > 0 else None
    h = number(attrs, "h")
    if h is None:
        h0 = number(attrs, "H0")
        h = h0 / 100.0 if h0 is not None and h0 > 0 else None
    return Cosmology(z, h, number(attrs, "omega_matter") or 0.0, number(attrs, "omega_lambda") or 0.0)


@dataclass
class Geometry:
    """The length unit (value, unit text yt parses once it knows the cosmology), the domain
    in that unit, whether it is a periodic box, and what yt's user should be warned about."""

    length: Tuple[float, str]
    left: np.ndarray
    right: np.ndarray
    periodic: bool
    notes: List[str] = field(default_factory=list)


def position_unit(texts: Mapping[str, Sequence[str]]) -> str:
    """The one unit text of the positions (``texts``: species -> units of x, y, z)."""
    found = {t or "" for ts in texts.values() for t in ts}
    if len(found) > 1:
        listed = "; ".join(f"{sp}: {', '.join(repr(t) for t in ts)}" for sp, ts in texts.items())
        raise UsageError(f"x, y and z have different units ({listed}): yt takes one length unit for all "
                     "three; write them in one unit")
    return found.pop() if found else ""


def geometry(lo: np.ndarray, hi: np.ndarray, unit_text: str, attrs: Mapping[str, Any],
             cosmo: Cosmology) -> Geometry:
    """Where the particles lie for yt: a periodic box when the attributes give one that holds
    them, else their bounds (a little padded); and the length unit of the positions."""
    notes = []
    parsed = units.parse(unit_text)
    boxlen, box_size = number(attrs, "boxlen"), number(attrs, "box_size")
    if parsed.dimension is not None:
        if tuple(parsed.dimension) != _LENGTH:
            raise UsageError(f"the positions' openPMD unit {parsed.label!r} is not a length")
        length = (float(parsed.unit_si), "m")
    elif unit_text.strip():
        length = (1.0, unit_text)
    elif boxlen is not None and boxlen > 0 and (_inside(lo, hi, 1.0) or _inside(lo, hi, boxlen)):
        unit_box = _inside(lo, hi, 1.0)  # pysco's box units; else Mpc/h
        length, note = _mpc_h(boxlen if unit_box else 1.0, cosmo)
        side = 1.0 if unit_box else boxlen
        return Geometry(length, np.zeros(3), np.full(3, side), True, [note] if note else [])
    else:
        if boxlen is not None:
            notes.append(f"the positions (from {lo.min():g} to {hi.max():g}) lie neither in the unit box nor in "
                         f"[0, boxlen = {boxlen:g}]: the domain is their bounds, not periodic")
        length = (1.0, "cm")  # yt's own default (load_particles)
    if box_size is not None and box_size > 0:
        if _inside(lo, hi, box_size):
            return Geometry(length, np.zeros(3), np.full(3, box_size), True, notes)
        notes.append(f"the positions (from {lo.min():g} to {hi.max():g}) do not lie in [0, box_size = "
                     f"{box_size:g}]: the domain is their bounds, not periodic")
    width = hi - lo
    return Geometry(length, lo - PAD * width, hi + PAD * width, False, notes)


def _mpc_h(value: float, cosmo: Cosmology) -> Tuple[Tuple[float, str], str]:
    """``value`` comoving Mpc/h as yt's length unit, and what to warn about."""
    if cosmo.cosmological:
        return (value, "Mpccm/h"), ""
    if cosmo.h is not None:
        return (value / cosmo.h, "Mpc"), ""
    return (value, "Mpc"), "boxlen is in Mpc/h but the step gives no H0 (or hubble_constant): h = 1"


def _inside(lo: np.ndarray, hi: np.ndarray, side: float) -> bool:
    return bool(np.all(lo >= 0.0) and np.all(hi <= side))


def species_mass(attrs: Mapping[str, Any], species: str) -> Optional[float]:
    """The mass (kg) of every particle of a species that has no ``mass`` column: the constant
    openPMD ``mass`` record ``motes convert`` keeps, else the step's ``mpart`` (pysco)."""
    sp = ((attrs.get("species_attributes") or {}).get(species) or {}).get("openpmd") or {}
    record = (sp.get("records") or {}).get("mass") if isinstance(sp, dict) else None
    if isinstance(record, dict) and tuple(float(d) for d in record.get("unitDimension") or ()) == _MASS:
        comp = (record.get("components") or {}).get("") or {}
        value, si = comp.get("constant"), comp.get("unitSI", 1.0)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value) * float(si)
    return number(attrs, "mass")


def warn(notes: Sequence[str], where: str) -> None:
    for note in notes:
        warnings.warn(f"{where}: {note}", stacklevel=4)
