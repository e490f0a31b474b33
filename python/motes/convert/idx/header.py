"""The text header of an IDX dataset (the ``.idx`` file), version 6, as OpenVisus reads
and writes it (``IdxFile::readFromOldFormat`` / ``writeToOldFormat``): lines ``(key)``
followed by the key's value on the next lines; whole lines starting with ``#`` are comments.

    (version)            6
    (box)                x0 x1 y0 y1 z0 z1        inclusive sample indexes, one pair per axis
    (physic_box)         a0 b0 a1 b1 a2 b2        the logic box [0, n) mapped onto [a, b)
    (fields)             rho float32 default_compression(zip) default_layout() default_value(0)
                         + E float32[3] ...       fields joined by '+'
    (bits)               V012012012               the bitmask, coarsest bit first
    (bitsperblock)       16
    (blocksperfile)      256
    (interleave block)   0
    (time)               0 9 time_%04d/           or  time_%04d/ (0,4,1) (7,7,1)  or  * * time_%04d/
    (filename_template)  ./name/%04x.bin          './' is the .idx file's folder
    (missing_blocks)     0
    (motes)              {...}                    one JSON line: what IDX cannot say (ours)

Its parser is :mod:`motes.convert.idx.parse` (every problem of a header a FormatError
naming the file, the line and the key). :func:`block_filename` is OpenVisus'
``GetFilenameV56``: the block file of a block id.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from ...errors import FormatError, UsageError

__all__ = ["IdxField", "IdxHeader", "block_filename", "guess_filename_template", "IDX_DTYPES",
           "dtype_name", "COMPRESSIONS", "LAYOUTS", "MAX_TIMES", "check_name"]

#: IDX scalar dtype names and their numpy dtypes (samples are stored little-endian).
IDX_DTYPES: Dict[str, np.dtype] = {
    **{f"int{b}": np.dtype(f"<i{b // 8}") for b in (8, 16, 32, 64)},
    **{f"uint{b}": np.dtype(f"<u{b // 8}") for b in (8, 16, 32, 64)},
    "float32": np.dtype("<f4"), "float64": np.dtype("<f8"),
}

#: Block compressions motes reads and writes ("raw" is IDX's empty compression).
COMPRESSIONS = ("raw", "zip", "lz4")

#: Block layouts: OpenVisus' ``default_layout(hzorder)`` and ``default_layout()``.
LAYOUTS = ("row-major", "hzorder")

#: More time steps than this in a (time) line is taken for damage.
MAX_TIMES = 1_000_000

_NAME = re.compile(r"[A-Za-z0-9_.\-:@$%^&*!?/<>=~|;,'\"`]+")
TIME_TEMPLATE = re.compile(r"(?:[^%]|%%)*%[-+ 0#]*[0-9]{0,3}[di](?:[^%]|%%)*")


def dtype_name(dtype: np.dtype) -> str:
    """The IDX name of a numpy scalar dtype (float32 -> "float32")."""
    dt = np.dtype(dtype)
    for name, d in IDX_DTYPES.items():
        if d.kind == dt.kind and d.itemsize == dt.itemsize:
            return name
    raise UsageError(f"IDX stores int8-64, uint8-64, float32 and float64 samples, not {dt}")


def check_name(name: str) -> str:
    """A field name OpenVisus parses back: printable ASCII without spaces, '#', '+' or brackets."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name.startswith("#"):
        raise UsageError(f"an IDX field name must be printable ASCII without spaces, '#', '+' or brackets, "
                         f"got {name!r}")
    return name


@dataclass
class IdxField:
    """One field of the (fields) line: ``name dtype default_compression(c) default_layout(l) ...``."""

    name: str
    dtype: np.dtype                 # scalar, little-endian
    components: int = 1             # float32[3] -> 3
    compression: str = "raw"        # the default compression ("raw", "zip", "lz4" or another OpenVisus name)
    layout: str = "row-major"       # the default layout: "row-major" or "hzorder"
    default_value: int = 0          # the value of samples in missing blocks

    @property
    def sample_size(self) -> int:
        return self.dtype.itemsize * self.components

    @property
    def idx_dtype(self) -> str:
        base = dtype_name(self.dtype)
        return f"{base}[{self.components}]" if self.components > 1 else base

    def text(self) -> str:
        compression = "" if self.compression == "raw" else self.compression
        layout = "hzorder" if self.layout == "hzorder" else ""
        zeros = " ".join(["0"] * self.components)
        return (f"{self.name} {self.idx_dtype} default_compression({compression}) default_layout({layout}) "
                f"default_value({self.default_value}) min({zeros}) max({zeros})")


