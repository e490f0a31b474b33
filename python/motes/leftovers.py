"""What writers that died leave in a dataset (docs/format.md §3.5): temporary files named
``<final path>.tmp-<pid>-<counter>`` (a file being written, renamed into place only when
complete) and the folders of steps that were never published (the manifest does not list
them). Readers ignore both; ``motes verify`` reports them and ``motes verify --clean``
removes them.

    found = motes.open("run.motes").leftovers()         # [Leftover(...)]
    removed, kept = motes.open("run.motes").clean_leftovers()

Cleaning takes the dataset's writers' lock (§3.6) as a writer does, so it never runs
beside a write of a process that respects it (a second writer is refused, naming the
holder); under the lock it removes the temporary files whose process (the pid in the
name) no longer runs on this host, and the folders of unpublished steps that hold no
file of a running process. A pid that runs (a live writer, or a later process that took
the number) keeps its files.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from typing import List, Optional, Set, Tuple

from . import _core

__all__ = ["Leftover", "find", "clean", "TEMPORARY"]

#: The name of a writer's temporary file: the final name, the writer's pid, a counter.
TEMPORARY = re.compile(r"^(?P<final>.+)\.tmp-(?P<pid>\d+)-(?P<counter>\d+)$")
_STEP_FOLDER = re.compile(r"^-?\d+$")


@dataclass
class Leftover:
    """A temporary file (``kind`` "temporary file", with the ``pid`` of its writer and
    whether that process runs on this host) or the folder of a step the manifest does not
    list (``kind`` "unpublished step", with ``step``, its files and the pids of the
    temporary files in it)."""

    path: str                  # absolute
    relative: str              # to the dataset's folder, for messages
    kind: str
    bytes: int
    pid: Optional[int] = None
    alive: bool = False        # a process of that pid runs on this host (any of the pids, for a step)
    step: Optional[int] = None
    files: int = 0
    pids: List[int] = field(default_factory=list)

    def describe(self) -> str:
        size = _size_text(self.bytes)
        if self.kind == "temporary file":
            state = "running: a write in progress?" if self.alive else "not running on this host"
            return f"{self.relative}  (temporary file, {size}, writer pid {self.pid} {state})"
        who = ""
        if self.pids:
            running = [p for p in self.pids if process_alive(p)]
            who = f", temporary files of pid {', '.join(map(str, self.pids))}" + \
                (f" ({', '.join(map(str, running))} running: a write in progress?)" if running else "")
        return (f"{self.relative}/  (step {self.step}, not in the manifest: {self.files} file(s), {size}{who})")


def process_alive(pid: int) -> bool:
    """Whether a process of this pid runs on this host (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError):  # not a pid this system can have
        return False
    return True


def _size_text(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _published_folders(core) -> Set[str]:
    """The step folders (absolute, normalised) that the manifest's files lie in."""
    out = set()
    for st in core.steps:
        for entry in list(st["species"].values()) + list(st["fields"].values()):
            out.add(os.path.normpath(os.path.dirname(entry["path"])))
    return out


def _temporary(path: str, relative: str) -> Optional[Leftover]:
    m = TEMPORARY.match(os.path.basename(path))
    if m is None:
        return None
    try:
        st = os.lstat(path)
    except FileNotFoundError:  # renamed into place meanwhile
        return None
    pid = int(m.group("pid"))
    return Leftover(path, relative, "temporary file", st.st_size, pid=pid, alive=process_alive(pid))


def _entries(folder: str) -> List[str]:
    try:
        return sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []


def find(core) -> List[Leftover]:
    """The leftovers of the dataset of ``core`` (a DatasetCore), against its manifest as
    loaded: temporary files in its folder and its step folders, and unpublished step
    folders (a write in progress looks the same: see ``alive``)."""
    root = core.dir
    out: List[Leftover] = []
    for name in _entries(root):
        found = _temporary(os.path.join(root, name), name)
        if found:
            out.append(found)
    published = _published_folders(core)
    steps_dir = os.path.join(root, "steps")
    for name in _entries(steps_dir):
        folder = os.path.join(steps_dir, name)
        if not _STEP_FOLDER.match(name) or f"{int(name):06d}" != name or os.path.islink(folder) \
                or not os.path.isdir(folder):
            continue  # not a folder the writer makes (steps/%06d): not ours to judge
        temps, size, files = [], 0, 0
        for entry in _entries(folder):
            p = os.path.join(folder, entry)
            found = _temporary(p, f"steps/{name}/{entry}")
            if found:
                temps.append(found)
            try:
                size += os.lstat(p).st_size
                files += 1
            except FileNotFoundError:
                pass
        out += temps
        if os.path.normpath(folder) not in published:
            pids = sorted({t.pid for t in temps})
            out.append(Leftover(folder, f"steps/{name}", "unpublished step", size, step=int(name), files=files,
                                pids=pids, alive=any(t.alive for t in temps)))
    return out


def clean(dataset_dir: str, lock_timeout: Optional[float] = None) -> Tuple[List[Leftover], List[Leftover]]:
    """Removes, under the dataset's writers' lock, the leftovers of writers that no longer
    run (see the module docstring). Returns (removed, kept); UsageError naming the holder
    when another writer holds the lock past ``lock_timeout``."""
    from . import _defaults

    core = _core.DatasetCore.open(dataset_dir)
    core.lock_timeout = float(_defaults.default("lock_timeout") if lock_timeout is None else lock_timeout)
    # The writers' lock, as the core's writers take it (format.md §3.6); the manifest on disk
    # is read again under it.
    with core.writing(f"clean the leftovers of '{dataset_dir}' (motes verify --clean)"):
        removed: List[Leftover] = []
        kept: List[Leftover] = []
        for item in find(core):
            if item.alive:
                kept.append(item)
                continue
            try:
                if item.kind == "temporary file":
                    os.remove(item.path)
                else:  # unpublished under the lock: what a write that died left (format.md §3.4)
                    shutil.rmtree(item.path)
            except FileNotFoundError:
                pass
            removed.append(item)
        return removed, kept
