"""The grid fields of a step (docs/http-api.md, "Grid fields"): the list, one field's
description, and its samples in a box at a level (chosen by the client, or by a budget of
samples), sent as a frame or an Arrow stream. A level k holds every 2^k-th sample along
each axis, counted from sample 0; a read touches only the blocks that hold the box at that
level, so coarse reads are cheap (a viewer asks coarse to fine)."""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from starlette.requests import Request
from starlette.responses import Response

from ..dtypes import name_of
from .config import CACHE_STEP, Limits
from .errors import bad_request, over_limit, unprocessable
from .frames import ARROW_MEDIA_TYPE, MEDIA_TYPE, Arrays, arrow, frame
from .params import Params, integer
from .registry import GridField, Registry, finite
from .responses import etag, json_response, not_modified
from .work import Job

SAMPLES_PARAMS = ("box", "index_box", "level", "budget", "component", "dtype", "format")
AXES = "xyz"

IndexBox = Tuple[Tuple[int, ...], Tuple[int, ...]]


async def field_of(registry: Registry, request: Request, job: Job) -> GridField:
    p = request.path_params
    found = registry.cached_field(p["ds"], p["step"], p["field"])
    return found if found is not None else await job.light(registry.field, p["ds"], p["step"], p["field"])


def field_headers(f: GridField, request: Request, params: Params):
    """(ETag, Cache-Control) of an answer about one field of a step (which never changes);
    the 304 when the client has it."""
    tag = etag(f.tag, request.url.path, params.normalised())
    return {"ETag": tag, "Cache-Control": CACHE_STEP}, not_modified(request, tag, CACHE_STEP)


