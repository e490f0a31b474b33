"""The datasets a server serves, by name, and what it knows about each species of each
step. Names and paths are fixed at start-up: no part of a request ever becomes a path.
A dataset's manifest is read again when it changed (a writer appended a step; a remote
dataset's is fetched again at most every live.REMOTE_POLL seconds); a step,
once published, never changes within a run, so what is known about its species is kept
for that run. A dataset deleted and written again (another identity: DatasetReplacedError
from refresh) is opened again as a new run, and what was kept of the old one is dropped."""

from __future__ import annotations

import hashlib
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import _args
from ..errors import DatasetReplacedError, MotesError, UsageError
from ..live import REMOTE_POLL, manifest_identity
from .cells import Ladder
from .errors import HTTPError, not_found
from .params import integer

if TYPE_CHECKING:  # the server is handed the function that opens a dataset (Opener)
    from ..dataset import Dataset

Opener = Callable[[str], "Dataset"]  # motes.open, or a Dataset's own class


def finite(v: Any) -> Any:
    """A JSON-safe number: NaN and infinities are None."""
    return None if isinstance(v, float) and not math.isfinite(v) else v


def bounds_json(lo, hi) -> Dict[str, List[Any]]:
    return {"min": [finite(float(v)) for v in lo], "max": [finite(float(v)) for v in hi]}


def dataset_names(specs: Sequence[Tuple[Optional[str], str]]) -> List[Tuple[str, str]]:
    """(name, path) per dataset: the name given, else the directory's name without .motes;
    a name taken already gets -2, -3, ..."""
    out: List[Tuple[str, str]] = []
    taken = set()
    for name, path in specs:
        if name is None:
            name = os.path.basename(os.path.normpath(path))
            if name.endswith(".motes") and len(name) > len(".motes"):
                name = name[:-len(".motes")]
        if not name or "/" in name or name in (".", ".."):
            raise UsageError(f"'{name}' cannot name a dataset (a name is a path segment of the URLs: no '/')")
        _args.text("dataset name", name)
        unique, k = name, 1
        while unique in taken:
            k += 1
            unique = f"{name}-{k}"
        taken.add(unique)
        out.append((unique, path))
    return out


@dataclass
class Species:
    """One species of one step, as the server answers about it."""

    dataset: str
    step: int
    name: str
    time: float
    source: Any  # the core's Collection
    ds: Dataset
    count: int
    bounds: Tuple[Tuple[float, ...], Tuple[float, ...]]
    columns: List[Dict[str, Any]]  # name, dtype, unit, unit_label, index, error_bound, min, max, nan_count
    hierarchy: Dict[str, int]
    ladder: Ladder
    tag: str  # identifies the step's files (their checksums): the base of ETags

    def column(self, name: str) -> Dict[str, Any]:
        for c in self.columns:
            if c["name"] == name:
                return c
        raise UsageError(f"unknown column '{name}' (columns: {', '.join(c['name'] for c in self.columns)})")

    def describe(self) -> Dict[str, Any]:
        return {"dataset": self.dataset, "step": self.step, "time": finite(self.time), "species": self.name,
                "count": self.count, "bounds": bounds_json(*self.bounds), "columns": self.columns,
                "hierarchy": self.hierarchy, "ladder": {"quality": self.ladder.quality, "count": self.ladder.count}}


@dataclass
class GridField:
    """One grid field of one step, as the server answers about it: the stored field, the
    positions of its samples along each axis, and the ETag base of its answers."""

    dataset: str
    step: int
    name: str
    time: float
    stored: Any  # motes.fields.file.StoredField, or for a thetaMode field its Cartesian view (motes.fields.theta)
    axes: List[Any]  # per axis, the samples' positions (float64 arrays)
    tag: str
    theta: Any = None  # a thetaMode field: its StoredField (the modes; `stored` resamples them)


_COLUMN_KEYS = ("name", "dtype", "unit", "unit_label", "index", "error_bound", "min", "max", "nan_count")


