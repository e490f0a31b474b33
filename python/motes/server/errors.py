"""Errors of the server as HTTP answers: the status, the ``kind`` (one of motes' error
kinds, or one of the server's: auth, too_large, timeout, cancelled, method) and a message
naming the problem, in the JSON body of docs/http-api.md."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

from ..errors import MotesError
from .config import Limits

#: The status of each error kind of motes (the core's table) when a query raised it: a
#: usage error is a request the data cannot answer, a missing thing (a field's file) is not
#: found; the others are the server's trouble.
_STATUS_OF_KIND = {"usage": 422, "not_found": 404, "memory": 503, "replaced": 409}


class HTTPError(Exception):
    def __init__(self, status: int, kind: str, message: str, headers: Optional[Dict[str, str]] = None):
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message
        self.headers = headers or {}

    def body(self) -> bytes:
        return error_body(self.status, self.kind, self.message)


def error_body(status: int, kind: str, message: str) -> bytes:
    return json.dumps({"error": {"status": status, "kind": kind, "message": message}}).encode()


def bad_request(message: str) -> HTTPError:
    """400: a malformed parameter."""
    return HTTPError(400, "usage", message)


def not_found(message: str) -> HTTPError:
    return HTTPError(404, "not_found", message)


def unprocessable(message: str) -> HTTPError:
    """422: a well-formed request the data cannot answer."""
    return HTTPError(422, "usage", message)


def over_limit(limits: Limits, name: str, asked: Any, what: str = "") -> HTTPError:
    """413 (or the limit's status): ``asked`` is more than the limit ``name`` allows."""
    f = Limits.describe(name)
    value = getattr(limits, name)
    option = f.metadata["option"]
    how = f"; ask for less, or start the server with a larger {option}" if option else ""
    return HTTPError(f.metadata["status"], "too_large",
                     f"{what or f.metadata['what']}: {_number(asked)} is over the limit of {_number(value)} "
                     f"({f.metadata['what']}{', ' + option if option else ''}){how}")


def of_motes_error(e: MotesError) -> HTTPError:
    kind = getattr(e, "kind", "internal")
    return HTTPError(_STATUS_OF_KIND.get(kind, 500), kind, str(e))


def _number(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:g}"
