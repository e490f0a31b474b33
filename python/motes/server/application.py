"""The server as an ASGI app: ``create_app(Config, opener=)``. Middleware, outermost first: CORS
(only with ``--cors``), the guard (Host and Origin, methods, bodies, URL length, token,
headers), compression; then the routes of docs/http-api.md."""

from __future__ import annotations

import os

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .compression import CompressionMiddleware
from .config import Config
from .errors import error_body
from .export import make_export_routes
from .fields import make_field_routes
from .memory import Trimmer
from .queries import make_query_routes
from .registry import Opener, Registry
from .responses import Endpoint
from .routes import make_routes
from .security import GuardMiddleware
from .work import Job

API = "/api/v1"
SPECIES = API + "/datasets/{ds}/steps/{step}/species/{sp}"
FIELDS = API + "/datasets/{ds}/steps/{step}/fields"


class Server:
    """What the routes share: the configuration, the datasets, the limiter of queries."""

    def __init__(self, config: Config, opener: Opener):
        self.config = config
        self.registry = Registry(config.datasets, opener)
        self.trimmer = Trimmer()
        self._limiter = None

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        if self._limiter is None:  # made in the event loop that uses it
            self._limiter = anyio.CapacityLimiter(max(1, self.config.workers))
        return self._limiter

    def new_job(self) -> Job:
        return Job(self.limiter, self.config.limits.query_timeout, self.config.query_threads, self.trimmer.after_work)


async def _http_exception(request: Request, e: HTTPException) -> Response:
    """What Starlette itself refuses (a path no route matches, such as one with a newline; a
    missing file of the app) gets the JSON error body of every other refusal."""
    kind = "not_found" if e.status_code == 404 else "usage"
    message = f"no such path: {request.url.path!r}" if e.status_code == 404 else str(e.detail)
    return Response(error_body(e.status_code, kind, message), e.status_code, media_type="application/json",
                    headers={**(e.headers or {}), "Cache-Control": "no-store"})


def create_app(config: Config, *, opener: Opener) -> Starlette:
    """The app serving ``config.datasets``, each opened by ``opener`` (``motes.open``)."""
    server = Server(config, opener)
    handlers = {**make_routes(server), **make_query_routes(server), **make_export_routes(server),
                **make_field_routes(server)}

    def route(path: str, name: str) -> Route:
        return Route(path, Endpoint(handlers[name], server.new_job), name=name)

    routes = [
        route("/", "app_page"),
        route(API + "/health", "health"),
        route(API + "/datasets", "datasets"),
        route(API + "/datasets/{ds}", "dataset"),
        route(API + "/datasets/{ds}/updates", "updates"),
        route(SPECIES, "species"),
        route(SPECIES + "/points", "points"),
        route(SPECIES + "/histogram", "histogram"),
        route(SPECIES + "/export", "export"),
        route(FIELDS, "fields"),
        route(FIELDS + "/{field}", "field"),
        route(FIELDS + "/{field}/samples", "samples"),
    ]
    assets = os.path.join(config.app_dir, "assets")
    if os.path.isdir(assets):
        routes.append(Mount("/assets", StaticFiles(directory=assets), name="assets"))
    routes.append(route("/{path:path}", "missing"))
    middleware = []
    if config.cors:
        middleware.append(Middleware(CORSMiddleware, allow_origins=[config.cors], allow_methods=["GET", "HEAD"],
                                     allow_headers=["Authorization", "If-None-Match"],
                                     expose_headers=["ETag", "Content-Disposition"], max_age=600))
    middleware.append(Middleware(GuardMiddleware, config=config))
    middleware.append(Middleware(CompressionMiddleware, limiter=lambda: server.limiter))
    app = Starlette(routes=routes, middleware=middleware, exception_handlers={HTTPException: _http_exception})
    app.state.server = server
    return app
