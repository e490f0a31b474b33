"""Sources of many files: a glob (``'snap_*.npz'``) or a ``%T`` pattern (``snap_%T.npz``,
``snap_%05T.parquet``) names one file per step, each read as its own source.

The index of each file's step is, in this order: the number that ``%T`` matched; the
step index the file itself records (a motes export's metadata, an .npz scalar ``step`` or
``iteration``); its position in the sorted list of files (0, 1, 2, ...).
A file-based openPMD series (``data%T.h5``) is one source, read by openpmd-api.
"""

from __future__ import annotations

import glob
import os
import re
from typing import List, Optional, Tuple

from ..errors import UsageError

PATTERN = re.compile(r"%(0\d+)?T")
GLOB_CHARS = set("*?[")


def is_many(path: str) -> bool:
    """Whether ``path`` names several files (a glob, or a %T pattern) rather than one."""
    return bool(PATTERN.search(os.path.basename(path))) or (not os.path.exists(path) and bool(GLOB_CHARS & set(path)))


def template(path: str) -> str:
    """A path with which to tell the format: the pattern with %T taken out."""
    return PATTERN.sub("0", path)


def expand(path: str) -> List[Tuple[str, Optional[int]]]:
    """The files a pattern names, sorted, each with the step index its name gives (``%T``)."""
    base = os.path.basename(path)
    m = PATTERN.search(base)
    if m:
        folder = os.path.dirname(path) or "."
        if PATTERN.search(os.path.dirname(path)):
            raise UsageError(f"{path}: the step placeholder %T must be in the file name, not the folder")
        digits = r"(-?\d+)" if not m.group(1) else r"(-?\d{%d,})" % int(m.group(1))
        rx = re.compile("^" + re.escape(base[:m.start()]) + digits + re.escape(base[m.end():]) + "$")
        if not os.path.isdir(folder):
            raise UsageError(f"{path}: no such folder '{folder}'")
        found = []
        for name in os.listdir(folder):
            hit = rx.match(name)
            if hit:
                found.append((int(hit.group(1)), os.path.join(folder, name)))
        if not found:
            raise UsageError(f"{path}: no file matches (looked for {rx.pattern[1:-1]} in '{folder}')")
        found.sort()
        return [(p, index) for index, p in found]
    matches = sorted(glob.glob(path))
    if not matches:
        raise UsageError(f"{path}: no file matches the pattern")
    return [(p, None) for p in matches]