class Entry:
    """One dataset: its name, path, and the Dataset opened on its current manifest; ``run``
    names the run read (the dataset's identity and how many times it was opened anew)."""

    def __init__(self, name: str, path: str, opener: Opener):
        self.name, self.path, self._open = name, path, opener
        self._lock = threading.Lock()
        self._ds = opener(path)
        self._opened = 1
        self._checked = time.monotonic()
        self._signature = self._stat()

    @property
    def run(self) -> str:
        return f"{self._ds.id or 'no-id'}.{self._opened}"

    def _due(self) -> bool:
        """A remote dataset: whether it is time to fetch its manifest again."""
        return time.monotonic() - self._checked >= REMOTE_POLL

    def changed(self) -> bool:
        """Whether the manifest may have changed since it was read (a stat; a remote
        dataset: whether it is time to fetch it again). No lock, no read."""
        return self._due() if self._ds.remote else self._stat() != self._signature

    def _refresh(self) -> None:
        """Reads the manifest again: new steps appear; a replaced dataset is opened anew as
        another run. A manifest that cannot be read now keeps the last one read."""
        try:
            self._ds.refresh()
        except DatasetReplacedError:
            try:
                self._ds = self._open(self.path)
                self._opened += 1
            except MotesError:
                pass  # being replaced right now: the next change opens it
        except MotesError:
            pass  # unreachable or being replaced: the steps known stay

    def _stat(self):
        if self._ds.remote:  # an object store or a web server: the steps its manifest lists
            return tuple(self._ds.steps)
        try:
            return manifest_identity(self.path)
        except OSError:  # not readable now: the last manifest read is kept
            return None

    def dataset(self) -> Dataset:
        """The dataset, read again when its manifest changed (a remote one: its manifest
        fetched again at most every REMOTE_POLL seconds, its open files kept)."""
        if self._ds.remote:
            with self._lock:
                if self._due():
                    self._checked = time.monotonic()
                    self._refresh()
                    self._signature = self._stat()
                return self._ds
        sig = self._stat()
        with self._lock:
            if sig != self._signature:
                self._refresh()
                self._signature = sig
            return self._ds

    def tag(self) -> str:
        """Identifies the manifest read (an ETag's base for dataset-level answers)."""
        return hashlib.blake2b(repr((self.name, self.path, self.run, self._signature)).encode(),
                               digest_size=12).hexdigest()


