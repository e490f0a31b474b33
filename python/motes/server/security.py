"""The guard in front of every request (ASGI middleware): only GET and HEAD, no request
body, URLs of bounded length, the token when the server has one (header, parameter or
cookie, compared in constant time), and the headers every response carries."""

from __future__ import annotations

import hmac
from http.cookies import SimpleCookie
from typing import Optional
from urllib.parse import parse_qsl

from .config import COOKIE, Limits
from .errors import HTTPError, over_limit

_ALWAYS = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]


def _header(scope, name: bytes) -> Optional[bytes]:
    for k, v in scope["headers"]:
        if k == name:
            return v
    return None


def request_token(scope) -> Optional[str]:
    """The token a request carries: ``Authorization: Bearer``, else ``token=``, else the cookie."""
    auth = _header(scope, b"authorization")
    if auth is not None:
        scheme, _, value = auth.decode("latin-1").partition(" ")
        if scheme.lower() == "bearer":
            return value.strip()
    for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True):
        if k == "token":
            return v
    cookie = _header(scope, b"cookie")
    if cookie is not None:
        jar = SimpleCookie()
        try:
            jar.load(cookie.decode("latin-1"))
        except Exception:  # a malformed cookie header carries no token
            return None
        if COOKIE in jar:
            return jar[COOKIE].value
    return None


def token_matches(given: Optional[str], token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode("utf-8", "surrogateescape"), token.encode())


class GuardMiddleware:
    def __init__(self, app, limits: Limits, token: Optional[str]):
        self.app, self.limits, self.token = app, limits, token

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_ALWAYS]}
            await send(message)

        try:
            self.check(scope)
        except HTTPError as e:
            headers = [(b"content-type", b"application/json; charset=utf-8"), (b"cache-control", b"no-store"),
                       *((k.encode(), v.encode()) for k, v in e.headers.items())]
            body = e.body()
            await send_with_headers({"type": "http.response.start", "status": e.status,
                                     "headers": headers + [(b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send_with_headers)

    def check(self, scope) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            raise HTTPError(405, "method", f"method {scope['method']} is not allowed: every endpoint is GET (or HEAD)",
                            {"Allow": "GET, HEAD"})
        url = len(scope.get("raw_path") or scope["path"].encode()) + len(scope.get("query_string", b"")) + 1
        if url > self.limits.max_url:
            raise over_limit(self.limits, "max_url", url, "this URL's length in bytes")
        length = _header(scope, b"content-length")
        if _header(scope, b"transfer-encoding") is not None or (length is not None and length.strip() != b"0"):
            raise HTTPError(413, "too_large", "requests have no body: every endpoint is a GET with parameters")
        if self.token is not None and not token_matches(request_token(scope), self.token):
            raise HTTPError(401, "auth", "this server needs its token: header 'Authorization: Bearer TOKEN', "
                                         "parameter token=TOKEN or the cookie the app page sets "
                                         "(the URL motes serve printed has it)",
                            {"WWW-Authenticate": 'Bearer realm="motes"'})
