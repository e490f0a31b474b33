"""The endpoints about datasets (health, the list, one dataset, one species of a step),
the app page and the fallback 404. Points, histograms and exports are in queries.py and
export.py."""

from __future__ import annotations

import html
import os
import time
from urllib.parse import urlencode
from typing import Any, Dict

import anyio
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from .._core import version as __version__
from .config import CACHE_DATASET, CACHE_STEP, cookie_name
from .errors import bad_request, not_found
from .params import Params
from .registry import Registry, Species, bounds_json, finite
from .responses import etag, json_response, not_modified
from .work import Job

#: The longest a long poll of /updates waits (seconds), and how often it looks at the manifest.
MAX_WAIT, POLL = 60.0, 0.05

#: The app page may load only from its own origin; the pages that may frame it are the
#: server's (Config.frame_ancestors, none by default).
CSP = ("default-src 'self'; img-src 'self' data: blob:; worker-src 'self' blob:; object-src 'none'; "
       "base-uri 'none'; frame-ancestors {frame_ancestors}; form-action 'none'")

BUILD_HINT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>motes serve</title></head>
<body>
<h1>motes serve</h1>
<p>The viewer app is not built in this installation (no <code>{app_dir}/index.html</code>):
motes was built without it (<code>MOTES_VIEWER=OFF</code>), or runs from a source tree where it
is not built yet. Install motes from its sdist or a wheel, which carry the app, or build it
with Node.js &ge; 18 on PATH (<code>pip install .</code> in the source tree builds the app
first), then restart the server.</p>
<p>The HTTP API works without it: <a href="api/v1/datasets">api/v1/datasets</a>
(docs/http-api.md).</p>
</body></html>
"""


async def species_of(registry: Registry, request: Request, job: Job) -> Species:
    p = request.path_params
    found = registry.cached(p["ds"], p["step"], p["sp"])
    return found if found is not None else await job.light(registry.species, p["ds"], p["step"], p["sp"])


def step_headers(sp: Species, request: Request, params: Params):
    """(ETag, Cache-Control) of an answer about one step; the 304 when the client has it."""
    tag = etag(sp.tag, request.url.path, params.normalised())
    return {"ETag": tag, "Cache-Control": CACHE_STEP}, not_modified(request, tag, CACHE_STEP)


def make_routes(server) -> Dict[str, Any]:
    registry: Registry = server.registry

    async def health(request: Request, job: Job) -> Response:
        Params(request.query_params.multi_items(), ())
        return json_response({"ok": True, "version": __version__, "datasets": len(registry.entries)},
                             {"Cache-Control": "no-store"})

    async def datasets(request: Request, job: Job) -> Response:
        Params(request.query_params.multi_items(), ())
        entries = list(registry.entries.values())
        found = await job.light(lambda: [(e, e.dataset()) for e in entries])
        tag = etag("datasets", [e.tag() for e, _ in found])
        cached = not_modified(request, tag, CACHE_DATASET)
        if cached:
            return cached
        out = []
        for e, ds in found:
            steps = [ds.step(s) for s in ds.steps]
            out.append({"name": e.name, "steps": len(steps),
                        "species": sorted({n for st in steps for n in st.species}),
                        "particles": sum(int(sp["count"]) for st in steps for sp in st.species.values())})
        return json_response({"datasets": out}, {"ETag": tag, "Cache-Control": CACHE_DATASET})

    async def dataset(request: Request, job: Job) -> Response:
        Params(request.query_params.multi_items(), ())
        entry = registry.entry(request.path_params["ds"])
        ds = await job.light(entry.dataset)
        tag = etag("dataset", entry.tag())
        cached = not_modified(request, tag, CACHE_DATASET)
        if cached:
            return cached
        steps = []
        for s in ds.steps:
            st = ds.step(s)
            steps.append({"index": st.index, "time": finite(st.time), "attributes": st.attributes,
                          "species": {n: {"count": int(sp["count"]), "bounds": bounds_json(*sp["bounds"])}
                                      for n, sp in st.species.items()}})
        return json_response({"name": entry.name, "id": ds.id, "attributes": ds.attributes, "steps": steps},
                             {"ETag": tag, "Cache-Control": CACHE_DATASET})

    async def updates(request: Request, job: Job) -> Response:
        """Long poll: the dataset's step indexes, answered at once when it has a step above
        ``after`` (default: answered at once), else when one is published or after ``wait``
        seconds (default 25, at most MAX_WAIT). The viewer follows a running simulation so."""
        params = Params(request.query_params.multi_items(), ("after", "wait"))
        entry = registry.entry(request.path_params["ds"])
        after = params.integer("after")
        wait = params.number("wait", 25.0)
        if not 0 <= wait <= MAX_WAIT:
            raise bad_request(f"wait must be in [0, {MAX_WAIT:g}] seconds, got {wait:g}")
        deadline = time.monotonic() + wait
        while True:
            ds = await job.light(entry.dataset)
            steps = ds.steps
            newer = after is None or any(s > after for s in steps)
            if newer or time.monotonic() >= deadline or job.disconnected:
                return json_response({"name": entry.name, "id": ds.id, "steps": steps, "newer": newer},
                                     {"Cache-Control": "no-store"})
            await anyio.sleep(POLL)

    async def species(request: Request, job: Job) -> Response:
        params = Params(request.query_params.multi_items(), ())
        sp = await species_of(registry, request, job)
        headers, cached = step_headers(sp, request, params)
        return cached or json_response(sp.describe(), headers)

    async def app_page(request: Request, job: Job) -> Response:
        token = server.config.token
        if token is not None and "token" in request.query_params:
            # The guard let it in, so the token is right: it moves into a cookie, and the
            # browser is sent to the same page without it, so that the token stays out of
            # the address bar, the history and every link the viewer makes.
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            response = RedirectResponse("./" + ("?" + urlencode(rest) if rest else ""), status_code=303,
                                        headers={"Cache-Control": "no-store"})
            response.set_cookie(cookie_name(request.scope["server"][1]), token, httponly=True, samesite="strict",
                                path="/")
            return response
        index = os.path.join(server.config.app_dir, "index.html")
        headers = {"Content-Security-Policy": CSP.format(frame_ancestors=server.config.frame_ancestors),
                   "Cache-Control": "no-cache"}
        if not os.path.isfile(index):
            return HTMLResponse(BUILD_HINT.format(app_dir=html.escape(server.config.app_dir)), headers=headers)
        return FileResponse(index, media_type="text/html; charset=utf-8", headers=headers)

    async def missing(request: Request, job: Job) -> Response:
        raise not_found(f"no such path: {request.url.path} (the API is under /api/v1/: docs/http-api.md)")

    return {"health": health, "datasets": datasets, "dataset": dataset, "updates": updates, "species": species,
            "app_page": app_page, "missing": missing}