class Registry:
    def __init__(self, specs: Sequence[Tuple[Optional[str], str]], opener: Opener):
        """The datasets of ``specs`` (name or None, path), each opened by ``opener`` (the
        server never imports the Dataset it serves: whoever starts it hands it the opener)."""
        self.entries: Dict[str, Entry] = {name: Entry(name, path, opener) for name, path in dataset_names(specs)}
        # (dataset, run, step, species or field): kept for the run each dataset was read at last
        self._species: Dict[Tuple[str, str, int, str], Species] = {}
        self._fields: Dict[Tuple[str, str, int, str], GridField] = {}
        self._runs: Dict[str, str] = {}
        self._lock = threading.Lock()

    def entry(self, name: str) -> Entry:
        e = self.entries.get(name)
        if e is None:
            raise not_found(f"no dataset '{name}' (datasets: {', '.join(self.entries)})")
        return e

    def warm(self) -> None:
        """Opens what the viewer asks for first (every species of each dataset's last step,
        where it opens, as motes.open does: its description, column indexes and ladder), so
        that the first page load does not wait for it. Run in a background thread after the
        server listens; a failure here is left for the request that meets it to report."""
        for name, entry in self.entries.items():
            try:
                ds = entry.dataset()
                if ds.steps:
                    step = ds.steps[-1]
                    for species in ds.step(step).species:
                        self.species(name, str(step), species)
            except Exception:  # noqa: BLE001 (reported by the requests themselves)
                continue

    def _current(self, name: str) -> Optional[Entry]:
        """The entry when its manifest is as last read (a stat: callable from the event
        loop); None when it may have changed (or is unknown): the slow path reads it."""
        entry = self.entries.get(name)
        return None if entry is None or entry.changed() else entry

    def _kept(self, table: Dict, name: str, run: str, step: int, what: str):
        """What is kept of (step, what) for this run of dataset `name`; when the dataset was
        opened anew as another run, what was kept of the earlier one is dropped first (its
        files closed with it)."""
        with self._lock:
            if self._runs.setdefault(name, run) != run:
                self._runs[name] = run
                for t in (self._species, self._fields):
                    for k in [k for k in t if k[0] == name]:
                        del t[k]
            return table.get((name, run, step, what))

    def _keep(self, table: Dict, key: Tuple[str, str, int, str], found):
        """Keeps what was opened for run key[1] unless the dataset has been opened anew since
        (then it serves this request only); what is kept already for the key wins."""
        with self._lock:
            if self._runs.get(key[0]) != key[1]:
                return found
            return table.setdefault(key, found)

    def cached(self, name: str, step_text: str, species: str) -> Optional[Species]:
        """The species when it is open already for the run read last (no read: callable
        from the event loop)."""
        entry = self._current(name)
        try:
            step = integer("step", step_text)
        except HTTPError:  # the slow path reports it
            return None
        return None if entry is None else self._kept(self._species, name, entry.run, step, species)

    def species(self, name: str, step_text: str, species: str) -> Species:
        """The species of a step (opened on first use: call from a worker thread); 404 when
        the dataset, step or species is not there."""
        step = integer("step", step_text)
        entry = self.entry(name)
        ds = entry.dataset()
        found = self._kept(self._species, name, entry.run, step, species)
        if found is not None:
            return found
        if step not in ds.steps:
            shown = ", ".join(map(str, ds.steps[:20])) + (", ..." if len(ds.steps) > 20 else "")
            raise not_found(f"dataset '{name}' has no step {step} (steps: {shown})")
        st = ds.step(step)
        if species not in st.species:
            raise not_found(f"step {step} of '{name}' has no species '{species}' (species: {', '.join(st.species)})")
        run = entry.run
        found = self._open(entry, ds, step, species)
        return self._keep(self._species, (name, run, step, species), found)

    def step_of(self, name: str, step_text: str):
        """(entry, dataset, step): 404 when the dataset or step is not there (no I/O beyond
        the manifest)."""
        step = integer("step", step_text)
        entry = self.entry(name)
        ds = entry.dataset()
        if step not in ds.steps:
            shown = ", ".join(map(str, ds.steps[:20])) + (", ..." if len(ds.steps) > 20 else "")
            raise not_found(f"dataset '{name}' has no step {step} (steps: {shown})")
        return entry, ds, ds.step(step)

    def cached_field(self, name: str, step_text: str, field: str) -> Optional[GridField]:
        """The grid field when it is open already for the run read last (no read: callable
        from the event loop)."""
        entry = self._current(name)
        try:
            step = integer("step", step_text)
        except HTTPError:
            return None
        return None if entry is None else self._kept(self._fields, name, entry.run, step, field)

    def field(self, name: str, step_text: str, field: str) -> GridField:
        """A grid field of a step (its file opened on first use: call from a worker thread);
        404 when the dataset, step or field is not there."""
        found = self.cached_field(name, step_text, field)
        if found is not None:
            return found
        entry, ds, st = self.step_of(name, step_text)
        found = self._kept(self._fields, name, entry.run, st.index, field)  # the manifest read again
        if found is not None:
            return found
        if field not in st.fields:
            raise not_found(f"step {st.index} of '{name}' has no field '{field}' "
                            f"(fields: {', '.join(st.fields) or 'none'})")
        stored = ds.field(field, st.index)
        theta = None
        if stored.geometry == "thetaMode":  # served as a Cartesian grid (docs/http-api.md, "thetaMode fields")
            theta, stored = stored, stored.cartesian()
            # its ranges reconstructed here, in a worker thread (descriptions answer from the event loop)
            stored.ranges  # noqa: B018
        run = entry.run
        tag = hashlib.blake2b(repr((entry.name, entry.path, ds.id, st.index, "field", field,
                                    st.fields[field].get("checksum"))).encode(), digest_size=12).hexdigest()
        found = GridField(dataset=entry.name, step=st.index, name=field, time=st.time, stored=stored,
                          axes=[stored.axis(k) for k in range(stored.ndim)], tag=tag, theta=theta)
        return self._keep(self._fields, (name, run, st.index, field), found)

    def _open(self, entry: Entry, ds: Dataset, step: int, species: str) -> Species:
        src = ds.source(step, species)
        info = ds.describe(step, species, storage=False)["files"][0]  # (storage reads every block's header)
        sp = ds.step(step).species[species]
        files = [src.part(k) for k in range(src.part_count)]
        # What identifies the step's files: the checksums the manifest pins (a dataset of
        # motes 0.1 has none: then the files' sizes and times).
        pins = [(n, s.get("checksum") or _file_stamp(s["path"])) for n, s in sorted(ds.step(step).species.items())]
        tag = hashlib.blake2b(repr((entry.name, entry.path, ds.id, step, pins)).encode(), digest_size=12).hexdigest()
        return Species(
            dataset=entry.name, step=step, name=species, time=ds.step(step).time, source=src, ds=ds,
            count=int(sp["count"]), bounds=src.bounds,
            columns=[{k: finite(c[k]) for k in _COLUMN_KEYS} for c in info["columns"]],
            hierarchy={"parts": info["parts"], "nodes": info["nodes"], "levels": info["levels"],
                       "leaf_size": info["leaf_size"], "lod_count": info["lod_count"]},
            ladder=Ladder([f.level_starts for f in files]), tag=tag)


def _file_stamp(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return path
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"
