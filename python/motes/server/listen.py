"""Running the app on a listening socket: uvicorn with the connection rules of
``Config.connections`` (a deadline on every request head, an idle timeout between kept-alive
requests and on a response the client does not read, a cap on open connections, a shutdown
that does not wait for stalled clients) and an access log that never shows a token.
``motes serve`` and the tests' live servers both start servers through ``server()``."""

from __future__ import annotations

import logging
import socket
import time
from typing import Optional

from .config import SHUTDOWN_GRACE, WILDCARD_HOSTS, Config, Connections
from .errors import error_body
from .security import redact

log = logging.getLogger("motes.server")


class RedactTokens(logging.Filter):
    """Takes tokens out of the URLs of uvicorn's access log (its arguments hold the path
    with its query string)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


def _plain_response(status: int, reason: str, kind: str, message: str) -> bytes:
    body = error_body(status, kind, message)
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json; charset=utf-8\r\n"
            f"cache-control: no-store\r\nconnection: close\r\ncontent-length: {len(body)}\r\n\r\n").encode() + body


class _CountingTransport:
    """A transport that counts the bytes written to it: with what it still holds
    (``get_write_buffer_size``), the bytes the client took so far."""

    def __init__(self, transport, written):
        self._transport, self._written = transport, written
        self.bytes_written = 0

    def write(self, data) -> None:
        self._transport.write(data)
        self.bytes_written += len(data)
        self._written()

    def writelines(self, lines) -> None:
        for data in lines:
            self.write(data)

    def __getattr__(self, name):
        return getattr(self._transport, name)


def protocol_class(rules: Connections):
    """uvicorn's HTTP protocol (httptools when installed, as uvicorn picks it, else h11) with
    a deadline on each request head, a cap on open connections, an idle timeout on sending
    (a connection whose unsent bytes make no progress for ``idle_timeout`` seconds is
    dropped: a client that asked for an export and never reads it) and a shutdown that drops
    the connections still open SHUTDOWN_GRACE seconds after it began."""
    try:
        import httptools  # noqa: F401

        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base
    except ImportError:  # pragma: no cover (uvicorn[standard] brings httptools)
        from uvicorn.protocols.http.h11_impl import H11Protocol as Base

    slow = _plain_response(408, "Request Timeout", "timeout",
                           f"the request's head did not arrive within {rules.header_timeout:g} s (--header-timeout)")
    full = _plain_response(503, "Service Unavailable", "too_large",
                           f"the server has {rules.max_connections} connections open, its limit "
                           "(--max-connections); try again later")

    check_every = max(0.05, rules.idle_timeout / 4)

    class Protocol(Base):
        _head_timer = None
        _head_cycle = None
        _send_timer = None
        _shutdown_timer = None
        _flushed = 0  # bytes the client took, when last seen to grow
        _flushed_at = 0.0

        def connection_made(self, transport) -> None:
            super().connection_made(_CountingTransport(transport, self._written))
            if len(self.connections) > rules.max_connections:
                transport.write(full)
                transport.close()
                return
            self._arm_head_timer()

        def data_received(self, data: bytes) -> None:
            # Between requests, the first bytes start a new head: its deadline runs from now.
            if self._head_timer is None and (self.cycle is None or self.cycle.response_complete):
                self._arm_head_timer()
            super().data_received(data)
            # A new request cycle exists once its head is complete.
            if self._head_timer is not None and self.cycle is not self._head_cycle:
                self._cancel_head_timer()

        def connection_lost(self, exc) -> None:
            self._cancel_head_timer()
            for timer in (self._send_timer, self._shutdown_timer):
                if timer is not None:
                    timer.cancel()
            self._send_timer = self._shutdown_timer = None
            super().connection_lost(exc)

        def shutdown(self) -> None:
            super().shutdown()  # closes an idle connection, lets a response in progress end
            if self._shutdown_timer is None:
                self._shutdown_timer = self.loop.call_later(SHUTDOWN_GRACE, self._drop, "the server is stopping")

        def _drop(self, why: str) -> None:
            """Closes the connection at once, unsent bytes and all; its request's work stops
            (the endpoint sees the disconnect)."""
            self._shutdown_timer = None
            log.info("%s: connection dropped: %s", self.client, why)
            self.transport.abort()

        # Sending: while unsent bytes wait, the bytes the client took are checked every
        # check_every seconds; none for idle_timeout seconds drops the connection.
        def _written(self) -> None:
            if self._send_timer is None and self.transport.get_write_buffer_size() > 0:
                self._flushed, self._flushed_at = self._sent(), time.monotonic()
                self._send_timer = self.loop.call_later(check_every, self._check_send)

        def _sent(self) -> int:
            return self.transport.bytes_written - self.transport.get_write_buffer_size()

        def _check_send(self) -> None:
            self._send_timer = None
            if self.transport.get_write_buffer_size() == 0:
                return
            sent, now = self._sent(), time.monotonic()
            if sent > self._flushed:
                self._flushed, self._flushed_at = sent, now
            elif now - self._flushed_at >= rules.idle_timeout:
                self._drop(f"the client took no byte of the response for {rules.idle_timeout:g} s (--idle-timeout)")
                return
            self._send_timer = self.loop.call_later(check_every, self._check_send)

        def _arm_head_timer(self) -> None:
            self._head_cycle = self.cycle
            self._head_timer = self.loop.call_later(rules.header_timeout, self._head_timed_out)

        def _cancel_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_timed_out(self) -> None:
            self._head_timer = None
            if not self.transport.is_closing():
                self.transport.write(slow)
                self.transport.close()

    return Protocol


def server(app, config: Config, log_level: str = "warning"):
    """A uvicorn.Server of ``app`` by the rules of ``config``; run it with
    ``.run(sockets=[sock])``."""
    import uvicorn

    rules = config.connections
    conf = uvicorn.Config(app, log_level=log_level, lifespan="off", server_header=False,
                          http=protocol_class(rules), timeout_keep_alive=max(1, int(round(rules.idle_timeout))),
                          timeout_graceful_shutdown=2 * SHUTDOWN_GRACE,
                          backlog=min(2048, 4 * rules.max_connections))
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactTokens) for f in access.filters):
        access.addFilter(RedactTokens())
    return uvicorn.Server(conf)


def listen(host: str, port: int, backlog: int = 128) -> socket.socket:
    """A socket listening on host:port (port 0: any free one). OSError when it cannot."""
    bare = host.strip("[]")
    sock = socket.socket(socket.AF_INET6 if ":" in bare else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bare, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock


def url(config: Config, port: int, token: Optional[str] = None) -> str:
    """The address to open: the bound host (this machine's name for every interface)."""
    from urllib.parse import quote

    shown = socket.gethostname() if config.host.strip("[]") in WILDCARD_HOSTS else config.host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/" + (f"?token={quote(token, safe='')}" if token else "")
