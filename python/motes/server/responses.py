"""How the server answers: endpoints as ASGI apps that run a handler with its Job (and
stop the job when the client disconnects), JSON bodies, errors, ETags with 304 Not
Modified, and streamed bodies."""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, Optional

import anyio
from starlette.requests import Request
from starlette.responses import Response

from ..errors import MotesError
from .errors import HTTPError, of_motes_error
from .work import Job, watch_disconnect

log = logging.getLogger("motes.server")
JSON = "application/json; charset=utf-8"


def json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode()


def json_response(obj: Any, headers: Optional[Dict[str, str]] = None, status: int = 200) -> Response:
    return Response(json_bytes(obj), status_code=status, headers=headers, media_type=JSON)


def error_response(e: HTTPError) -> Response:
    return Response(e.body(), status_code=e.status, headers={"Cache-Control": "no-store", **e.headers},
                    media_type=JSON)


def etag(*parts: Any) -> str:
    """A weak validator (one per resource, whatever its Content-Encoding)."""
    return 'W/"' + hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest() + '"'


def not_modified(request: Request, tag: str, cache: str) -> Optional[Response]:
    """304 when the request's If-None-Match holds the tag (weak comparison), else None."""
    given = request.headers.get("if-none-match")
    if given is None:
        return None
    opaque = tag[2:] if tag.startswith("W/") else tag
    for item in given.split(","):
        item = item.strip()
        if item == "*" or (item[2:] if item.startswith("W/") else item) == opaque:
            return Response(status_code=304, headers={"ETag": tag, "Cache-Control": cache})
    return None


class StreamResponse(Response):
    """A body sent in chunks as they are made (an export). When making them fails after the
    headers are out, the connection is dropped: a client never takes a cut body for whole."""

    def __init__(self, chunks: AsyncIterator[bytes], job: Job, headers: Dict[str, str], media_type: str):
        super().__init__(None, headers=headers, media_type=media_type)
        del self.headers["content-length"]
        self.chunks, self.job = chunks, job

    async def __call__(self, scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        try:
            async for chunk in self.chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except HTTPError:
            if self.job.disconnected:
                log.info("%s: the client disconnected; its export was stopped", scope.get("path"))
                return  # nobody to tell
            raise
        await send({"type": "http.response.body", "body": b""})


Handler = Callable[[Request, Job], Awaitable[Response]]


class Endpoint:
    """An ASGI app running ``handler(request, job)``: errors become the JSON error body; while
    the handler runs, a client that disconnects cancels its job's queries."""

    def __init__(self, handler: Handler, new_job: Callable[[], Job]):
        self.handler, self.new_job = handler, new_job

    async def __call__(self, scope, receive, send) -> None:
        request = Request(scope)
        job = self.new_job()
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_disconnect, receive, job)
            try:
                response = await self.handler(request, job)
            except HTTPError as e:
                if e.status == 499:
                    log.info("%s: the client disconnected; its query was stopped", scope.get("path"))
                response = error_response(e)
            except MotesError as e:
                response = error_response(of_motes_error(e))
            except Exception as e:  # a bug: said as such, with the details in the server's log
                log.exception("internal error answering %s", scope.get("path"))
                response = error_response(HTTPError(500, "internal", f"internal error: {type(e).__name__}: {e}"))
            await response(scope, _nothing_to_receive, send)
            tg.cancel_scope.cancel()


async def _nothing_to_receive():  # the endpoint's watcher reads the request's channel
    await anyio.sleep_forever()
