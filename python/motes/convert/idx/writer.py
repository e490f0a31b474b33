"""Writes grid fields as an IDX version 6 dataset that OpenVisus reads.

    motes.convert.idx.write("run.idx", [(0, {"rho": rho0, "E": e0}), (10, {"rho": rho1, "E": e1})])

makes ``run.idx`` (the text header) and ``run/time_0000/0000.bin``... (the block files).
Choices (docs/convert-idx.md says why):

* bitmask: ``_core.hz_guess`` ("regular as soon as possible" from the finest bit), so
  that level k (every 2^k-th sample per axis) is a resolution OpenVisus reads; the last
  axis of the grid gets at least one bit (a size-1 z of a 3-D grid is padded to 2), so
  OpenVisus sees as many axes as the field has;
* blocks: 2^bits_per_block samples, row-major layout (OpenVisus reads those ~10x faster
  than HZ-ordered ones) or ``layout="hzorder"``; blocks wholly outside the grid are not
  written (missing blocks), nor are files that would hold only those;
* compression zip (zlib, ``zip_level``), lz4 (raw LZ4 block) or raw;
* time steps: the (time) line lists them, a folder per step (``time_%04d/``);
* geometry: (physic_box) for OpenVisus, the (motes) line for the rest (geometry.py).
"""

from __future__ import annotations

import operator
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, Iterable, List, Optional, Tuple

import numpy as np

from ... import _core
from ...errors import UsageError, storage_errors
from ...fields.model import Field, require_cartesian
from .. import destination
from . import geometry
from .blockfile import CODES, ROW_MAJOR, encode, write_block_file
from .header import COMPRESSIONS, LAYOUTS, IdxField, IdxHeader, check_name, dtype_name, guess_filename_template

__all__ = ["write", "TIME_TEMPLATE", "FILE_TARGET_BYTES"]

#: The folder of each time step in the block files' names.
TIME_TEMPLATE = "time_%04d/"

#: Default blocks per file: files of about this many uncompressed bytes (OpenVisus' guess).
FILE_TARGET_BYTES = 128 << 20


def _steps(steps) -> Iterable[Tuple[int, Dict[str, Field]]]:
    seen = set()
    try:
        it = iter(steps)
    except TypeError:
        raise UsageError("steps must be a sequence of (time, {name: motes.Field})") from None
    for item in it:
        try:
            time, fields = item
        except (TypeError, ValueError):
            raise UsageError(f"each step must be (time, {{name: motes.Field}}), got {type(item).__name__}") from None
        try:
            time = operator.index(time)
        except TypeError:
            raise UsageError(f"a step's time must be an integer, got {time!r}") from None
        if not 0 <= time < 1 << 31:
            raise UsageError(f"a step's time must be in [0, 2^31), got {time}")
        if time in seen:
            raise UsageError(f"time {time} is given twice")
        seen.add(time)
        if not isinstance(fields, dict) or not fields:
            raise UsageError(f"step {time}: the fields must be a non-empty dict {{name: motes.Field}}")
        out = {}
        for name, f in fields.items():
            check_name(name)
            out[name] = f if isinstance(f, Field) else Field(f)
            require_cartesian(out[name], f"step {time}, field '{name}'", "IDX")
        yield time, out


class _Grid:
    """What the first step fixes: dims, bitmask, blocks, fields."""

    def __init__(self, fields: Dict[str, Field], bits_per_block: int):
        first = next(iter(fields.values()))
        self.ndim, self.dims, self.shape = first.ndim, first.dims, first.shape
        guess = list(self.dims) + [1] * (3 - self.ndim)
        guess[self.ndim - 1] = max(guess[self.ndim - 1], 2)  # the last axis has a bit: OpenVisus' pdim
        self.bitmask = _core.hz_guess(tuple(guess), self.ndim)
        self.order = _core.HzOrder(self.bitmask)
        self.maxh = self.order.maxh
        self.bpb = min(bits_per_block, self.maxh)
        self.total = 1 << (self.maxh - self.bpb)
        self.first_field = first
        self.lattices = [self.order.block_lattice(self.bpb, b) for b in range(self.total)]
        dims3 = tuple(self.dims) + (1,) * (3 - self.ndim)
        self.present = [all(l[0][a] < dims3[a] for a in range(3)) for l in self.lattices]


