"""Units for people: the unit text a column stores, read as structured metadata and shown
as a human unit.

A column's unit is text. Two kinds occur:

* free text a user or a code gave (``"keV"``, ``"c"``, ``"d_i"``): shown as it is;
* openPMD units, which conversions store as the JSON text
  ``{"unitSI": 1e-06, "unitDimension": [1, 0, 0, 0, 0, 0, 0]}`` (powers of length, mass,
  time, current, temperature, amount, luminous intensity): the stored numbers times
  ``unitSI`` are in SI units of that dimension. Shown as an SI unit, ``"µm"`` here, or
  ``"kg m s^-1"`` for a momentum, ``"J"`` for an energy.

>>> from motes import units
>>> units.label('{"unitSI": 1.0, "unitDimension": [1, 1, -1, 0, 0, 0, 0]}')
'kg m s^-1'
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Optional, Tuple

__all__ = ["Unit", "parse", "label", "si_of_text"]

# SI base units in openPMD's order of unitDimension, and the order they are written in.
_BASE = ("m", "kg", "s", "A", "K", "mol", "cd")
_WRITE_ORDER = (1, 0, 2, 3, 4, 5, 6)  # kg m s A K mol cd, as in "kg m s^-1"
# Named SI units of common dimensions (L, M, T, I, theta, N, J).
_NAMED = {
    (1, 1, -2, 0, 0, 0, 0): "N",
    (2, 1, -2, 0, 0, 0, 0): "J",
    (2, 1, -3, 0, 0, 0, 0): "W",
    (0, 0, 1, 1, 0, 0, 0): "C",
    (2, 1, -3, -1, 0, 0, 0): "V",
    (1, 1, -3, -1, 0, 0, 0): "V m^-1",
    (0, 1, -2, -1, 0, 0, 0): "T",
    (-1, 1, -2, 0, 0, 0, 0): "Pa",
    (-2, 0, 0, 1, 0, 0, 0): "A m^-2",
    (-3, 0, 1, 1, 0, 0, 0): "C m^-3",
}
_PREFIXES = {1e-15: "f", 1e-12: "p", 1e-9: "n", 1e-6: "µ", 1e-3: "m", 1e-2: "c", 1e3: "k", 1e6: "M", 1e9: "G"}


@dataclass(frozen=True)
class Unit:
    """A column's unit: the stored text, and for openPMD units their SI factor and dimension."""

    text: str
    unit_si: Optional[float] = None
    dimension: Optional[Tuple[float, ...]] = None  # powers of L, M, T, I, theta, N, J

    @property
    def label(self) -> str:
        """The unit as a person writes it ("" when there is none)."""
        if self.dimension is None:
            return self.text
        return _si_label(self.unit_si if self.unit_si is not None else 1.0, self.dimension)


def parse(text: Optional[str]) -> Unit:
    """The structure of a stored unit text (free text stays text)."""
    text = text or ""
    if text.lstrip().startswith("{"):
        try:
            d = json.loads(text)
            si = float(d["unitSI"])
            dims = tuple(float(v) for v in d["unitDimension"])
            if len(dims) == 7 and math.isfinite(si):
                return Unit(text, si, dims)
        except (ValueError, KeyError, TypeError):
            pass
    return Unit(text)


def si_of_text(text: Optional[str]) -> Optional[Tuple[float, Tuple[float, ...]]]:
    """(unitSI, unitDimension) of a free-text unit that names an SI quantity ("cm", "km",
    "keV", "g/cm**3", "c"), parsed by unyt; None for text unyt does not know ("d_i", "Mpc/h":
    what h is the data says, not the text), for CGS electromagnetic units (their dimensions are
    not SI's), angles, counts and anything else openPMD's seven base dimensions cannot hold,
    and when unyt is not installed."""
    text = (text or "").strip()
    if not text or text.startswith("{"):
        return None
    try:
        import unyt
        from unyt import dimensions as d
    except ImportError:
        return None
    try:
        unit = unyt.Unit(text)
        powers = unit.dimensions.as_powers_dict()
        si = float(unit.base_value)
    except Exception:  # noqa: BLE001 (unyt raises several kinds for text it cannot read)
        return None
    order = (d.length, d.mass, d.time, d.current_mks, d.temperature, None, d.luminous_intensity)
    if any(k not in order for k in powers) or not math.isfinite(si) or si <= 0:
        return None
    dims = []
    for base in order:
        p = powers.get(base, 0) if base is not None else 0
        if not float(p).is_integer():
            return None
        dims.append(float(p))
    return si, tuple(dims)


def label(text: Optional[str]) -> str:
    """The human unit of a stored unit text."""
    return parse(text).label


def _power(p: float) -> str:
    return str(int(p)) if float(p).is_integer() else f"{p:g}"


def _si_label(unit_si: float, dims: Tuple[float, ...]) -> str:
    key = tuple(int(d) if float(d).is_integer() else d for d in dims)
    symbol = _NAMED.get(key)
    if symbol is None:
        parts = []
        for i in _WRITE_ORDER:
            p = dims[i]
            if p:
                parts.append(_BASE[i] if p == 1 else f"{_BASE[i]}^{_power(p)}")
        symbol = " ".join(parts)
    if unit_si == 1.0:
        return symbol
    single = symbol and " " not in symbol and "^" not in symbol and symbol != "kg"
    for factor, prefix in _PREFIXES.items():
        if single and math.isclose(unit_si, factor, rel_tol=1e-12):
            return prefix + symbol
    scale = f"{unit_si:g}"
    return f"{scale} {symbol}" if symbol else scale