@dataclass
class IdxHeader:
    """The content of a ``.idx`` file. ``dims`` are (x, y, z) sample counts, as many as the
    (box) line has axes."""

    dims: Tuple[int, ...]
    fields: List[IdxField]
    bitmask: str
    bits_per_block: int
    blocks_per_file: int
    version: int = 6
    interleave: int = 0
    times: Optional[Tuple[float, ...]] = (0,)   # None: "* * template" (not listed)
    time_template: str = ""
    filename_template: str = ""
    missing_blocks: int = 0
    physic_box: Optional[Tuple[float, ...]] = None        # a0 b0 a1 b1 ...
    logic_to_physic: Optional[Tuple[float, ...]] = None   # (ndim+1)^2 numbers, row major
    motes: Optional[dict] = None                          # our (motes) JSON
    metadata: Dict[str, str] = field(default_factory=dict)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def maxh(self) -> int:
        return len(self.bitmask) - 1

    @property
    def total_blocks(self) -> int:
        return 1 << (self.maxh - self.bits_per_block)

    def field(self, name: str) -> IdxField:
        for f in self.fields:
            if f.name == name:
                return f
        raise UsageError(f"no field '{name}' (fields: {', '.join(f.name for f in self.fields)})")

    # -- where a block is ---------------------------------------------------------------
    def block_position(self, block: int) -> int:
        """The block's slot in its file (IdxFile::getBlockPositionInFile)."""
        return (block // max(1, self.interleave)) % self.blocks_per_file

    def first_block_in_file(self, block: int) -> int:
        return block - max(1, self.interleave) * self.block_position(block)

    def block_filename(self, time, block: int) -> str:
        """The block file of ``block`` at ``time`` as the template gives it (before './')."""
        return block_filename(self.filename_template, self.time_template, time, self.first_block_in_file(block))

    # -- text -----------------------------------------------------------------------------
    def text(self) -> str:
        box = " ".join(f"0 {n - 1}" for n in self.dims)
        out = [f"(version)\n{self.version}", f"(box)\n{box}"]
        if self.physic_box is not None:
            out.append("(physic_box)\n" + " ".join(repr(float(v)) for v in self.physic_box))
        out.append("(fields)\n" + "\n+ ".join(f.text() for f in self.fields))
        out += [f"(bits)\n{self.bitmask}", f"(bitsperblock)\n{self.bits_per_block}",
                f"(blocksperfile)\n{self.blocks_per_file}", f"(interleave block)\n{self.interleave}"]
        if self.time_template:
            out.append(f"(time)\n{_time_text(self.times, self.time_template)}")
        out += [f"(filename_template)\n{self.filename_template}", f"(missing_blocks)\n{self.missing_blocks}"]
        if self.motes is not None:
            out.append("(motes)\n" + json.dumps(self.motes, separators=(",", ":"), allow_nan=False))
        for k, v in self.metadata.items():
            out.append(f"({k})\n{v}")
        return "\n".join(out) + "\n"


def _time_text(times, template: str) -> str:
    if times is None:
        return f"* * {template}"
    ts = sorted(int(t) for t in times)
    if ts == list(range(ts[0], ts[-1] + 1)):
        return f"{ts[0]} {ts[-1]} {template}"  # OpenVisus' "From To template"
    runs, start = [], 0
    for i in range(1, len(ts) + 1):
        if i == len(ts) or ts[i] != ts[i - 1] + 1:
            runs.append(f"({ts[start]},{ts[i - 1]},1)")
            start = i
    return template + " " + " ".join(runs)


def guess_filename_template(maxh: int, bits_per_block: int, idx_path: str) -> str:
    """OpenVisus' IdxFile::guessFilenameTemplate: ./<name>/%04x.bin, one more /%02x folder
    level per 8 block-number bits past 16."""
    bits = maxh - bits_per_block
    name = os.path.splitext(os.path.basename(os.fspath(idx_path)))[0] or "visus_data"
    out = "./" + name
    while bits > 16:
        out += "/%02x"
        bits -= 8
    return out + "/%04x.bin"


def block_filename(template: str, time_template: str, time, first_block: int) -> str:
    """OpenVisus' GetFilenameV56: the '%0Nx' parts of ``template``, right to left, take N hex
    digits of the file's first block id each; bits left over go into extra '/'-separated
    folders of the leftmost part's width; the time template (sprintf of int(time)) goes
    before the leftmost part. A template without '%' names one file for every block."""
    if "%" not in template:
        return template
    address = int(first_block)
    out = ""
    s = len(template) - 1
    last = -1
    for c in range(len(template) - 1, -1, -1):
        if template[c] != "%":
            continue
        last = c
        digits = hex_width(template, c)
        out = f"{address & ((1 << (4 * digits)) - 1):0{digits}x}" + template[c + 4: s + 1] + out
        address >>= 4 * digits
        s = c - 1
    digits = hex_width(template, last)
    while address:
        out = f"{address & ((1 << (4 * digits)) - 1):0{digits}x}/" + out
        address >>= 4 * digits
    if time_template:
        out = (time_template % int(time)) + out
    return template[: s + 1] + out


def hex_width(template: str, c: int) -> int:
    part = template[c: c + 4]
    if len(part) != 4 or part[1] != "0" or not part[2].isdigit() or part[2] == "0" or part[3] != "x":
        raise FormatError(f"filename template '{template}' has '{part}' where '%0Nx' (N = 1..9) is expected")
    return int(part[2])
