"""Where each step of a motes dataset came from, so that a file is not added twice by mistake.

A conversion into motes (``motes convert``, ``motes write``) records in the attributes of
each step it writes from a file, under ``motes_source``::

    {"file": "snap_0042.npz",          # the file's name (not its folder)
     "sha256": "9f86d0...",            # of the file's bytes, read once more to hash them
     "step": 42,                       # the index the file gives the step (absent: none)
     "species": ["particles"],         # the species taken from it
     "selection": {"group": "/part"}}  # the read options that chose its content (absent: none)

Appending a step whose record equals one of the dataset's steps' (the same file name, the
same bytes, the same step and selection of it) is a UsageError naming that step, unless the
caller allows it (``allow_duplicate=True``, CLI ``--allow-duplicate``). What is not one
regular local file (a motes dataset, an ADIOS2 folder, a file-based openPMD series, a URL)
records nothing, and a step it gives keeps the record of the step it was converted from.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import replace
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional, Sequence

from ..errors import UsageError
from ..remote import is_remote
from .base import Step
from .spelling import option

KEY = "motes_source"
# Read options that choose what a step holds (others, such as time_from, only its metadata).
_NOT_SELECTION = ("time_from", "steps")
_BLOCK = 1 << 22


def digest(path: str) -> str:
    """The SHA-256 of the file's bytes (hex), read in blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            block = f.read(_BLOCK)
            if not block:
                return h.hexdigest()
            h.update(block)


def _regular_file(path: str) -> bool:
    if not path or is_remote(path):
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


class Recorder:
    """Makes the records of the steps of one conversion (each file hashed once)."""

    def __init__(self, read_options: Optional[Mapping[str, Any]] = None):
        self.selection = {k: v for k, v in (read_options or {}).items()
                          if v is not None and k not in _NOT_SELECTION}
        self._digests: Dict[str, str] = {}

    def record(self, st: Step, species: Sequence[str]) -> Optional[Dict[str, Any]]:
        """The record of a step read from ``st.source`` holding ``species``; None when the
        source is not one regular local file."""
        if not _regular_file(st.source):
            return None
        if st.source not in self._digests:
            self._digests[st.source] = digest(st.source)
        rec: Dict[str, Any] = {"file": os.path.basename(st.source), "sha256": self._digests[st.source]}
        if st.source_index is not None:
            rec["step"] = int(st.source_index)
        rec["species"] = sorted(species)
        if self.selection:
            rec["selection"] = json.loads(json.dumps(self.selection, default=list))
        return rec


def _key(rec: Mapping[str, Any]) -> str:
    return json.dumps(rec, sort_keys=True, default=list)


def recorded(dataset: str) -> Dict[str, int]:
    """The records of the steps of the motes dataset at ``dataset`` (none when it does not
    exist): record key -> step index."""
    from .._core import DatasetCore

    if not (os.path.isdir(dataset) and DatasetCore.exists(dataset)):
        return {}
    out = {}
    for s in DatasetCore.open(dataset).steps:
        rec = (s.get("attributes") or {}).get(KEY)
        if isinstance(rec, dict):
            out.setdefault(_key(rec), int(s["index"]))
    return out


def check(dataset: str, rec: Optional[Mapping[str, Any]], source: str, existing: Optional[Dict[str, int]] = None,
          allow_duplicate: bool = False) -> None:
    """UsageError when the dataset already has a step of record ``rec`` (read from ``source``),
    naming that step and how to add it anyway. ``existing``: :func:`recorded` of the dataset."""
    if rec is None or allow_duplicate:
        return
    existing = recorded(dataset) if existing is None else existing
    k = existing.get(_key(rec))
    if k is None:
        return
    of = f"step {rec['step']} of " if "step" in rec else ""
    raise UsageError(f"{of}{source} is already step {k} of {dataset} (the same file name, the same content "
                     f"(SHA-256 {rec['sha256'][:12]}...), the same species and selection): adding it again "
                     f"would repeat it as a new step; pass {option('allow_duplicate=True', '--allow-duplicate')} "
                     "if that is what you want")


def stamped(steps: Iterable[Step], recorder: Recorder, dataset: Optional[str], allow_duplicate: bool) -> Iterator[Step]:
    """The steps, each read from a file carrying its record (:data:`KEY`) in its attributes;
    ``dataset`` (an append's destination): a step it already holds is a UsageError (see
    :func:`check`), raised before the step is written."""
    existing = recorded(dataset) if dataset is not None and not allow_duplicate else {}
    for st in steps:
        rec = recorder.record(st, list(st.species))
        if rec is None:
            yield st
            continue
        if dataset is not None:
            check(dataset, rec, st.source, existing, allow_duplicate)
        yield replace(st, attributes={**st.attributes, KEY: rec})
