"""Reads IDX version 6 datasets (ours and OpenVisus'): any box, any level, only the blocks
the box needs (``HzOrder.blocks_for_box``); row-major blocks are copied as strided boxes
(``HzOrder.block_lattice``), HZ-ordered ones through ``HzOrder.scatter``.

    ds = motes.convert.idx.read("run.idx")
    ds.fields, ds.times, ds.dims, ds.bitmask
    rho = ds.read("rho", time=10, box=((0, 0, 0), (64, 64, 32)), level=1)   # (z, y, x)
    f = ds.to_field("E", time=10)                                            # motes.Field
"""

from __future__ import annotations

import os
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from ... import _core
from ...errors import FormatError, UsageError, storage_errors
from ...fields.model import Field
from ..input_files import confined, open_regular
from . import geometry
from .blockfile import ROW_MAJOR, BlockFile
from .header import IdxField, IdxHeader
from .parse import parse

__all__ = ["read", "IdxDataset", "MAX_HEADER_BYTES"]

#: A .idx header larger than this is not one.
MAX_HEADER_BYTES = 64 << 20

_OPEN_FILES = 64
_CHUNK_BLOCKS = 64


def read(path, *, threads: Optional[int] = None) -> "IdxDataset":
    """Opens the IDX dataset whose header is ``path`` (a ``.idx`` file); ``threads`` read and
    decode blocks (default: up to 4)."""
    return IdxDataset(path, threads=threads)