def _block_maker(grid: _Grid, array: np.ndarray, layout: str, components: int):
    """A function of a block id giving the block's decoded samples (a contiguous array)."""
    dt = array.dtype
    comps = (components,) if components > 1 else ()
    B = 1 << grid.bpb
    if layout == "row-major":
        a3 = array.reshape((1,) * (3 - grid.ndim) + array.shape)

        def make(b: int) -> np.ndarray:
            (fx, fy, fz), (tx, ty, tz), (cx, cy, cz) = grid.lattices[b]
            src = a3[fz::1 << tz, fy::1 << ty, fx::1 << tx][:cz, :cy, :cx]
            if src.shape[:3] == (cz, cy, cx):
                return np.ascontiguousarray(src)
            blk = np.zeros((cz, cy, cx) + comps, dtype=dt)
            blk[: src.shape[0], : src.shape[1], : src.shape[2]] = src
            return blk
        return make
    parts = [array] if components == 1 else [np.ascontiguousarray(array[..., k]) for k in range(components)]

    def make_hz(b: int) -> np.ndarray:
        out = np.empty((B,) + comps, dtype=dt)
        if components == 1:
            grid.order.gather(parts[0], b * B, B, out)
        else:
            tmp = np.empty(B, dtype=dt)
            for k, p in enumerate(parts):
                grid.order.gather(p, b * B, B, tmp)
                out[:, k] = tmp
        return out
    return make_hz


def _check_destination(path: str, data_dir: str, overwrite: bool) -> None:
    for p in (path, data_dir):
        if not os.path.lexists(p):
            continue
        if not overwrite:
            raise UsageError(f"{p} exists (overwrite=True replaces an IDX dataset)")
    if os.path.lexists(path):
        head = b""
        if os.path.isfile(path):  # checked first: opening a FIFO would block
            try:
                with open(path, "rb") as f:
                    head = f.read(64).lstrip()
            except OSError:
                pass
        if not head.startswith(b"(version)"):
            raise UsageError(f"{path} exists and is not an IDX header; not replacing it")
    if os.path.lexists(data_dir):
        if not os.path.isdir(data_dir) or os.path.islink(data_dir):
            raise UsageError(f"{data_dir} exists and is not an IDX block folder; not replacing it")
        for root, _dirs, files in os.walk(data_dir):
            for name in files:
                if not name.endswith(".bin"):
                    raise UsageError(f"{data_dir} holds {os.path.join(root, name)}, not an IDX block file; "
                                     f"not replacing it")


