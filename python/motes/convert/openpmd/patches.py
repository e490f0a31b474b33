"""openPMD particlePatches: read with a species (kept in its attributes, never turned into
columns) and written with it. What is written is planned before the rows stream by
(:func:`plan`): the species' ``motes_patches`` (one per spatial block of a motes source),
else the patches it was read with when they still cover its rows, else one patch of all
rows; boxes that must come from the data are grown chunk by chunk (:class:`Boxes`)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...errors import FormatError, UsageError
from ..base import Species
from .api import unit_dimension_map, why
from .mapping import AXES, LENGTH


class Boxes:
    """Bounding boxes of row ranges [first, first + n), grown chunk by chunk while writing."""

    def __init__(self, first: Sequence[int], num: Sequence[int]):
        self.first = np.asarray(first, dtype=np.int64)
        self.end = self.first + np.asarray(num, dtype=np.int64)
        self.lo = np.full((len(self.first), 3), np.inf)
        self.hi = np.full((len(self.first), 3), -np.inf)

    def add(self, start: int, xyz: Sequence[np.ndarray]) -> None:
        n = len(xyz[0])
        for k in np.nonzero((self.first < start + n) & (self.end > start))[0]:
            a, b = max(int(self.first[k]), start) - start, min(int(self.end[k]), start + n) - start
            for i, v in enumerate(xyz):
                part = v[a:b]
                if part.dtype.kind == "f" and np.isnan(part).any():
                    part = part[~np.isnan(part)]
                if part.size:
                    self.lo[k, i] = min(self.lo[k, i], float(part.min()))
                    self.hi[k, i] = max(self.hi[k, i], float(part.max()))

    def boxes(self) -> Tuple[np.ndarray, np.ndarray]:
        empty = ~np.isfinite(self.lo) | ~np.isfinite(self.hi)
        lo = np.where(empty, 0.0, self.lo)
        return lo, np.where(empty, 0.0, self.hi - lo)


def plan(where: str, sp: Species, axes: Dict[str, str], pos_si: Dict[str, float]) -> Dict[str, Any]:
    """The particlePatches to write, decided before the rows stream by:

    * the species' ``motes_patches`` (offset/extent in the x, y, z column units): written as given;
    * else the particlePatches read from openPMD, when they still cover exactly the species'
      rows: written back as read (dtypes, unitSI), or, when openpmd-api could not read all
      their offset/extent components, the same row ranges with boxes computed from the data;
    * else one patch holding all rows, its box computed from the data.
    The plan has "boxes" (a Boxes to fill while writing) where boxes are computed. ``axes``:
    the position components written, each with the motes axis (x, y, z) that holds it;
    ``pos_si``: their unitSI; the patches' offset and extent have the same components."""
    count = int(sp.count)
    mp = sp.attributes.get("motes_patches")
    computed = {"npdtype": "uint64", "npodtype": "uint64", "unitDimension": LENGTH, "axes": axes, "pos_si": pos_si}
    if mp:
        if not isinstance(mp, (list, tuple)):
            raise UsageError(f"{where}: motes_patches must be a list of patch dicts, got {type(mp).__name__}")
        num, first, off, ext = [], [], {a: [] for a in axes}, {a: [] for a in axes}
        for i, p in enumerate(mp):
            try:
                n, k = int(p["numParticles"]), int(p["numParticlesOffset"])
                o, e = [float(v) for v in p["offset"]], [float(v) for v in p["extent"]]
            except (KeyError, TypeError, ValueError) as ex:
                raise UsageError(f"{where}: motes_patches[{i}] is not a patch dict "
                                 f"(numParticles, numParticlesOffset, offset, extent): {ex}") from None
            if n < 0 or k < 0 or k + n > count or len(o) != 3 or len(e) != 3:
                raise UsageError(f"{where}: motes_patches[{i}] = {p} does not fit {count} particles in 3-D")
            num.append(n)
            first.append(k)
            for a in axes:
                off[a].append(o[AXES.index(axes[a])])
                ext[a].append(e[AXES.index(axes[a])])
        if sum(num) != count:
            raise UsageError(f"{where}: motes_patches hold {sum(num)} particles, the species {count}")
        return dict(computed, numParticles=num, numParticlesOffset=first,
                    offset={a: {"values": off[a], "unitSI": pos_si[a], "dtype": "float64"} for a in axes},
                    extent={a: {"values": ext[a], "unitSI": pos_si[a], "dtype": "float64"} for a in axes})
    meta = sp.attributes.get("openpmd") if isinstance(sp.attributes.get("openpmd"), dict) else {}
    rp = meta.get("patches")
    if rp:
        try:
            num = [int(v) for v in rp["numParticles"]["values"]]
            first = [int(v) for v in rp["numParticlesOffset"]["values"]]
            ranges_ok = (len(num) == len(first) and sum(num) == count
                         and all(0 <= k and 0 <= n and k + n <= count for n, k in zip(num, first)))
            complete = (set(rp["offset"]["components"]) == set(axes) == set(rp["extent"]["components"])
                        and all(len(c["values"]) == len(num) for r in ("offset", "extent")
                                for c in rp[r]["components"].values()))
        except (KeyError, TypeError, ValueError, AttributeError):
            ranges_ok = complete = False
        if ranges_ok and complete:
            return {"numParticles": num, "numParticlesOffset": first,
                    "npdtype": rp["numParticles"].get("dtype", "uint64"),
                    "npodtype": rp["numParticlesOffset"].get("dtype", "uint64"),
                    "offset": rp["offset"]["components"], "extent": rp["extent"]["components"],
                    "unitDimension": rp["offset"].get("unitDimension") or LENGTH,
                    "extentUnitDimension": rp["extent"].get("unitDimension") or LENGTH}
        if ranges_ok:
            return dict(computed, numParticles=num, numParticlesOffset=first, boxes=Boxes(first, num))
    return dict(computed, numParticles=[count], numParticlesOffset=[0], boxes=Boxes([0], [count]))


