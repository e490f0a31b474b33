"""The settings of a server: where it listens, who may ask, and its limits. Every default
and limit is defined here, once: the command line (``motes serve``) makes its options from
these fields, and the server's messages name the option of the limit a request exceeded."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import socket
from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple

from .. import _defaults

HOST = "127.0.0.1"
PORT = 8765

#: Where the viewer's build (index.html, assets/) is found; absent until it is built.
APP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "app")

#: Histograms: bins of an axis (the core's default, motes._defaults) and particles read
#: when the request names neither.
HISTOGRAM_BINS = _defaults.HISTOGRAM_BINS
HISTOGRAM_BUDGET = 2_000_000

#: Bodies at least this long are compressed (when the client accepts it).
COMPRESS_MIN_BYTES = 1024

#: Rows per batch of an export.
EXPORT_BATCH_ROWS = 1 << 18

#: Cache-Control of responses about one step and about a dataset. A step never changes within
#: a run, but a dataset may be deleted and written again under the same name (a new run):
#: clients keep step answers and revalidate them by ETag (the run's identity is in it), a
#: 304 costing no query.
CACHE_STEP = "private, no-cache"
CACHE_DATASET = "no-cache"

#: The cookie that carries the token after the app page's first load; one per port, so that
#: two servers on one host (cookies ignore the port) do not overwrite each other's.
COOKIE = "motes_token"


def cookie_name(port) -> str:
    return f"{COOKIE}_{port}" if port else COOKIE


#: Host names every server answers to (its loopback names); `--allow-host` adds others.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
#: The addresses that mean "every interface".
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


_ORIGIN = re.compile(r"https?://[^/\s?#@]+\Z", re.ASCII)


def _is_origin(text: str) -> bool:
    return bool(_ORIGIN.match(text))


def _host(name: str) -> str:
    """A host name as a request's Host is compared with it: lower case, an IPv6 address
    without brackets, in its short form."""
    name = name.lower().strip("[]")
    try:
        return str(ipaddress.IPv6Address(name)) if ":" in name else name
    except ValueError:
        return name


def _limit(default, option: str, what: str, status: int = 413):
    """A limit: its default, its option of `motes serve` ("" when fixed), what it counts."""
    return field(default=default, metadata={"option": option, "what": what, "status": status})


@dataclass(frozen=True)
class Limits:
    """What one request may ask for. Over a limit, the answer is ``status`` with a message
    naming the limit and its option."""

    max_url: int = _limit(16 * 1024, "", "bytes of a URL", 414)
    max_expression: int = _limit(4096, "--max-expression", "characters of a filter expression (where)")
    max_cells: int = _limit(4096, "--max-cells", "cells per points request")
    max_points: int = _limit(8_000_000, "--max-points", "points per response")
    max_bins: int = _limit(4096, "--max-bins", "bins per histogram axis")
    max_bins_2d: int = _limit(1 << 20, "--max-bins-2d", "bins of a 2-D histogram")
    max_export_rows: int = _limit(100_000_000, "--max-export-rows", "rows per export")
    query_timeout: float = _limit(30.0, "--query-timeout", "seconds a query may run", 408)

    @staticmethod
    def describe(name: str) -> dataclasses.Field:
        return next(f for f in dataclasses.fields(Limits) if f.name == name)


def _setting(default, option: str, what: str):
    """A setting of the connections: its default, its option of `motes serve`, what it is."""
    return field(default=default, metadata={"option": option, "what": what})


@dataclass(frozen=True)
class Connections:
    """What one connection may cost. A client that has not sent a whole request head within
    ``header_timeout`` seconds (of connecting, or of its previous response) is answered 408
    and disconnected; an idle kept-alive connection is closed after ``idle_timeout``; past
    ``max_connections`` open connections, a new one is answered 503 and closed. A response
    whose unsent bytes the client takes none of for ``idle_timeout`` seconds (a client that
    asked for an export and stopped reading) is dropped with its connection."""

    header_timeout: float = _setting(10.0, "--header-timeout", "seconds to send a request's head (line and headers)")
    idle_timeout: float = _setting(30.0, "--idle-timeout", "seconds a kept-alive connection may wait for its next "
                                                         "request, and a response for its client to read")
    max_connections: int = _setting(128, "--max-connections", "connections open at once")


#: Seconds a stopping server (Ctrl-C) lets responses in progress finish before it drops
#: their connections (their queries stop).
SHUTDOWN_GRACE = 2.0


@dataclass(frozen=True)
class Config:
    """A server: the datasets it serves (``(name or None, path)``: a name None is derived
    from the path), its token (None: no authentication), the one origin allowed by CORS,
    the address it listens on and the other host names it answers to (``allow_hosts``, for
    a proxy; ``"*"`` for any), the number of queries run at once, its limits and the
    directory of the viewer's build.

    ``cors="*"`` hands every dataset to every web page unless requests need a token: it is
    refused without one, unless ``cors_any_origin_without_token`` says it is meant.

    ``frame_ancestors`` is the CSP source list of the pages that may show the viewer in a
    frame: none by default (no other page can overlay it to steal clicks); the notebook's
    server (motes.notebook) lets pages of this machine do it."""

    datasets: Sequence[Tuple[Optional[str], str]]
    token: Optional[str] = None
    cors: Optional[str] = None
    host: str = HOST
    allow_hosts: Sequence[str] = ()
    cors_any_origin_without_token: bool = False
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    limits: Limits = field(default_factory=Limits)
    connections: Connections = field(default_factory=Connections)
    app_dir: str = APP_DIR
    frame_ancestors: str = "'none'"

    def __post_init__(self):
        from ..errors import UsageError

        if self.cors == "*" and self.token is None and not self.cors_any_origin_without_token:
            raise UsageError("--cors '*' without a token lets every web page read and export these datasets: "
                             "give the one origin that needs them (--cors http://localhost:5173), add --token "
                             "(or --token-file), or say it is meant with --cors-any-origin-without-token")
        if self.cors is not None and self.cors != "*" and not _is_origin(self.cors):
            raise UsageError(f"--cors {self.cors!r} is not an origin: scheme://host[:port], such as "
                             "http://localhost:5173 (or '*')")
        for name in self.allow_hosts:
            if name != "*" and (not name or any(c in name for c in "/ @?#")):
                raise UsageError(f"--allow-host {name!r} is not a host name (such as motes.example.org, or '*')")

    @property
    def host_names(self) -> Optional[frozenset]:
        """The names a request's Host may give (lower case, IPv6 without brackets); None: any."""
        if "*" in self.allow_hosts:
            return None
        names = {*LOOPBACK_HOSTS, *(_host(h) for h in self.allow_hosts)}
        host = _host(self.host)
        if host in WILDCARD_HOSTS:
            names.update(n.lower() for n in (socket.gethostname(), socket.getfqdn()) if n)
        else:
            names.add(host)
        return frozenset(names)

    @property
    def any_ip_host(self) -> bool:
        """On every interface, a Host that is an IP address names this machine: a page can
        only get such a Host by being served from here (rebinding needs a domain name)."""
        return self.host.lower().strip("[]") in WILDCARD_HOSTS

    @property
    def query_threads(self) -> int:
        """Threads per query: the cores shared by the queries that run at once."""
        return max(1, (os.cpu_count() or 1) // max(1, self.workers))
