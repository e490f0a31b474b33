"""``motes serve``: the datasets over HTTP for the browser viewer and HTTP clients
(docs/http-api.md). Options for the limits are made from motes.server.config.Limits."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import sys
import threading
from typing import List, Optional, Tuple

from ..errors import UsageError
from ..server.config import HOST, PORT, Connections, Limits
from .common import CliError, require
from .options import add_command, positive_float, positive_int
from .text import out

_LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


def is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: whatever it resolves to, it may be reachable from elsewhere


def _dataset_specs(texts: List[str]) -> List[Tuple[Optional[str], str]]:
    """NAME=PATH (NAME without '/') or PATH."""
    out = []
    for t in texts:
        name, eq, path = t.partition("=")
        if eq and name and "/" not in name:
            out.append((name, path))
        else:
            out.append((None, t))
    return out


def _token(args) -> Optional[str]:
    if args.token_file is not None:
        try:
            with open(args.token_file, encoding="utf-8") as fh:
                token = fh.read().strip()
        except OSError as e:
            raise CliError(f"--token-file {args.token_file}: cannot read it ({e.strerror or e})") from None
        if not token:
            raise CliError(f"--token-file {args.token_file} is empty")
        return token
    if args.token is not None and not args.token.strip():
        raise UsageError("--token is empty")
    return args.token


def cmd_serve(args) -> int:
    require("starlette", "serve", "motes serve")
    require("uvicorn", "serve", "motes serve")
    from ..dataset import open as open_dataset
    from ..server import Config, create_app, listen

    token = _token(args)
    if args.no_auth and token is not None:
        raise UsageError("--no-auth and a token exclude each other")
    if not is_loopback(args.host) and token is None and not args.no_auth:
        raise UsageError(f"refusing to serve on {args.host}, which other machines may reach, without a token: "
                         "pass --token TOKEN (or --token-file FILE), or --no-auth to serve to anyone who can connect")
    limits = Limits(**_options_of(Limits, args))
    config = Config(datasets=_dataset_specs(args.datasets), token=token, cors=args.cors, host=args.host,
                    allow_hosts=tuple(args.allow_host), cors_any_origin_without_token=args.cors_any_origin_without_token,
                    workers=args.workers, limits=limits, connections=Connections(**_options_of(Connections, args)))
    app = create_app(config, opener=open_dataset)
    try:
        sock = listen.listen(args.host, args.port, backlog=min(2048, 4 * config.connections.max_connections))
    except OSError as e:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    port = sock.getsockname()[1]
    url = listen.url(config, port, token)
    for name, entry in app.state.server.registry.entries.items():
        out(f"serving {name} ({entry.path})")
    out(f"open {url}" + ("" if token or is_loopback(args.host) else "  (no authentication: --no-auth)"))
    sys.stdout.flush()
    # What the first page load asks for is opened while the browser starts.
    threading.Thread(target=app.state.server.registry.warm, name="motes-warm", daemon=True).start()
    if args.open:
        import webbrowser

        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    server = listen.server(app, config, log_level=args.log_level)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0


DESCRIPTION = """\
Serves the datasets, read-only, over HTTP (docs/http-api.md): the viewer app at /,
the API under /api/v1/. Prints the URL to open. On 127.0.0.1 (the default) no token
is needed; any other address needs --token (or --token-file) or an explicit --no-auth.
A dataset is named NAME=PATH, or by its directory's name without .motes."""

EXAMPLES = """\
  motes serve run.motes
  motes serve run.motes other=/data/other.motes --open
  motes serve run.motes --host 0.0.0.0 --token-file ~/.motes-token --max-points 4000000"""


def add_parser(subs) -> None:
    p = add_command(subs, "serve", "serve datasets over HTTP to the browser viewer and HTTP clients",
                    DESCRIPTION, EXAMPLES)
    p.add_argument("datasets", metavar="DATASET", nargs="+", help="dataset directory, or NAME=PATH")
    g = p.add_argument_group("network")
    g.add_argument("--host", default=HOST, help="address to listen on")
    g.add_argument("--port", type=int, default=PORT, help="port to listen on (0: any free port)")
    auth = g.add_mutually_exclusive_group()
    auth.add_argument("--token", default=None, help="every request must carry this token (Bearer header, token= "
                                                    "parameter, or the cookie the app page sets); other users see "
                                                    "it in ps: prefer --token-file")
    auth.add_argument("--token-file", metavar="FILE", default=None, help="read the token from FILE")
    auth.add_argument("--no-auth", action="store_true", help="serve without a token on a non-loopback address")
    g.add_argument("--allow-host", metavar="NAME", action="append", default=[],
                   help="also answer requests for this host name (a proxy's, a DNS name of this machine); "
                        "by default only 127.0.0.1, localhost, ::1 and the --host address ('*': any, "
                        "which lets web pages elsewhere read the data through DNS rebinding)")
    g.add_argument("--cors", metavar="ORIGIN", default=None,
                   help="allow this origin (e.g. http://localhost:5173) to call the API from a browser; "
                        "'*' (any) only with a token")
    g.add_argument("--cors-any-origin-without-token", action="store_true",
                   help="allow --cors '*' on a server without a token (every web page can read the data)")
    g.add_argument("--open", action="store_true", help="open the URL in a web browser")
    g.add_argument("--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug"),
                   help="uvicorn's log level (info: one line per request, tokens redacted)")
    g = p.add_argument_group("limits")
    g.add_argument("--workers", type=positive_int, default=os.cpu_count() or 1,
                   help="queries run at once (others wait)")
    for settings in (Limits, Connections):
        for f in dataclasses.fields(settings):
            option = f.metadata["option"]
            if option:
                kind = positive_float if f.type in ("float", float) else positive_int
                g.add_argument(option, dest=f.name, type=kind, default=f.default,
                               metavar="S" if kind is positive_float else "N", help=f"the most {f.metadata['what']}")
    p.set_defaults(func=cmd_serve)


def _options_of(settings, args) -> dict:
    """The fields of a settings class (Limits, Connections) that have options, from ``args``."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(settings) if f.metadata["option"]}