def finish(plan: Dict[str, Any]) -> Dict[str, Any]:
    """The plan with the offset/extent of the boxes computed while writing filled in."""
    boxes = plan.get("boxes")
    if boxes is None:
        return plan
    lo, ext = boxes.boxes()
    axes, pos_si = plan["axes"], plan["pos_si"]
    out = dict(plan)
    out["offset"] = {a: {"values": lo[:, AXES.index(axes[a])].tolist(), "unitSI": pos_si[a], "dtype": "float64"}
                     for a in axes}
    out["extent"] = {a: {"values": ext[:, AXES.index(axes[a])].tolist(), "unitSI": pos_si[a], "dtype": "float64"}
                     for a in axes}
    return out


def write(io, series, out_sp, where: str, plist: Dict[str, Any], pos_dim: List[float]) -> None:
    """Writes the particlePatches of a finished plan into the openpmd-api species ``out_sp``."""
    scalar_key = io.Record_Component.SCALAR
    pp = out_sp.particle_patches
    keep = []
    k = len(plist["numParticles"])
    try:
        for rname, dkey in (("numParticles", "npdtype"), ("numParticlesOffset", "npodtype")):
            arr = np.asarray(plist[rname], dtype=np.dtype(plist[dkey]))
            rc = pp[rname][scalar_key]
            rc.reset_dataset(io.Dataset(arr.dtype, [k]))
            if k:
                rc.store_chunk(arr, [0], [k])
            keep.append(arr)
        for rname in ("offset", "extent"):
            rec = pp[rname]
            dim = plist.get("extentUnitDimension" if rname == "extent" else "unitDimension") or pos_dim
            for cname, cm in plist[rname].items():
                arr = np.asarray(cm["values"], dtype=np.dtype(cm.get("dtype", "float64")))
                rc = rec[cname]
                rc.reset_dataset(io.Dataset(arr.dtype, [k]))
                rc.unit_SI = float(cm.get("unitSI", 1.0))
                if k:
                    rc.store_chunk(arr, [0], [k])
                keep.append(arr)
            rec.unit_dimension = unit_dimension_map(io, dim)
        series.flush()
    except UsageError:
        raise
    except Exception as e:
        raise UsageError(f"{where}: cannot write particlePatches ({why(e)})") from None


def read(io, series, sp, where: str) -> Optional[Dict[str, Any]]:
    """The particlePatches of an openpmd-api species as plain values (None without them)."""
    pp = sp.particle_patches
    names = list(pp)
    if not names:
        return None
    need = {"numParticles", "numParticlesOffset", "offset", "extent"}
    if not need <= set(names):
        return None
    scalar_key = io.Record_Component.SCALAR
    loaded: Dict[str, Any] = {}
    out: Dict[str, Any] = {}
    try:
        for rname in ("numParticles", "numParticlesOffset"):
            rc = pp[rname][scalar_key]
            loaded[rname] = (rc, rc.load())
        for rname in ("offset", "extent"):
            rec = pp[rname]
            out[rname] = {"unitDimension": [float(v) for v in rec.unit_dimension], "components": {}}
            for cname, rc in rec.items():
                loaded[(rname, cname)] = (rc, rc.load())
        series.flush()
    except Exception as e:
        raise FormatError(f"{where}: cannot read particlePatches ({why(e)})") from None
    for rname in ("numParticles", "numParticlesOffset"):
        rc, arr = loaded[rname]
        out[rname] = {"values": np.asarray(arr).tolist(), "dtype": np.dtype(rc.dtype).name}
    for rname in ("offset", "extent"):
        for cname in list(pp[rname]):
            rc, arr = loaded[(rname, cname)]
            out[rname]["components"][cname] = {"values": np.asarray(arr, dtype=np.float64).tolist(),
                                               "dtype": np.dtype(rc.dtype).name, "unitSI": float(rc.unit_SI)}
    return out