def write(path, steps, *, compression: str = "zip", bits_per_block: int = 16, blocks_per_file: Optional[int] = None,
          layout: str = "row-major", zip_level: int = 1, threads: Optional[int] = None,
          overwrite: bool = False) -> IdxHeader:
    """Writes ``steps``, a sequence of ``(time, {name: motes.Field})``, as the IDX dataset
    ``path`` (a ``.idx`` header and a folder of block files named after it). Every step has
    the same fields (names, dtypes, components) on the same grid. Returns the header."""
    path = os.path.abspath(os.fspath(path))
    if compression not in COMPRESSIONS:
        raise UsageError(f"compression must be one of {', '.join(COMPRESSIONS)}, got {compression!r}")
    if layout not in LAYOUTS:
        raise UsageError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    if not isinstance(bits_per_block, int) or not 1 <= bits_per_block <= 30:
        raise UsageError(f"bits_per_block must be an integer in [1, 30], got {bits_per_block!r}")
    if blocks_per_file is not None and (not isinstance(blocks_per_file, int) or blocks_per_file < 1):
        raise UsageError(f"blocks_per_file must be a positive integer, got {blocks_per_file!r}")
    if not isinstance(zip_level, int) or not 0 <= zip_level <= 9:
        raise UsageError(f"zip_level must be an integer in [0, 9], got {zip_level!r}")
    threads = threads or min(4, os.cpu_count() or 1)
    parent, base = os.path.split(path)
    stem = os.path.splitext(base)[0]
    if not stem or not base.endswith(".idx"):
        raise UsageError(f"an IDX dataset's path ends in .idx, got {path}")
    data_dir = os.path.join(parent, stem)
    _check_destination(path, data_dir, overwrite)
    with storage_errors(parent, "cannot write the IDX dataset"):
        stage = destination.staging_folder(parent)
    try:
        header = _write(os.path.join(stage, base), steps, compression, bits_per_block, blocks_per_file, layout,
                        zip_level, threads)
        with storage_errors(path, "cannot write the IDX dataset"):
            if os.path.lexists(path):
                os.remove(path)
            if os.path.lexists(data_dir):
                shutil.rmtree(data_dir)
            if os.path.isdir(os.path.join(stage, stem)):
                os.rename(os.path.join(stage, stem), data_dir)
            os.rename(os.path.join(stage, base), path)
        return header
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _write(path: str, steps, compression: str, bits_per_block: int, blocks_per_file: Optional[int], layout: str,
           zip_level: int, threads: int) -> IdxHeader:
    grid: Optional[_Grid] = None
    header: Optional[IdxHeader] = None
    kinds: Dict[str, Tuple[np.dtype, int]] = {}
    times: List[int] = []
    folder = os.path.dirname(path)
    flags = CODES[compression] | (ROW_MAJOR if layout == "row-major" else 0)
    with ThreadPoolExecutor(threads) as pool:
        for time, fields in _steps(steps):
            if grid is None:
                for name, f in fields.items():
                    kinds[name] = (f.array.dtype.newbyteorder("<"), f.array.shape[-1] if f.components else 1)
                    dtype_name(f.array.dtype)
                grid = _Grid(fields, bits_per_block)
                per_block = sum(np.dtype(d).itemsize * c for d, c in kinds.values()) << grid.bpb
                bpf = blocks_per_file or max(1, FILE_TARGET_BYTES // per_block)
                bpf = min(bpf, grid.total)
                header = IdxHeader(
                    dims=tuple(grid.dims), bitmask=grid.bitmask, bits_per_block=grid.bpb, blocks_per_file=bpf,
                    fields=[IdxField(n, np.dtype(d), c, compression, layout) for n, (d, c) in kinds.items()],
                    time_template=TIME_TEMPLATE,
                    filename_template=guess_filename_template(grid.maxh, grid.bpb, path),
                    physic_box=geometry.physic_box(grid.first_field), motes=geometry.motes_meta(fields))
            _check_step(time, fields, kinds, grid)
            makers = []
            for name, (dt, comps) in kinds.items():  # the header's order, whatever the step's dict order
                f = fields[name]
                a = f.array if f.array.dtype == dt else f.array.astype(dt)
                makers.append(_block_maker(grid, np.ascontiguousarray(a), layout, comps))
            bpf = header.blocks_per_file
            for first in range(0, grid.total, bpf):
                slots = [b for b in range(first, min(first + bpf, grid.total)) if grid.present[b]]
                if not slots:
                    continue
                tasks = [(k, b) for k in range(len(makers)) for b in slots]

                def job(task, makers=makers):
                    k, b = task
                    return k, b - first, encode(memoryview(makers[k](b)).cast("B"), compression, zip_level), flags
                name = os.path.join(folder, header.block_filename(time, first))
                with storage_errors(name, "cannot write the IDX block file"):
                    os.makedirs(os.path.dirname(name), exist_ok=True)
                write_block_file(name, len(makers), bpf, pool.map(job, tasks))
            times.append(time)
    if header is None:
        raise UsageError("steps is empty: an IDX dataset needs at least one time step")
    header.times = tuple(sorted(times))
    with storage_errors(path, "cannot write the IDX header"):
        with open(path, "w", encoding="ascii", newline="\n") as f:
            f.write(header.text())
    return header


def _check_step(time: int, fields: Dict[str, Field], kinds, grid: _Grid) -> None:
    if set(fields) != set(kinds):
        raise UsageError(f"step {time} has fields {sorted(fields)}; every step needs the first's: {sorted(kinds)}")
    for name, f in fields.items():
        dt, comps = kinds[name]
        if f.array.dtype.newbyteorder("<") != dt or (f.array.shape[-1] if f.components else 1) != comps:
            raise UsageError(f"step {time}: field '{name}' is {f.array.dtype} with {comps if f.components else 1} "
                             f"components; the first step's is {dt} with {comps} (one IDX header for all steps)")
        if not geometry.same_grid(f, grid.first_field):
            raise UsageError(f"step {time}: field '{name}' is not on the grid of the first step's first field "
                             f"(shape {f.shape} vs {grid.shape}, or another origin, spacing, coords or centering); "
                             f"an IDX dataset has one grid")
