"""The guard in front of every request (ASGI middleware): one well-formed Host, one of the
names the server was started for, and no other site's Origin (no DNS rebinding, no
cross-site reads), only GET and HEAD, no request body, URLs of bounded length, the token
when the server has one (header, parameter or cookie, compared in constant time; the
parameter found by the rule that also keeps it out of the access log), and the headers
every response carries."""

from __future__ import annotations

import hmac
import ipaddress
import re
from http.cookies import SimpleCookie
from typing import List, Optional
from urllib.parse import parse_qsl, unquote_plus

from .config import Config, cookie_name
from .errors import HTTPError, over_limit

_ALWAYS = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]


def _header(scope, name: bytes) -> Optional[bytes]:
    for k, v in scope["headers"]:
        if k == name:
            return v
    return None


#: A Host field (RFC 9110, 7.2) as the server takes it: a name or IPv4 address, or an IPv6
#: address in brackets, then optionally ':' and a port; nothing else (no userinfo '@', no
#: list, no spaces, no path).
_HOST = re.compile(r"(?:(?P<name>[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?\.?)|\[(?P<v6>[0-9a-f:.]+)\])(?::[0-9]{1,5})?\Z",
                   re.ASCII | re.IGNORECASE)


def host_name(authority: str) -> Optional[str]:
    """The host of ``host[:port]`` or ``[v6][:port]``, lower case, without brackets; None
    when ``authority`` is anything else."""
    m = _HOST.match(authority)
    if m is None:
        return None
    if m["v6"] is not None:
        try:
            return str(ipaddress.IPv6Address(m["v6"])) if ":" in m["v6"] else None
        except ValueError:
            return None
    return m["name"].lower()


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


# ---- the token parameter: one rule for taking it and for keeping it out of logs ----------------
TOKEN_PARAMETER = "token"
REDACTED = "[redacted]"
_PARAMETER = re.compile(r"(^|[?&;])([^=&;?\s]*)=([^&;\s]*)")


def token_parameters(query: str) -> List[str]:
    """The values of the query string's token parameters, its names decoded as every
    parameter's (``tok%65n=`` is ``token=``)."""
    return [v for k, v in parse_qsl(query, keep_blank_values=True) if k == TOKEN_PARAMETER]


def redact(text: str) -> str:
    """``text`` with the value of every parameter that is, decoded as :func:`token_parameters`
    decodes names, ``token`` (in any case) replaced by [redacted]."""
    def one(m: re.Match) -> str:
        if unquote_plus(m[2]).lower() != TOKEN_PARAMETER:
            return m[0]
        return f"{m[1]}{m[2]}={REDACTED}"

    return _PARAMETER.sub(one, text)


def request_token(scope) -> Optional[str]:
    """The token a request carries: ``Authorization: Bearer``, else ``token=``, else the cookie."""
    auth = _header(scope, b"authorization")
    if auth is not None:
        scheme, _, value = auth.decode("latin-1").partition(" ")
        if scheme.lower() == "bearer":
            return value.strip()
    for v in token_parameters(scope.get("query_string", b"").decode("latin-1")):
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
        """400 unless the request has one Host, host[:port] or [IPv6][:port]; 403 unless it is
        one of the server's names and the Origin, when a browser sends one, is the server's
        own (or the one --cors names)."""
        hosts = [v for k, v in scope["headers"] if k == b"host"]
        if len(hosts) != 1:
            raise HTTPError(400, "usage", "a request must name its Host (HTTP/1.1), once" if hosts else
                                          "a request must name its Host (HTTP/1.1)")
        host = hosts[0].decode("latin-1").strip()
        name = host_name(host)
        if name is None:
            raise HTTPError(400, "usage", f"Host '{_shown(host)}' is not host[:port] or [IPv6][:port]")
        if self.hosts is not None and not self._known_host(name):
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
        if not (sep and scheme.lower() in ("http", "https") and authority.lower() == host.lower()):
            raise HTTPError(403, "forbidden",
                            f"a page of another site (Origin '{_shown(origin)}') may not use this server; "
                            "to let one origin call it from a browser, start the server with --cors ORIGIN")

    def _known_host(self, name: str) -> bool:
        return name in self.hosts or (self.config.any_ip_host and _is_ip(name))


def _shown(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
