"""The bodies of points and field samples requests: the frame (docs/http-api.md, "The
frame": a JSON header and 8-aligned columns in one buffer, gathered in place by the core)
and the Arrow IPC stream. Both are built in a worker thread, from the cells' selections
(points) or from arrays read already (the samples of a grid field)."""

from __future__ import annotations

import json
import struct
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..dtypes import name_of, numpy_dtype

MAGIC = b"MOTESFRM"
VERSION = 1
MEDIA_TYPE = "application/vnd.motes.frame"
ARROW_MEDIA_TYPE = "application/vnd.apache.arrow.stream"
_PREFIX = 16  # magic, version, header length
_ROOM = 32  # bytes of the header kept for query_ms, known only once the columns are gathered
F32 = name_of(np.float32)


def align8(n: int) -> int:
    return (n + 7) & ~7


def _json(header: Dict[str, Any]) -> bytes:
    return json.dumps(header, separators=(",", ":"), allow_nan=False).encode()


class Columns:
    """The columns asked for, how each is sent (its stored dtype, or float32 minus the
    origin for positions), and the rows of each cell's selection."""

    def __init__(self, names: Sequence[str], stored: Dict[str, str], f32: bool, origin: Optional[Sequence[float]],
                 selections: Sequence[Any]):
        self.names = list(names)
        self.f32 = f32
        self.origin = [float(v) for v in origin] if origin is not None else None
        self.dtypes = [np.dtype(np.float32) if f32 else numpy_dtype(stored[n]) for n in self.names]
        self.selections = selections
        self.rows = [0 if s is None else int(s.size) for s in selections]
        self.total = sum(self.rows)

    def subtract(self, name: str) -> float:
        if self.f32 and self.origin is not None and name in ("x", "y", "z"):
            return self.origin["xyz".index(name)]
        return 0.0

    def cells(self) -> Optional[List[Dict[str, int]]]:
        return [{"rows": r} for r in self.rows]

    def gather_into(self, k: int, buffer: np.ndarray, offset: int) -> None:
        """Column k of every cell, one after the other, into buffer from byte offset."""
        name, size = self.names[k], self.dtypes[k].itemsize
        for sel, rows in zip(self.selections, self.rows):
            if rows:
                sel.gather_into(name, 0, rows, buffer, offset, dtype=F32 if self.f32 else "native",
                                subtract=self.subtract(name))
                offset += rows * size


class Arrays:
    """Columns that are arrays already (each flattened in C order), as a frame's or an Arrow
    stream's columns; no cells."""

    def __init__(self, arrays: Dict[str, np.ndarray]):
        self.names = list(arrays)
        self.arrays = [np.ascontiguousarray(a).reshape(-1) for a in arrays.values()]
        self.dtypes = [a.dtype for a in self.arrays]
        sizes = {a.size for a in self.arrays}
        if len(sizes) > 1:
            raise ValueError("the columns of a frame have one length")
        self.total = sizes.pop() if sizes else 0

    def cells(self) -> Optional[List[Dict[str, int]]]:
        return None

    def gather_into(self, k: int, buffer: np.ndarray, offset: int) -> None:
        a = self.arrays[k]
        buffer[offset:offset + a.nbytes] = a.view(np.uint8)


def _cells(columns) -> Dict[str, Any]:
    cells = columns.cells()
    return {} if cells is None else {"cells": cells}


def frame(columns, extra: Dict[str, Any], started: float) -> memoryview:
    """The frame of the columns; ``extra`` adds header fields (to, origin, estimate)."""
    header = {"rows": columns.total,
              "columns": [{"name": n, "dtype": name_of(d), "offset": 0, "bytes": columns.total * d.itemsize}
                          for n, d in zip(columns.names, columns.dtypes)],
              **extra, **_cells(columns), "query_ms": 0.0}
    sizes = [c["bytes"] for c in header["columns"]]
    room = len(_json(header)) + _ROOM
    while True:  # offsets depend on the header's length, which depends on the offsets' digits
        pos = align8(_PREFIX + room)
        for c, size in zip(header["columns"], sizes):
            c["offset"] = pos
            pos = align8(pos + size)
        if len(_json(header)) + _ROOM <= room:
            break
        room = len(_json(header)) + _ROOM
    end = header["columns"][-1]["offset"] + sizes[-1] if sizes else align8(_PREFIX + room)
    buf = np.empty(end, dtype=np.uint8)
    first = header["columns"][0]["offset"] if sizes else end
    buf[:first] = 0
    for k, c in enumerate(header["columns"]):
        columns.gather_into(k, buf, c["offset"])
        stop = c["offset"] + sizes[k]
        buf[stop:align8(stop) if k + 1 < len(sizes) else stop] = 0  # the zero bytes up to the next column
    header["query_ms"] = round((time.perf_counter() - started) * 1e3, 3)
    text = _json(header)
    if len(text) > room:  # cannot happen: room holds any query_ms
        raise RuntimeError("frame header outgrew its room")
    text += b" " * (room - len(text))  # JSON allows trailing spaces
    buf[:_PREFIX] = np.frombuffer(MAGIC + struct.pack("<II", VERSION, room), dtype=np.uint8)
    buf[_PREFIX:_PREFIX + room] = np.frombuffer(text, dtype=np.uint8)
    return memoryview(buf)


def arrow(columns, extra: Dict[str, Any], started: float) -> memoryview:
    """One record batch in an Arrow IPC stream; ``to``, ``cells``, ``query_ms`` (and the
    other header fields of a frame) in the schema's metadata, as JSON text. ``columns``:
    a Columns or Arrays."""
    import pyarrow as pa

    arrays: List[np.ndarray] = []
    for k, dt in enumerate(columns.dtypes):
        a = np.empty(columns.total, dtype=dt)
        columns.gather_into(k, a.view(np.uint8), 0)
        arrays.append(a)
    meta = {**extra, **_cells(columns),
            "query_ms": round((time.perf_counter() - started) * 1e3, 3)}
    batch = pa.record_batch([pa.array(a) for a in arrays], names=columns.names,
                            metadata={k: json.dumps(v) for k, v in meta.items()})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return memoryview(sink.getvalue())


def parse(body: bytes) -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    """The header and the columns of a frame (what a client does; the tests have their own)."""
    if body[:8] != MAGIC:
        raise ValueError("not a motes frame")
    _version, h = struct.unpack_from("<II", body, 8)
    header = json.loads(bytes(body[_PREFIX:_PREFIX + h]))
    cols = {c["name"]: np.frombuffer(body, dtype=numpy_dtype(c["dtype"]), count=header["rows"], offset=c["offset"])
            for c in header["columns"]}
    return header, cols
