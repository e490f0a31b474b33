"""The guard in front of every request (ASGI middleware): the Host one of the names the
server was started for and no other site's Origin (no DNS rebinding, no cross-site reads),
only GET and HEAD, no request body, URLs of bounded length, the token when the server has
one (header, parameter or cookie, compared in constant time), and the headers every
response carries."""

from __future__ import annotations

import hmac
import ipaddress
from http.cookies import SimpleCookie
from typing import Optional
from urllib.parse import parse_qsl

from .config import Config, cookie_name
from .errors import HTTPError, over_limit

_ALWAYS = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]


def _header(scope, name: bytes) -> Optional[bytes]:
    for k, v in scope["headers"]:
        if k == name:
            return v
    return None


def host_name(authority: str) -> str:
    """The host of ``host[:port]`` or ``[v6]:port``, lower case, without brackets."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        name, close, port = authority[1:].partition("]")
        return name if close and (not port or port[:1] == ":") else authority
    return authority.rpartition(":")[0] if authority.count(":") == 1 else authority


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


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
        name = cookie_name((scope.get("server") or (None, None))[1])
        if name in jar:
            return jar[name].value
    return None


def token_matches(given: Optional[str], token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode("utf-8", "surrogateescape"), token.encode())


class GuardMiddleware:
    def __init__(self, app, config: Config):
        self.app, self.config = app, config
        self.limits, self.token, self.hosts = config.limits, config.token, config.host_names

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
        self.check_site(scope)
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

    def check_site(self, scope) -> None:
        """403 unless the Host is one of the server's names and the Origin, when a browser
        sends one, is the server's own (or the one --cors names)."""
        host = _header(scope, b"host")
        if host is None:
            raise HTTPError(403, "forbidden", "a request must name its Host (HTTP/1.1)")
        host = host.decode("latin-1")
        if self.hosts is not None and not self._known_host(host_name(host)):
            raise HTTPError(403, "forbidden",
                            f"Host '{_shown(host)}' is not a name this server was started for "
                            f"({', '.join(sorted(self.hosts))}); a web page under another name may be reading it "
                            "(DNS rebinding). Serving under another name, or behind a proxy? Start the server with "
                            "--allow-host NAME")
        origin = _header(scope, b"origin")
        if origin is None:
            return
        origin = origin.decode("latin-1").strip()
        cors = self.config.cors
        if cors == "*" or origin == cors:
            return
        scheme, sep, authority = origin.partition("://")
        if not (sep and scheme.lower() in ("http", "https") and authority.lower() == host.strip().lower()):
            raise HTTPError(403, "forbidden",
                            f"a page of another site (Origin '{_shown(origin)}') may not use this server; "
                            "to let one origin call it from a browser, start the server with --cors ORIGIN")

    def _known_host(self, name: str) -> bool:
        return name in self.hosts or (self.config.any_ip_host and _is_ip(name))


def _shown(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