def lattice(lo: Sequence[int], hi: Sequence[int], level: int) -> Tuple[List[int], List[int]]:
    """(first, count) per axis: the samples of index box [lo, hi) that level ``level`` keeps
    (the multiples of 2^level)."""
    s = 1 << level
    first = [-(-a // s) * s for a in lo]
    count = [max(0, -(-(b - f) // s)) for f, b in zip(first, hi)]
    return first, count


def samples_at(lo: Sequence[int], hi: Sequence[int], level: int) -> int:
    return int(np.prod(lattice(lo, hi, level)[1], dtype=np.int64))


def level_by_budget(lo: Sequence[int], hi: Sequence[int], levels: int, budget: int) -> int:
    """The finest level whose samples in the box are at most ``budget`` (the coarsest level
    keeps one sample of the grid, so some level always fits a budget of at least 1)."""
    for k in range(levels + 1):
        if samples_at(lo, hi, k) <= budget:
            return k
    return levels


def describe(f: GridField) -> Dict[str, Any]:
    s = f.stored
    names = s.components
    ranges = s.ranges
    geometry: Dict[str, Any]
    if s.coords is None:
        geometry = {"origin": list(s.origin), "spacing": list(s.spacing)}
    else:
        geometry = {"coords": [[float(v) for v in c] for c in s.coords]}
    dims = list(s.dims)
    return {
        "dataset": f.dataset, "step": f.step, "time": finite(f.time), "field": f.name,
        "dtype": name_of(s.dtype), "ndim": s.ndim, "dims": dims, "levels": s.levels,
        "level_dims": [lattice([0] * len(dims), dims, k)[1] for k in range(s.levels + 1)],
        "components": list(names) if names else None, "centering": s.centering, "unit": s.unit,
        **geometry,
        "bounds": {"min": [float(a[0]) for a in f.axes], "max": [float(a[-1]) for a in f.axes]},
        "ranges": [{"component": names[k] if names else None, "min": finite(_float(lo)), "max": finite(_float(hi))}
                   for k, (lo, hi) in enumerate(ranges)],
        "attributes": s.attributes,
        "geometry": "cartesian" if f.theta is None else "thetaMode",
        **({} if f.theta is None else {"stored": stored_modes(f.theta)}),
    }


def stored_modes(t) -> Dict[str, Any]:
    """What a thetaMode field stores (its answers are a Cartesian resampling of it)."""
    return {"modes": t.modes, "imag": t.imag, "axes": list(t.axis_names), "dims": list(t.dims),
            "origin": list(t.origin), "spacing": list(t.spacing), "centering": t.centering,
            "components": list(t.components) if t.components else None}


def _float(v: Any) -> Optional[float]:
    return None if v is None else float(v)


def index_box_of(params: Params, f: GridField) -> IndexBox:
    """The sample indexes [lo, hi) of the request: ``index_box`` as given (checked against the
    grid), ``box`` (positions, bounds inclusive) as the samples inside, or the whole grid."""
    s = f.stored
    ndim, dims = s.ndim, list(s.dims)
    if "box" in params and "index_box" in params:
        raise bad_request("pass box= (positions) or index_box= (sample indexes), not both")
    if "index_box" in params:
        text = params.text("index_box")
        items = text.split(",")
        if len(items) != 2 * ndim:
            raise bad_request(f"index_box of a {ndim}-D field must be {2 * ndim} comma-separated integers "
                              f"({', '.join(AXES[:ndim])} from, then to), got {len(items)}: '{text[:80]}'")
        v = [integer("index_box", t) for t in items]
        lo, hi = v[:ndim], v[ndim:]
        for k in range(ndim):
            if not 0 <= lo[k] < hi[k] <= dims[k]:
                raise unprocessable(f"index_box along {AXES[k]} is [{lo[k]}, {hi[k]}): it must hold samples "
                                    f"of 0..{dims[k] - 1} (from < to <= {dims[k]})")
        return tuple(lo), tuple(hi)
    box = params.numbers("box", 2 * ndim)
    if box is None:
        return tuple([0] * ndim), tuple(dims)
    lo, hi = [0] * ndim, [0] * ndim
    for k in range(ndim):
        a, b = box[k], box[ndim + k]
        if not a <= b:
            raise unprocessable(f"box along {AXES[k]} is empty: [{a!r}, {b!r}]")
        pos = f.axes[k]
        lo[k] = int(np.searchsorted(pos, a, side="left"))
        hi[k] = int(np.searchsorted(pos, b, side="right"))
        if lo[k] >= hi[k]:
            raise unprocessable(f"field '{f.name}': no sample lies in the box along {AXES[k]} ([{a!r}, {b!r}]; "
                                f"samples from {float(pos[0])!r} to {float(pos[-1])!r})")
    return tuple(lo), tuple(hi)


# Long only as the sum of its route handlers (closures over the registry and limits), each short.
def make_field_routes(server) -> Dict[str, Any]:
    registry: Registry = server.registry
    limits: Limits = server.config.limits

    async def fields(request: Request, job: Job) -> Response:
        Params(request.query_params.multi_items(), ())
        p = request.path_params
        entry, _ds, st = await job.light(registry.step_of, p["ds"], p["step"])
        tag = etag("fields", entry.tag(), st.index)
        cached = not_modified(request, tag, CACHE_STEP)
        if cached:
            return cached
        out = []
        for n, d in st.fields.items():
            if d.get("geometry", "cartesian") == "cartesian":
                out.append({"name": n, "dtype": d["dtype"], "ndim": d["ndim"], "dims": list(d["dims"])[:d["ndim"]],
                            "components": list(d["components"]) or None})
                continue
            view = (await job.light(registry.field, p["ds"], p["step"], n)).stored   # served resampled: its grid
            out.append({"name": n, "dtype": name_of(view.dtype), "ndim": view.ndim, "dims": list(view.dims),
                        "components": list(view.components) if view.components else None,
                        "geometry": d["geometry"]})
        return json_response({"dataset": entry.name, "step": st.index, "time": finite(st.time), "fields": out},
                             {"ETag": tag, "Cache-Control": CACHE_STEP})

    async def field(request: Request, job: Job) -> Response:
        params = Params(request.query_params.multi_items(), ())
        f = await field_of(registry, request, job)
        headers, cached = field_headers(f, request, params)
        return cached or json_response(describe(f), headers)

    async def samples(request: Request, job: Job) -> Response:
        params = Params(request.query_params.multi_items(), SAMPLES_PARAMS)
        level = params.integer("level", minimum=0)
        wanted = params.integer("budget", minimum=1)
        if level is not None and wanted is not None:
            raise bad_request("pass level= or budget=, not both")
        dtype = params.choice("dtype", ("f32", "native"))
        form = params.choice("format", ("frame", "arrow"))
        component = params.text("component")
        f = await field_of(registry, request, job)
        s = f.stored
        names = s.components
        if component is not None and (not names or component not in names):
            raise unprocessable(f"field '{f.name}' has no component '{component[:40]}' "
                                f"(components: {', '.join(names) if names else 'none, it is a scalar field'})")
        lo, hi = index_box_of(params, f)
        if level is None:
            level = 0 if wanted is None else level_by_budget(lo, hi, s.levels, wanted)
        elif level > s.levels:
            raise unprocessable(f"field '{f.name}' has levels 0 to {s.levels} (level {s.levels} keeps one sample "
                                f"per axis), got level {level}")
        first, count = lattice(lo, hi, level)
        rows = int(np.prod(count, dtype=np.int64))
        columns = [component] if component is not None else list(names) if names else [f.name]
        if rows * len(columns) > limits.max_points:
            raise over_limit(limits, "max_points", rows * len(columns), "samples asked for")
        headers, cached = field_headers(f, request, params)
        if cached:
            return cached

        def run() -> memoryview:
            started = time.perf_counter()
            index_box = (tuple(lo) + (0,) * (3 - len(lo)), tuple(hi) + (1,) * (3 - len(hi)))
            arrays: Dict[str, np.ndarray] = {}
            for name in columns:
                if rows == 0:  # the box holds no sample of this level's lattice
                    arrays[name] = np.empty(0, np.float32 if dtype == "f32" else s.dtype)
                    continue
                a = s.read(index_box=index_box, level=level, component=name if names else None,
                           threads=job.threads)
                if list(reversed(a.shape)) != count:  # the lattice said here is the core's
                    raise RuntimeError(f"samples of shape {a.shape}, expected {count[::-1]}")
                arrays[name] = a.astype(np.float32, copy=False) if dtype == "f32" else a
            s_ = 1 << level
            extra: Dict[str, Any] = {"field": f.name, "level": level, "dims": count, "first": first,
                                     "stride": s_, "index_box": {"lo": list(lo), "hi": list(hi)},
                                     "origin": [float(ax[i]) if n else None for ax, i, n in
                                                zip(f.axes, [min(v, len(ax) - 1) for v, ax in zip(first, f.axes)],
                                                    count)]}
            if s.coords is None:
                extra["step"] = [float(sp * s_) for sp in s.spacing]
            else:
                extra["step"] = None
                extra["positions"] = [[float(v) for v in ax[fi::s_][:n]] for ax, fi, n in zip(f.axes, first, count)]
            return (arrow if form == "arrow" else frame)(Arrays(arrays), extra, started)

        body = await job.run(run)
        return Response(body, headers=headers, media_type=ARROW_MEDIA_TYPE if form == "arrow" else MEDIA_TYPE)

    return {"fields": fields, "field": field, "samples": samples}
