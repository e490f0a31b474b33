"""Compression of responses (ASGI middleware): zstd level 1 when the request's
Accept-Encoding lists zstd, else gzip level 1, for bodies of at least 1 KiB and for
streamed bodies (exports), flushed chunk by chunk; ``Vary: Accept-Encoding`` on every
response. Large bodies are compressed in a worker thread, never in the event loop.

Binary bodies (frames, Arrow) are mostly float mantissas, where deflate's string matching
finds nothing: gzip codes them with the run-length strategy (Z_RLE), about 3x faster than
the default strategy for the same size."""

from __future__ import annotations

import zlib
from typing import Callable, List, Optional

import anyio
import anyio.to_thread
import zstandard

from .config import COMPRESS_MIN_BYTES

#: Bodies of numbers (gzip uses its run-length strategy on them).
_BINARY_TYPES = (b"application/vnd.motes.frame", b"application/vnd.apache.arrow.stream", b"application/octet-stream")
#: Bodies already compressed inside (sent as they are).
_COMPRESSED_TYPES = (b"application/vnd.apache.parquet", b"image/png", b"image/jpeg", b"font/woff2", b"application/zip")
_IN_THREAD = 64 << 10  # bodies past this are compressed in a worker thread


def choose(accept_encoding: str) -> Optional[str]:
    """'zstd' when listed (q > 0), else 'gzip' when listed, else None."""
    listed = {}
    for item in accept_encoding.split(","):
        name, _, params = item.strip().partition(";")
        q = 1.0
        for p in params.split(";"):
            key, _, value = p.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        listed[name.strip().lower()] = q
    for name in ("zstd", "gzip"):
        if listed.get(name, 0.0) > 0:
            return name
    return None


def _gzip(binary: bool):
    """A gzip stream (wbits 31: the gzip framing), level 1."""
    return zlib.compressobj(1, zlib.DEFLATED, 31, 8, zlib.Z_RLE if binary else zlib.Z_DEFAULT_STRATEGY)


class Compressor:
    """One body, whole or as a stream of chunks each flushed (the client can use it at once)."""

    def __init__(self, encoding: str, binary: bool = False):
        self.encoding = encoding
        if encoding == "zstd":
            self._z = zstandard.ZstdCompressor(level=1).compressobj()
        else:
            self._z = _gzip(binary)

    def chunk(self, data) -> bytes:
        if self.encoding == "zstd":
            return self._z.compress(data) + self._z.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        return self._z.compress(data) + self._z.flush(zlib.Z_SYNC_FLUSH)

    def end(self) -> bytes:
        return self._z.flush()


def compress(data, encoding: str, binary: bool = False) -> bytes:
    """A whole body."""
    if encoding == "zstd":
        return zstandard.ZstdCompressor(level=1).compress(data)
    z = _gzip(binary)
    return z.compress(data) + z.flush()


class CompressionMiddleware:
    def __init__(self, app, limiter: Optional[Callable[[], anyio.CapacityLimiter]] = None):
        self.app, self.limiter = app, limiter

    async def _run(self, fn, *args):
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter() if self.limiter else None)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        accept = ""
        for k, v in scope["headers"]:
            if k == b"accept-encoding":
                accept = v.decode("latin-1")
        encoding = choose(accept)
        start: Optional[dict] = None
        streaming: Optional[Compressor] = None
        passthrough = binary = False

        async def send_compressed(message):
            nonlocal start, streaming, passthrough, binary
            if message["type"] == "http.response.start":
                headers: List = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"vary"]
                vary = [v for k, v in message.get("headers", []) if k.lower() == b"vary"]
                headers.append((b"vary", b", ".join(vary + [b"Accept-Encoding"]) if vary else b"Accept-Encoding"))
                start = {**message, "headers": headers}
                names = {k.lower(): v for k, v in headers}
                media = names.get(b"content-type", b"").split(b";")[0].strip()
                binary = media in _BINARY_TYPES
                passthrough = (encoding is None or b"content-encoding" in names or message["status"] in (204, 304)
                               or media in _COMPRESSED_TYPES)
                if passthrough:
                    await send(start)
                return
            if message["type"] != "http.response.body" or passthrough:
                return await send(message)
            body, more = message.get("body", b""), message.get("more_body", False)
            if streaming is None and start is not None:  # the first body message decides
                if not more:
                    if len(body) < COMPRESS_MIN_BYTES:
                        await send(start)
                        start = None
                        passthrough = True
                        return await send(message)
                    packed = await self._run(compress, body, encoding, binary) if len(body) > _IN_THREAD else \
                        compress(body, encoding, binary)
                    await send(_with_encoding(start, encoding, len(packed)))
                    start = None
                    return await send({"type": "http.response.body", "body": packed})
                streaming = Compressor(encoding, binary)
                await send(_with_encoding(start, encoding, None))
                start = None
            out = await self._run(streaming.chunk, body) if len(body) > _IN_THREAD else streaming.chunk(body)
            if not more:
                out += streaming.end()
            await send({"type": "http.response.body", "body": out, "more_body": more})

        await self.app(scope, receive, send_compressed)


def _with_encoding(start: dict, encoding: str, length: Optional[int]) -> dict:
    headers = [(k, v) for k, v in start["headers"] if k.lower() not in (b"content-length", b"transfer-encoding")]
    headers.append((b"content-encoding", encoding.encode()))
    if length is not None:
        headers.append((b"content-length", str(length).encode()))
    return {**start, "headers": headers}
