"""The files an HDF5 file names outside itself, checked before anything is read from it:
external links (``h5py.ExternalLink``), virtual datasets (``VirtualSource``) and datasets
whose values are kept in external raw files (``create_dataset(external=...)``). HDF5
follows each of them wherever it points, so a crafted file would make a conversion read
any file (``/etc/...``, another user's data, a FIFO that never answers) into its output.
Each must name a regular file under the folder of the HDF5 file (symbolic links
resolved), found there as HDF5 looks it up; anything else is a FormatError naming the
object and the file.

How HDF5 looks the names up (HDF5 2.0, as h5py opens files; the prefixes of the
environment come first when set):

* external links and virtual sources: an absolute name as it is, then the name in
  ``HDF5_EXT_PREFIX`` / ``HDF5_VDS_PREFIX``, then relative to the folder of the file,
  then to the current directory. A name is accepted when its first existing candidate,
  in that order, is under the folder (so the current directory is never reached);
* external raw files: relative to ``HDF5_EXTFILE_PREFIX`` (``${ORIGIN}``: the folder of
  the file) when set, else to the current directory.

The scan visits every object once per file version (path, inode, size, time) and is
remembered, so the many opens of one file during a conversion check it once.
"""

from __future__ import annotations

import os
import stat
from typing import Dict, List, Optional, Tuple

from ...errors import FormatError
from ..input_files import inside, kind_of

__all__ = ["check"]

_CHECKED: Dict[Tuple, bool] = {}
_MAX_REMEMBERED = 4096


def _candidates(name: str, folder: str, env: str) -> List[str]:
    out = [name] if os.path.isabs(name) else []
    rel = name.lstrip("/") if os.path.isabs(name) else name
    for prefix in filter(None, os.environ.get(env, "").split(":")):
        out.append(os.path.join(prefix.replace("${ORIGIN}", folder), rel))
    out += [os.path.join(folder, rel), os.path.join(os.getcwd(), rel)]
    return out


def _problem(found: Optional[str], folder: str) -> Optional[str]:
    """Why the file HDF5 would open is refused (None: it is a regular file under the folder)."""
    root = os.path.realpath(folder)
    if found is None:
        return f"which does not exist under the folder {root}"
    if not inside(folder, found):
        real = os.path.realpath(found)
        shown = found + (f" (resolving to {real})" if real != os.path.normpath(found) else "")
        return f"which is {shown}, outside the folder {root}"
    mode = os.stat(found).st_mode
    if not stat.S_ISREG(mode):
        return f"which is {kind_of(mode)}, not a regular file"
    return None


def _first_existing(paths: List[str]) -> Optional[str]:
    for p in paths:
        if os.path.exists(p):
            return p
    return None


def _refuse(path: str, what: str, name: str, why: str) -> FormatError:
    return FormatError(f"{path}: {what} names the file '{name}', {why}: motes reads only regular files under "
                       f"the folder of the file that names them")


def _scan(path: str, f, folder: str) -> Optional[FormatError]:
    """The first problem, or None. h5py's low-level API: a visit of the links (external ones
    are not followed) and of the objects reachable by hard links, whose datasets' creation
    properties say where their values are (about 4x faster than the high-level objects)."""
    from h5py import h5d, h5l, h5o

    found: List[FormatError] = []

    def link(name: bytes, info):
        if info.type == h5l.TYPE_EXTERNAL:
            target = os.fsdecode(f.id.links.get_val(name)[0])
            why = _problem(_first_existing(_candidates(target, folder, "HDF5_EXT_PREFIX")), folder)
            if why:
                found.append(_refuse(path, f"the external link '/{os.fsdecode(name)}'", target, why))
                return 1  # stops the visit
        return None

    def dataset(name: bytes, info):
        if info.type != h5o.TYPE_DATASET:
            return None
        where = os.fsdecode(name)
        dcpl = h5d.open(f.id, name).get_create_plist()
        for k in range(dcpl.get_external_count()):
            raw = os.fsdecode(dcpl.get_external(k)[0])
            prefix = os.environ.get("HDF5_EXTFILE_PREFIX", "").replace("${ORIGIN}", folder) or os.getcwd()
            target = raw if os.path.isabs(raw) else os.path.join(prefix, raw)
            why = _problem(target if os.path.exists(target) else None, folder)
            if why:
                found.append(_refuse(path, f"dataset '/{where}' keeps its values in an external file: it", raw, why))
                return 1
        if dcpl.get_layout() == h5d.VIRTUAL:
            for k in range(dcpl.get_virtual_count()):
                source = os.fsdecode(dcpl.get_virtual_filename(k))
                if source == ".":  # this file
                    continue
                why = _problem(_first_existing(_candidates(source, folder, "HDF5_VDS_PREFIX")), folder)
                if why:
                    found.append(_refuse(path, f"the virtual dataset '/{where}'", source, why))
                    return 1
        return None

    f.id.links.visit(link, info=True)
    if not found:
        h5o.visit(f.id, dataset, info=True)
    return found[0] if found else None


def check(path: str, f) -> None:
    """Refuses (FormatError) an HDF5 file open as ``f`` (h5py) that names a file outside its
    folder, or one that is not a regular file; see the module docstring."""
    try:
        st = os.stat(path)
        key = (os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, os.getcwd(),
               tuple(os.environ.get(v, "") for v in ("HDF5_EXT_PREFIX", "HDF5_VDS_PREFIX", "HDF5_EXTFILE_PREFIX")))
    except OSError:
        key = None
    if key is not None and key in _CHECKED:
        return
    problem = _scan(path, f, os.path.dirname(os.path.abspath(path)))
    if problem is not None:
        raise problem
    if key is not None:
        if len(_CHECKED) >= _MAX_REMEMBERED:
            _CHECKED.clear()
        _CHECKED[key] = True