def _axis_take(f: int, t: int, c: int, lo: int, hi: int, s: int, out_first: int):
    """The block indexes (a slice) and output indexes (a slice) of one axis: block points
    f + i·2^t (i < c) inside [lo, hi) on the lattice of stride 2^s go to (p >> s) - out_first."""
    step = 1 << t
    i0 = max(0, -(-(lo - f) // step))
    i1 = min(c, -(-(hi - f) // step))
    if t >= s:
        if f & ((1 << s) - 1):
            return None
        di = 1
    else:
        di = 1 << (s - t)
        if f & (step - 1):
            return None
        # the first i >= i0 with f + i·2^t a multiple of 2^s
        r = (-(f >> t)) % di
        i0 += (r - i0) % di
    if i0 >= i1:
        return None
    n = (i1 - i0 + di - 1) // di
    o0 = ((f + i0 * step) >> s) - out_first
    do = max(1, step >> s)
    return slice(i0, i0 + (n - 1) * di + 1, di), slice(o0, o0 + (n - 1) * do + 1, do)


class IdxDataset:
    """An open IDX dataset: its header, and reads of boxes at levels."""

    def __init__(self, path, *, threads: Optional[int] = None):
        self.path = os.path.abspath(os.fspath(path))
        self.threads = threads or min(4, os.cpu_count() or 1)
        with storage_errors(self.path, "cannot read the IDX header"):
            if os.path.isdir(self.path):
                raise UsageError(f"{self.path} is a folder; an IDX dataset is opened by its .idx header file")
            # opened without blocking and checked: a FIFO or a device is refused, not read
            with os.fdopen(open_regular(self.path, "IDX header"), "rb") as f:
                raw = f.read(MAX_HEADER_BYTES + 1)
        if len(raw) > MAX_HEADER_BYTES:
            raise FormatError(f"{self.path}: larger than {MAX_HEADER_BYTES} bytes, not an IDX header")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise FormatError(f"{self.path}: not an IDX header (not UTF-8 text at byte {e.start})") from None
        if "\0" in text:
            raise FormatError(f"{self.path}: not an IDX header (it holds NUL bytes)")
        self.header: IdxHeader = parse(text, self.path)
        self._order = _core.HzOrder(self.header.bitmask)
        self._files: "OrderedDict[str, BlockFile]" = OrderedDict()
        self._executor: Optional[ThreadPoolExecutor] = None

    # -- what is there ----------------------------------------------------------------------
    @property
    def fields(self) -> Dict[str, IdxField]:
        """The fields by name (``.dtype``, ``.components``, ``.compression``, ``.layout``)."""
        return {f.name: f for f in self.header.fields}

    @property
    def times(self) -> Optional[Tuple]:
        """The time steps (None for a '* * template' (time) line, which does not list them)."""
        return self.header.times

    @property
    def dims(self) -> Tuple[int, ...]:
        """Sample counts, (x, y, z) order (as many as the grid has axes)."""
        return self.header.dims

    @property
    def ndim(self) -> int:
        return self.header.ndim

    @property
    def bitmask(self) -> str:
        return self.header.bitmask

    @property
    def maxh(self) -> int:
        return self._order.maxh

    @property
    def levels(self) -> int:
        """The coarsest level: read(level=levels) is one sample per axis."""
        return _core.hz_levels(self.header.bitmask)

    def resolution_of_level(self, level: int) -> int:
        return _core.hz_resolution_of_level(self.header.bitmask, level)

    def close(self) -> None:
        for bf in self._files.values():
            bf.close()
        self._files.clear()
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        return (f"IdxDataset({self.path!r}, dims={self.dims}, fields={list(self.fields)}, "
                f"times={self.times if self.times is None or len(self.times) < 8 else str(len(self.times)) + ' steps'}"
                f", bitmask={self.bitmask})")

    # -- reading ---------------------------------------------------------------------------
    def _box(self, box) -> Tuple[Tuple[int, int, int], Tuple[int, int, int]]:
        n = self.ndim
        dims3 = tuple(self.dims) + (1,) * (3 - n)
        if box is None:
            return (0, 0, 0), dims3
        try:
            b = np.asarray(box, dtype=np.float64)
        except (TypeError, ValueError):
            b = None
        if b is None or b.size != 2 * n or not np.all(np.isfinite(b)) or np.any(b != np.round(b)):
            raise UsageError(f"box must be ((lo x, y, z), (hi x, y, z)) with {n} integer index(es) each, "
                             f"half-open, got {box!r}")
        b = b.reshape(2, n).astype(np.int64)
        lo = tuple(int(v) for v in b[0]) + (0,) * (3 - n)
        hi = tuple(int(v) for v in b[1]) + (1,) * (3 - n)
        for a in range(n):
            if not 0 <= lo[a] < hi[a] <= dims3[a]:
                raise UsageError(f"box axis {'xyz'[a]} [{lo[a]}, {hi[a]}) is empty or outside the grid's "
                                 f"[0, {dims3[a]})")
        return lo, hi

    def read(self, field: Optional[str] = None, time=None, box=None, level: int = 0,
             resolution: Optional[int] = None) -> np.ndarray:
        """The samples of ``field`` at ``time`` in ``box`` (index box, ((x0, y0, z0), (x1, y1,
        z1)), half-open; None: the grid) at ``level`` k: those whose indexes are multiples of
        2^k along each axis, i.e. ``full[::2**k, ::2**k, ::2**k]`` restricted to the box.
        ``resolution`` r instead gives OpenVisus' resolution r (the first r bits of the
        bitmask). An array (z, y, x) (as many axes as the grid; a last axis of components
        for a vector field); missing blocks read as the field's default value."""
        h = self.header
        f = h.fields[0] if field is None else h.field(field)
        if time is None:
            if not h.times:
                raise UsageError(f"{self.path}: the (time) line does not list the time steps; give time=")
            time = h.times[0]
        elif h.times is not None and time not in h.times:
            raise UsageError(f"no time {time} (times: {_times_text(h.times)})")
        if resolution is None:
            if not isinstance(level, (int, np.integer)) or level < 0:
                raise UsageError(f"level must be an integer >= 0, got {level!r}")
            resolution = self.resolution_of_level(int(level))
        elif not isinstance(resolution, (int, np.integer)) or not 0 <= resolution <= self.maxh:
            raise UsageError(f"resolution must be an integer in [0, {self.maxh}], got {resolution!r}")
        resolution = int(resolution)
        lo, hi = self._box(box)
        sb = _core.hz_stride_bits(h.bitmask, resolution)
        first = tuple(-(-lo[a] // (1 << sb[a])) for a in range(3))
        count = tuple(-(-hi[a] // (1 << sb[a])) - first[a] for a in range(3))
        comps = (f.components,) if f.components > 1 else ()
        out3 = np.full((count[2], count[1], count[0]) + comps, f.default_value, dtype=f.dtype)
        B = 1 << h.bits_per_block
        nbytes = B * f.sample_size
        index = h.fields.index(f)
        where = f"of field '{f.name}' at time {time}"
        for blocks in self._chunks(time, self._order.blocks_for_box(h.bits_per_block, resolution, lo, hi)):
            # Files are opened here (NotFoundError names a missing one); blocks are read and
            # decoded by threads (pread, zlib and lz4 release the GIL) and placed in order.
            files = [self._file(time, b) for b in blocks]

            def fetch(i, blocks=blocks, files=files):
                return files[i].read(index, h.block_position(blocks[i]), nbytes, f"block {blocks[i]} {where}")
            pool = self._pool() if len(blocks) > 1 else None
            for b, got in zip(blocks, (pool.map if pool else map)(fetch, range(len(blocks)))):
                if got is None:
                    continue
                data, flags = got
                samples = np.frombuffer(data, dtype=f.dtype)
                if flags & ROW_MAJOR:
                    self._put_box(samples, b, lo, hi, sb, first, out3, comps)
                else:
                    n = min(B, (1 << resolution) - b * B)  # the block's samples at this resolution
                    self._put_hz(samples, b * B, n, lo, hi, sb, first, out3, f.components)
            self._trim()
        shape = out3.shape[3 - self.ndim:]
        return out3.reshape(shape)

    def _put_box(self, samples, block, lo, hi, sb, first, out3, comps) -> None:
        f, t, c = self._order.block_lattice(self.header.bits_per_block, block)
        src = samples.reshape((c[2], c[1], c[0]) + comps)
        src_idx, out_idx = [], []
        for a in (2, 1, 0):
            take = _axis_take(f[a], t[a], c[a], lo[a], hi[a], sb[a], first[a])
            if take is None:
                return
            src_idx.append(take[0])
            out_idx.append(take[1])
        out3[tuple(out_idx)] = src[tuple(src_idx)]

    def _put_hz(self, samples, first_hz, n, lo, hi, sb, first, out3, components) -> None:
        if components == 1:
            self._order.scatter(samples[:n], first_hz, lo, hi, sb, first, out3)
            return
        comp = samples.reshape(-1, components)[:n]
        tmp = np.empty(out3.shape[:3], dtype=out3.dtype)
        for k in range(components):
            tmp[...] = out3[..., k]
            self._order.scatter(np.ascontiguousarray(comp[:, k]), first_hz, lo, hi, sb, first, tmp)
            out3[..., k] = tmp

    def _chunks(self, time, blocks):
        """The blocks in runs that need at most _OPEN_FILES files (and at most _CHUNK_BLOCKS blocks: the decoded blocks in flight)."""
        chunk, names = [], set()
        for b in blocks:
            name = self.header.block_filename(time, b)
            if chunk and (len(chunk) >= _CHUNK_BLOCKS or (name not in names and len(names) >= _OPEN_FILES)):
                yield chunk
                chunk, names = [], set()
            chunk.append(b)
            names.add(name)
        if chunk:
            yield chunk

    def _pool(self) -> Optional[ThreadPoolExecutor]:
        if self.threads <= 1:
            return None
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.threads, thread_name_prefix="motes-idx")
        return self._executor

    def _file(self, time, block: int) -> BlockFile:
        h = self.header
        name = h.block_filename(time, block)
        bf = self._files.get(name)
        if bf is None:
            # NotFoundError names a missing file, FormatError one outside the folder or not regular
            bf = BlockFile(self._resolve(name), len(h.fields), h.blocks_per_file)
            self._files[name] = bf
        else:
            self._files.move_to_end(name)
        return bf

    def _trim(self) -> None:
        while len(self._files) > _OPEN_FILES:
            self._files.popitem(last=False)[1].close()

    def _resolve(self, name: str) -> str:
        """The real path of a block file the header names: under the folder of the .idx file
        (symbolic links resolved, in the time folders too), else FormatError: an absolute
        template, '../' or a link out of the folder would read any file into the output."""
        folder = os.path.dirname(self.path)
        name = name.replace("$(CurrentFileDirectory)", folder)
        path = os.path.normpath(name if os.path.isabs(name) else os.path.join(folder, name))
        try:
            return confined(folder, path, "block file")
        except FormatError as e:
            raise FormatError(f"{self.path}: (filename_template) {self.header.filename_template}: {e}") from None

    def to_field(self, field: Optional[str] = None, time=None) -> Field:
        """The whole field at ``time`` as a motes.Field, with the header's geometry."""
        f = self.header.fields[0] if field is None else self.header.field(field)
        a = self.read(f.name, time)
        return geometry.field_of(a, f.name, self.ndim, self.dims,
                                 self.header, self.path)


def _times_text(times: Sequence) -> str:
    ts = list(times)
    return ", ".join(str(t) for t in ts) if len(ts) <= 10 else f"{ts[0]} ... {ts[-1]} ({len(ts)} steps)"
