"""Points and histograms of one species of a step (docs/http-api.md): parameters checked,
the quality chosen by budget from the tree, the queries run in a worker thread, and the
answer built there too (a frame or Arrow stream; the histogram's counts)."""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional

import numpy as np

from starlette.requests import Request
from starlette.responses import Response

from .._defaults import histogram_range
from .cells import Cell, Ladder, budget, parse_cells, quality
from .config import HISTOGRAM_BINS, HISTOGRAM_BUDGET, Limits
from .errors import bad_request, over_limit, unprocessable
from .frames import ARROW_MEDIA_TYPE, MEDIA_TYPE, Columns, arrow, frame
from .params import Params
from .registry import Registry, Species
from .responses import json_response
from .routes import species_of, step_headers
from .work import Job

POINTS_PARAMS = ("columns", "where", "cells", "to", "budget", "dtype", "origin", "format")
HISTOGRAM_PARAMS = ("x", "bins", "range", "y", "ybins", "yrange", "where", "box", "quality", "budget")


def where_of(params: Params, limits: Limits) -> Optional[str]:
    where = params.text("where")
    if where is not None and len(where) > limits.max_expression:
        raise over_limit(limits, "max_expression", len(where), "characters in where")
    if where is not None and not where.strip():
        raise bad_request("where is empty (leave it out to take every particle)")
    return where


def columns_of(params: Params, sp: Species) -> List[str]:
    names = params.names("columns")
    if names is None:
        return [c["name"] for c in sp.columns]
    for n in names:
        sp.column(n)  # 422 naming the columns when unknown
    return names


def box_counts(sp: Species, box) -> List[np.ndarray]:
    """Per part, the estimated particles per level inside the box, from the index alone
    (``Dataset.plan``; empty for a part it leaves out)."""
    counts = [np.zeros(0)] * sp.source.part_count
    for p in sp.ds.plan(box=box, step=sp.step, species=sp.name, levels=True).parts:
        counts[p.part] = p.levels
    return counts


# Long only as the sum of its route handlers (closures over the registry and limits), each short.
def make_query_routes(server) -> Dict[str, Any]:
    registry: Registry = server.registry
    limits: Limits = server.config.limits

    async def points(request: Request, job: Job) -> Response:
        params = Params(request.query_params.multi_items(), POINTS_PARAMS)
        where = where_of(params, limits)
        to = quality("to", params.number("to"))
        wanted = budget("budget", params.integer("budget"))
        if to is not None and wanted is not None:
            raise bad_request("pass to= or budget=, not both")
        dtype = params.choice("dtype", ("native", "f32"))
        form = params.choice("format", ("frame", "arrow"))
        origin = params.numbers("origin", 3)
        if origin is not None and dtype != "f32":
            raise bad_request("origin needs dtype=f32 (native columns are sent as stored)")
        sp = await species_of(registry, request, job)
        names = columns_of(params, sp)
        cells = parse_cells(params.text("cells"), sp.bounds, limits)
        headers, cached = step_headers(sp, request, params)
        if cached:
            return cached

        def run() -> memoryview:
            started = time.perf_counter()
            extra: Dict[str, Any] = {}
            target = 1.0 if to is None else to
            if wanted is not None:
                q0s = [c.q0 for c in cells]
                totals = sp.ladder.estimate([box_counts(sp, c.box) for c in cells], q0s)
                target, estimate = sp.ladder.by_budget(totals, q0s, wanted)
                extra["estimate"] = round(estimate)
            extra["to"] = target
            if dtype == "f32":
                extra["origin"] = list(origin) if origin is not None else [float(v) for v in sp.bounds[0]]
            sels = [select_cell(sp, c, target, where, job) for c in cells]
            cols = Columns(names, {c["name"]: c["dtype"] for c in sp.columns}, dtype == "f32", extra.get("origin"),
                           sels)
            if cols.total > limits.max_points:
                raise over_limit(limits, "max_points", cols.total, "points found")
            return (arrow if form == "arrow" else frame)(cols, extra, started)

        body = await job.run(run)
        return Response(body, headers=headers, media_type=ARROW_MEDIA_TYPE if form == "arrow" else MEDIA_TYPE)

    async def histogram(request: Request, job: Job) -> Response:
        params = Params(request.query_params.multi_items(), HISTOGRAM_PARAMS)
        where = where_of(params, limits)
        x = params.text("x")
        if x is None:
            raise bad_request("x is missing: the column of the histogram's first axis")
        y = params.text("y")
        axes = [(x, params.integer("bins", HISTOGRAM_BINS, 1), params.numbers("range", 2))]
        if y is not None:
            axes.append((y, params.integer("ybins", HISTOGRAM_BINS, 1), params.numbers("yrange", 2)))
        elif "ybins" in params or "yrange" in params:
            raise bad_request("ybins and yrange need y (a 2-D histogram)")
        for _name, bins, _range in axes:
            if bins > limits.max_bins:
                raise over_limit(limits, "max_bins", bins, "bins on an axis")
        if y is not None and axes[0][1] * axes[1][1] > limits.max_bins_2d:
            raise over_limit(limits, "max_bins_2d", axes[0][1] * axes[1][1], "bins of this 2-D histogram")
        box = params.numbers("box", 6)
        q = quality("quality", params.number("quality"))
        wanted = budget("budget", params.integer("budget"))
        if q is not None and wanted is not None:
            raise bad_request("pass quality= or budget=, not both")
        sp = await species_of(registry, request, job)
        ranges = []
        for name, _bins, given in axes:
            column = sp.column(name)
            if given is not None and not given[0] <= given[1]:
                raise unprocessable(f"range of '{name}' is empty: [{given[0]!r}, {given[1]!r}]")
            ranges.append(histogram_range(given, column["min"], column["max"]))  # default: the column's in this step
        headers, cached = step_headers(sp, request, params)
        if cached:
            return cached

        def run() -> Dict[str, Any]:
            started = time.perf_counter()
            target = q
            if target is None:
                ladder: Ladder = sp.ladder
                totals = ladder.estimate([box_counts(sp, box)], [0.0]) if box is not None else ladder.count
                target, _estimate = ladder.by_budget(totals, [0.0], HISTOGRAM_BUDGET if wanted is None else wanted)
            bins = axes[0][1] if y is None else (axes[0][1], axes[1][1])
            counts = sp.ds.histogram(x, y, bins=bins, range=ranges[0] if y is None else ranges, where=where,
                                     box=box, quality=target, step=sp.step, species=sp.name, **job.query())[0]
            out = {"x": {"column": x, "bins": axes[0][1], "range": list(ranges[0])}}
            if y is not None:
                out["y"] = {"column": y, "bins": axes[1][1], "range": list(ranges[1])}
            out.update(counts=counts.tolist(), quality=target, exact=target >= 1.0, total=int(counts.sum()),
                       query_ms=round((time.perf_counter() - started) * 1e3, 3))
            return out

        return json_response(await job.run(run), headers)

    return {"points": points, "histogram": histogram}


def select_cell(sp: Species, cell: Cell, to: float, where: Optional[str], job: Job):
    """The selection of one cell between its q0 and ``to`` (None when it has nothing to add)."""
    if cell.q0 >= to or cell.empty(sp.bounds[1]):
        return None
    return sp.ds.select(cell.where(sp.bounds[1], where), cell.box, (cell.q0, to), step=sp.step, species=sp.name,
                        **job.query())
