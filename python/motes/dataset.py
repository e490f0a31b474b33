"""Python API over the C++ core: datasets, steps, species, queries, analyses."""

from __future__ import annotations

import contextlib
import functools
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _args, _core, _defaults, units
from ._core import FormatError, MotesError, UsageError
from .dtypes import column_array, numpy_dtype
from .errors import storage_errors

__all__ = ["open", "write", "Writer", "Dataset", "Table", "Column", "read_partition"]

ColumnsLike = Mapping[str, np.ndarray]


def _storage(doing: str):
    """A method whose OSErrors (of the core, of the file system) surface as motes.StorageError
    (motes.NotFoundError for a missing file) naming the dataset: see motes.errors."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(self, *args, **kwargs):
            with storage_errors(self.path, doing):
                return fn(self, *args, **kwargs)

        return wrapper

    return decorate


Quality = Union[float, Tuple[float, float]]
BoxLike = Optional[Sequence[float]]

@dataclass(frozen=True)
class Column:
    """One column of a species' schema."""

    name: str
    dtype: np.dtype
    index: str  # "none" or "quantile": the extra index built for spatially incoherent columns
    unit: str = ""  # as stored: free text, or an openPMD unit as JSON (see motes.units)
    error_bound: float = 0.0  # largest difference between a value written and the value stored; 0 = exact

    @property
    def unit_label(self) -> str:
        """The unit as a person writes it: "m", "kg m s^-1", "J", "µm", or the free text."""
        return units.label(self.unit)

    @property
    def unit_si(self) -> Optional[float]:
        """For an openPMD unit: the factor that turns stored values into SI units, else None."""
        return units.parse(self.unit).unit_si

    @property
    def unit_dimension(self) -> Optional[Tuple[float, ...]]:
        """For an openPMD unit: the powers of L, M, T, I, theta, N, J, else None."""
        return units.parse(self.unit).dimension


class Table(dict):
    """Query result: column name -> numpy array (all of equal length).

    Converts to pandas (:meth:`to_pandas`) and Arrow (:meth:`to_arrow`).
    ``counters`` tells how much the indexes pruned.
    """

    counters: Dict[str, int]

    def __init__(self, columns: Mapping[str, np.ndarray], counters: Optional[Dict[str, int]] = None):
        super().__init__(columns)
        self.counters = counters or {}

    def __len__(self) -> int:  # number of rows, like a DataFrame
        for v in self.values():
            return len(v)
        return 0

    @property
    def num_rows(self) -> int:
        return len(self)

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(dict(self), copy=False)

    def to_arrow(self):
        import pyarrow as pa

        return pa.table({k: pa.array(v) for k, v in self.items()})




def _selection(where, box, quality, fraction, threads, cancel=None, timeout=None):
    """The core's QuerySpec of a query's arguments, checked; what is None keeps the core's default.
    ``cancel`` (a CancelToken) and ``timeout`` (seconds from now) stop the query with CancelledError."""
    spec = _core.QuerySpec()
    if cancel is not None:
        spec.cancel = _args.cancel_token(cancel)
    if timeout is not None and math.isfinite(_args.timeout(timeout)):
        spec.deadline = time.monotonic() + timeout
    if quality is not None:
        spec.quality_from, spec.quality_to = _args.quality(quality)
    if fraction is not None:
        spec.fraction = _fraction(fraction)
        if (spec.quality_from, spec.quality_to) != (_core.QuerySpec().quality_from, _core.QuerySpec().quality_to):
            raise UsageError("pass either fraction= or quality=, not both")
    if where is not None:
        spec.where = _args.where(where)
    spec.box = _box(box)
    if threads is not None:
        spec.threads = _args.threads(threads)
    return spec


def _fraction(fraction: Any) -> float:
    fraction = _args.number("fraction", fraction)
    if not 0.0 <= fraction <= 1.0:
        raise UsageError(f"fraction must be in [0, 1], got {fraction:g}")
    return fraction


def _box(box: BoxLike) -> Optional[List[float]]:
    if box is None:
        return None
    try:
        b = np.asarray(box, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        b = np.empty(0)
    if b.size != 6:
        raise UsageError("box must be 6 numbers (xmin, ymin, zmin, xmax, ymax, zmax) or ((xmin, ymin, zmin), (xmax, ymax, zmax))")
    return [float(v) for v in b]


def _column_tuples(columns: ColumnsLike, index: Optional[Mapping[str, str]], units: Optional[Mapping[str, str]],
                   error_bounds: Optional[Mapping[str, float]] = None):
    if not isinstance(columns, Mapping) or not columns:
        raise UsageError("columns must be a non-empty mapping of name -> 1-D numpy array")
    index = dict(index or {})
    units = dict(units or {})
    bounds = _args.error_bounds(error_bounds)
    for name in list(index) + list(units) + list(bounds):
        if name not in columns:
            raise UsageError(f"index/unit/error bound given for unknown column '{name}' (columns: {', '.join(columns)})")
    return [(str(name), column_array(str(name), values), index.get(name, "auto"), units.get(name, ""),
             bounds.get(name, 0.0)) for name, values in columns.items()]


class _Progress:
    """tqdm bars for the core's (stage, done, total) callbacks."""

    def __init__(self, enabled: bool, desc: str):
        self.enabled = enabled
        self.desc = desc
        self.bars: Dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        from tqdm.auto import tqdm

        bar = self.bars.get(stage)
        if bar is None:
            bar = self.bars[stage] = tqdm(total=total, desc=f"{self.desc}: {stage}", leave=False)
        bar.n = done
        bar.refresh()

    def callback(self):
        return self if self.enabled else None

    def close(self):
        for bar in self.bars.values():
            bar.close()


def _write_options(leaf_size=None, lod_count=None, treelet_size=None, threads=None, sync=None, compression=None,
                   ids=None, tails=None):
    """The core's WriteOptions of a writer's arguments, checked; what is None keeps the core's default."""
    o = _core.WriteOptions()
    if tails is not None:  # True: the default; False: none; a number: the share per side; names: those columns
        if isinstance(tails, bool):
            o.tail_fraction = o.tail_fraction if tails else 0.0
        elif isinstance(tails, (int, float, np.integer, np.floating)):
            o.tail_fraction = _args.number("tails", tails)
        else:
            o.tail_columns = _args.names("tails", tails)
    if ids is not None:  # True: the default ("auto"); False: no id index; a name: that column
        if isinstance(ids, bool):
            o.id_column = "auto" if ids else ""
        else:
            o.id_column = _args.text("ids", ids)
    for name, value in (("leaf_size", leaf_size), ("lod_count", lod_count), ("treelet_size", treelet_size)):
        if value is not None:
            setattr(o.layout, name, _args.integer(name, value, 1, _args.UINT32[1]))
    if threads is not None:
        o.layout.threads = _args.threads(threads)
    if sync is not None:
        o.sync = bool(sync)
    if compression is not None:
        o.compression = _args.compression(compression)
    return o


class Writer:
    """Appends steps to a dataset (created when absent). Earlier steps are never rewritten.

    >>> with motes.Writer("run.motes") as w:
    ...     w.write_step(0, {"electrons": cols_e, "ions": cols_i}, time=0.0)

    With ``comm`` (an mpi4py communicator) every rank of it calls :meth:`write_step` with its
    own particles (the same species and columns everywhere, any counts, zero included); the
    step is aggregated into a few spatially coherent part files (``aggregation``: "adaptive"
    or the "aug" uniform-grid baseline; ``target_bytes`` per file, 0 = automatic) and
    published once all are written. Errors are raised on every rank.

    ``ids`` names the particle id column that gets an id index (tracking, :meth:`Dataset.track`):
    by default a 32- or 64-bit integer column named ``id``; ``False`` builds none (lossless
    files only: ``compression="none"`` builds none either).

    ``tails`` chooses the columns with a tail index, the exact rows of their extreme values
    (queries such as ``energy > t`` that select a tail are answered from it): by default every
    column but ``x``, ``y``, ``z`` and the id column, with about 0.5% of the values beyond each
    of two limits; a number in (0, 0.25] sets that share, a list of names the columns, and
    ``False`` builds none (lossless files only).

    One writer at a time per dataset: each step is written under the dataset's lock, against
    the manifest on disk. When another process or handle holds the lock, the writer waits up
    to ``lock_timeout`` seconds (default: the ``MOTES_LOCK_TIMEOUT`` environment variable,
    else 0), then raises ``UsageError`` naming the holder.
    """

    def __init__(self, path: Union[str, os.PathLike], *, leaf_size: Optional[int] = None,
                 lod_count: Optional[int] = None, treelet_size: Optional[int] = None, threads: Optional[int] = None,
                 sync: Optional[bool] = None, progress: bool = False, comm: Any = None,
                 aggregation: Optional[str] = None, target_bytes: Optional[int] = None,
                 best_axis: Optional[bool] = None, overfull: Optional[float] = None,
                 lock_timeout: Optional[float] = None, compression: Optional[str] = None,
                 ids: Union[bool, str, None] = None, tails: Union[bool, float, Sequence[str], None] = None):
        self.path = _args.path(path)
        self._core = None  # created with the first step, once its columns passed validation
        self._options = _write_options(leaf_size, lod_count, treelet_size, threads, sync, compression, ids, tails)
        self._lock_timeout = None if lock_timeout is None else _args.number("lock_timeout", lock_timeout)
        self._progress = progress
        self._comm = None if comm is None else _comm_handle(comm)
        self._comm_obj = comm
        # The parallel write's settings given (the rest: the core's ParallelWriteOptions).
        self._aggregation: Dict[str, Any] = {}
        if aggregation is not None:
            self._aggregation["method"] = _args.member("aggregation", _core.AggregationMethod, aggregation)
        if target_bytes is not None:
            self._aggregation["target_bytes"] = _args.integer("target_bytes", target_bytes, *_args.UINT64)
        if best_axis is not None:
            self._aggregation["best_axis"] = bool(best_axis)
        if overfull is not None:
            if not _args.number("overfull", overfull) >= 1.0:
                raise UsageError(f"overfull must be >= 1, got {overfull}")
            self._aggregation["overfull"] = float(overfull)

    def _parallel_options(self):
        """The core's ParallelWriteOptions of this writer (its defaults read now: lock_timeout's
        comes from the environment)."""
        o = _core.ParallelWriteOptions()
        o.write = self._options
        for name, value in self._aggregation.items():
            if name == "method":
                o.method = value
            else:
                setattr(o.aggregation, name, value)
        if self._lock_timeout is not None:
            o.lock_timeout = self._lock_timeout
        return o

    @_storage("cannot write the step")
    def write_step(self, step: int, species: Union[ColumnsLike, Mapping[str, ColumnsLike], None], *,
                   time: float = 0.0, attributes: Optional[Mapping[str, Any]] = None,
                   index: Optional[Mapping[str, str]] = None, units: Optional[Mapping[str, str]] = None,
                   species_name: str = "particles", error_bounds: Optional[Mapping[str, float]] = None,
                   fields: Optional[Mapping[str, Any]] = None) -> List[dict]:
        """Writes one step. ``species`` maps species name -> columns, or is the columns of one species
        (named ``species_name``). ``index`` maps column -> "auto" | "none" | "quantile".
        ``error_bounds`` maps column -> the largest absolute difference allowed between a value
        given and the value stored (error-bounded lossy storage; others are stored exactly).
        ``fields`` maps field name -> :class:`motes.Field` (grids stored in HZ order beside the
        particles; ``species`` may then be None for a step of fields only).
        Returns one summary dict per species (sizes, timings, per-column ranges), then one per
        field; a parallel writer returns its report instead (parts, balance, phase timings; the
        same on every rank)."""
        def prepare():
            if species is None:
                groups = {}
            elif isinstance(species, Mapping) and species and all(isinstance(v, Mapping) for v in species.values()):
                groups = species
            else:
                groups = {species_name: species}
            payload = [(_args.text("species name", name), _column_tuples(cols, index, units, error_bounds))
                       for name, cols in groups.items()]
            return payload, _args.attributes("step attributes", attributes), _args.step(step), \
                _args.number("step time", time)

        payload, attrs, step, time = _on_every_rank(self._comm_obj, prepare, f"checking the columns of step {step}")
        from .field_file import field_tuple

        if self._comm is not None:
            from .field_blocks import split_fields

            whole, blocks = split_fields(self._comm_obj, fields)  # whole grids on rank 0; every rank's blocks
            return _core.write_step_parallel(self._comm, self.path, step, time, attrs, payload,
                                             self._parallel_options(), fields=whole, field_blocks=blocks).to_dict()

        if fields is not None and not isinstance(fields, Mapping):
            raise UsageError(f"fields must map names to motes.Field, got {type(fields).__name__}")
        field_payload = [field_tuple(_args.text("field name", n), f) for n, f in (fields or {}).items()]
        bar = _Progress(self._progress, f"step {step}")
        with self._writing():
            try:
                summaries, field_summaries = self._core.append_step(step, time, attrs, payload, self._options,
                                                                    progress=bar.callback(), fields=field_payload)
            finally:
                bar.close()
            return [s.to_dict() for s in summaries] + [
                {"field": name, "file_bytes": f.file_bytes, "data_bytes": f.data_bytes, "stored_bytes": f.stored_bytes,
                 "bitmask": f.bitmask, "ranges": f.ranges}
                for (name, *_), f in zip(field_payload, field_summaries)]

    @contextlib.contextmanager
    def _writing(self):
        """Opens (or creates) the dataset for a write; when the write fails in a dataset this
        writer created and no step was ever published there, removes it again (under the lock,
        so a dataset another process has written to in the meantime is kept)."""
        if self._core is None:
            self._core = _core.DatasetCore.create(self.path, lock_timeout=self._lock_timeout)
        try:
            yield
        except BaseException:
            core = self._core
            if core.created:
                self._core = None
                try:
                    core.remove_if_unused()
                except (MotesError, OSError):
                    pass
            raise

    @_storage("cannot write the step")
    def write_step_chunks(self, step: int, species: Mapping[str, Iterable[ColumnsLike]], *, time: float = 0.0,
                          attributes: Optional[Mapping[str, Any]] = None, index: Optional[Mapping[str, str]] = None,
                          units: Optional[Mapping[str, Mapping[str, str]]] = None,
                          fields: Optional[Mapping[str, Any]] = None) -> List[dict]:
        """Writes one step from streams of column chunks, in bounded memory: ``species`` maps
        each species name to an iterable of column mappings (all with the same columns), and
        every non-empty chunk becomes one part file behind the species' step index. Use chunks
        of a million rows or more: queries prune within a part, and skip whole parts only
        where their bounds allow. ``units`` maps species -> column -> unit text; ``fields``
        maps names to :class:`motes.Field` (each written whole). The step appears only when
        every chunk is written; on any error nothing is published."""
        from .field_file import field_tuple

        if self._comm is not None:
            raise UsageError("write_step_chunks is serial; parallel writers use write_step")
        attrs = _args.attributes("step attributes", attributes)
        step, time = _args.step(step), _args.number("step time", time)
        fields = dict(fields or {})
        if not isinstance(species, Mapping) or not (species or fields):
            raise UsageError("species must be a mapping of name -> iterable of column chunks (non-empty unless "
                             "fields are given)")
        names = [_args.text("species name", name) for name in species]
        field_names = [_args.text("field name", name) for name in fields]
        units = dict(units or {})
        with self._writing():
            parted = self._core.begin_parted_step(step, time, attrs, names, self._options, fields=field_names)
            try:
                summaries = []
                for name, chunks in species.items():
                    for chunk in chunks:
                        summaries.append(parted.add_part(name, _column_tuples(chunk, index, units.get(name))).to_dict())
                for name, f in fields.items():
                    s = parted.add_field(field_tuple(name, f))
                    summaries.append({"field": name, "file_bytes": s.file_bytes, "stored_bytes": s.stored_bytes})
                parted.commit()
            finally:
                parted.close()  # releases the lock; an uncommitted step's files are removed
            return summaries

    def close(self) -> None:
        pass

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write(path: Union[str, os.PathLike], columns: Union[ColumnsLike, Mapping[str, ColumnsLike], None], *,
          step: int = 0,
          time: float = 0.0, species: str = "particles", attributes: Optional[Mapping[str, Any]] = None,
          index: Optional[Mapping[str, str]] = None, units: Optional[Mapping[str, str]] = None,
          leaf_size: Optional[int] = None, lod_count: Optional[int] = None, treelet_size: Optional[int] = None,
          threads: Optional[int] = None, sync: Optional[bool] = None, progress: bool = False, comm: Any = None,
          aggregation: Optional[str] = None, target_bytes: Optional[int] = None, best_axis: Optional[bool] = None,
          lock_timeout: Optional[float] = None, compression: Optional[str] = None,
          error_bounds: Optional[Mapping[str, float]] = None, fields: Optional[Mapping[str, Any]] = None,
          ids: Union[bool, str, None] = None, tails: Union[bool, float, Sequence[str], None] = None):
    """Writes one step of particles into the dataset directory ``path`` (created when absent).

    ``columns`` maps names to equal-length 1-D numpy arrays and must hold ``x``, ``y``, ``z``
    (float32/float64); or it maps species names to such mappings. Arrays are read in place.
    Values are stored compressed and exactly (``compression="lossless"``) or as they are
    (``"none"``); ``error_bounds`` allows an absolute error per column instead.
    With ``comm`` (mpi4py), a collective write of every rank's columns (see :class:`Writer`);
    ``ids`` and ``tails`` choose the value indexes (see :class:`Writer`).
    ``fields`` maps names to :class:`motes.Field` grids written with the step (``columns``
    may then be None: a step of fields only).
    """
    w = Writer(path, leaf_size=leaf_size, lod_count=lod_count, treelet_size=treelet_size, threads=threads,
               sync=sync, progress=progress, comm=comm, aggregation=aggregation, target_bytes=target_bytes,
               best_axis=best_axis, lock_timeout=lock_timeout, compression=compression, ids=ids, tails=tails)
    return w.write_step(step, columns, time=time, attributes=attributes, index=index, units=units,
                        species_name=species, error_bounds=error_bounds, fields=fields)


@dataclass
class Step:
    """One step of a dataset: its index, physical time, attributes and species."""

    index: int
    time: float
    attributes: Dict[str, Any]
    species: Dict[str, dict] = field(repr=False)
    fields: Dict[str, dict] = field(default_factory=dict, repr=False)


class Dataset:
    """An open dataset directory. Use :func:`motes.open`."""

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = _args.path(path)
        with storage_errors(self.path, "cannot open the dataset"):
            self._core = _core.DatasetCore.open(self.path)
        self._steps = [Step(s["index"], s["time"], s["attributes"], s["species"], s["fields"])
                       for s in self._core.steps]
        self._files: Dict[str, Any] = {}

    def __repr__(self) -> str:
        names = sorted({n for st in self._steps for n in st.species})
        return f"<motes.Dataset {self.path!r}: {len(self._steps)} steps, species {names}>"

    # --- structure ---------------------------------------------------------------------------
    @property
    def steps(self) -> List[int]:
        return [s.index for s in self._steps]

    @property
    def times(self) -> List[float]:
        return [s.time for s in self._steps]

    @property
    def attributes(self) -> Dict[str, Any]:
        """Dataset-level attributes (a JSON object), e.g. the code and its input deck."""
        return self._core.attributes

    @_storage("cannot write the attributes")
    def set_attributes(self, attributes: Mapping[str, Any], *, lock_timeout: Optional[float] = None) -> None:
        """Replaces the dataset-level attributes. Like a step write, this takes the dataset's
        lock (waiting up to ``lock_timeout`` seconds for another writer) and rewrites the
        manifest on disk atomically, keeping every step appended since this handle was opened."""
        attrs = _args.attributes("dataset attributes", attributes)
        if lock_timeout is not None:
            self._core.lock_timeout = _args.number("lock_timeout", lock_timeout)
        self._core.set_attributes(attrs)

    def step(self, step: Optional[int] = None) -> Step:
        """The step with index ``step`` (default: the last step)."""
        if not self._steps:
            raise UsageError(f"dataset '{self.path}' has no steps")
        if step is None:
            return self._steps[-1]
        step = _args.step(step)
        for s in self._steps:
            if s.index == step:
                return s
        raise UsageError(f"dataset has no step {step} (steps: {', '.join(map(str, self.steps[:20]))})")

    def species_names(self, step: Optional[int] = None) -> List[str]:
        return list(self.step(step).species) if self._steps else []

    def field_names(self, step: Optional[int] = None) -> List[str]:
        """The grid fields of a step (default: the last)."""
        return list(self.step(step).fields) if self._steps else []

    def _fields_for(self, spec, step: Optional[int]):
        """The query's spec, its expression given the samplers of the fields it names
        (``field('Bz')``, ``field('E', 'x')``: the field at each particle's position)."""
        if spec.where and "field" in spec.where:
            for name, component in _core.expression_fields(spec.where):
                f = self.field(name, step)
                _core.query_add_field(spec, name, component, f.sampler(component or None))
        return spec

    def sample(self, field: str, x, y=None, z=None, *, step: Optional[int] = None, component: Optional[str] = None,
               fill: float = float("nan")):
        """A grid field of a step at arbitrary points (positions x, y, z): linear interpolation
        along each axis (trilinear in 3-D), ``fill`` outside the grid; see
        :meth:`motes.field_file.StoredField.sample`."""
        return self.field(field, step).sample(x, y, z, component=component, fill=fill)

    @_storage("cannot open the field file")
    def field(self, name: str, step: Optional[int] = None):
        """A grid field of a step (default: the last) as a :class:`motes.field_file.StoredField`:
        ``.shape``, ``.levels``, ``.read(box=None, level=0)`` (see there). Its file is checked
        against the manifest when opened."""
        from .field_file import StoredField

        st = self.step(step)
        if name not in st.fields:
            raise UsageError(f"step {st.index} has no field '{name}' (fields: {', '.join(st.fields) or 'none'})")
        key = ("field", st.index, name)
        f = self._files.get(key)
        if f is None:
            f = self._files[key] = StoredField(self._core.open_field(st.index, name))
        return f

    def _resolve(self, step: Optional[int], species: Optional[str]) -> Tuple[Step, str]:
        st = self.step(step)
        if not st.species:
            raise UsageError(f"step {st.index} holds no particles, only fields ({', '.join(st.fields)})")
        if species is None:
            if len(st.species) != 1:
                raise UsageError(f"step {st.index} has several species ({', '.join(st.species)}): pass species=")
            species = next(iter(st.species))
        if species not in st.species:
            raise UsageError(f"step {st.index} has no species '{species}' (species: {', '.join(st.species)})")
        return st, species

    def _species(self, step: Optional[int], species: Optional[str]) -> dict:
        st, name = self._resolve(step, species)
        return st.species[name]

    def schema(self, step: Optional[int] = None, species: Optional[str] = None) -> List[Column]:
        """Columns of a species: name, numpy dtype, extra index kind, unit, error bound."""
        sp = self._species(step, species)
        return [Column(n, numpy_dtype(d), i, u, b) for n, d, i, u, b in sp["columns"]]

    def count_total(self, step: Optional[int] = None, species: Optional[str] = None) -> int:
        return int(self._species(step, species)["count"])

    def bounds(self, step: Optional[int] = None, species: Optional[str] = None):
        return self._species(step, species)["bounds"]

    @_storage("cannot open the particle files")
    def source(self, step: Optional[int] = None, species: Optional[str] = None):
        """The particles of one species in one step (cached): one particle file, or the part
        files of a parallel write behind their step index; queries run over it. The files are
        checked against the manifest (checksums, count, bounds, schema) when first opened."""
        st, name = self._resolve(step, species)
        key = (st.index, name)
        c = self._files.get(key)
        if c is None:
            c = self._files[key] = self._core.open_species(st.index, name)
        return c

    def file(self, step: Optional[int] = None, species: Optional[str] = None, part: int = 0):
        """Particle file ``part`` of one species in one step (a serial write has one)."""
        src = self.source(step, species)
        if not 0 <= part < src.part_count:
            raise UsageError(f"part {part} out of range (this species has {src.part_count} part files)")
        return src.part(part)

    # --- queries -----------------------------------------------------------------------------
    @_storage("cannot read")
    def select(self, where: Optional[str] = None, box: BoxLike = None, quality: Optional[Quality] = None, *,
               fraction: Optional[float] = None, step: Optional[int] = None, species: Optional[str] = None,
               threads: Optional[int] = None, cancel: Optional[_core.CancelToken] = None,
               timeout: Optional[float] = None):
        """The selection (file positions) matching the query, without copying any column.
        ``cancel`` and ``timeout`` hold for its gathers too (see :meth:`query`)."""
        return _core.select(self.source(step, species),
                            self._fields_for(_selection(where, box, quality, fraction, threads, cancel, timeout), step))

    @_storage("cannot read")
    def query(self, where: Optional[str] = None, box: BoxLike = None, quality: Optional[Quality] = None, *,
              fraction: Optional[float] = None, columns: Optional[Sequence[str]] = None,
              step: Optional[int] = None, species: Optional[str] = None, threads: Optional[int] = None,
              cancel: Optional[_core.CancelToken] = None, timeout: Optional[float] = None, steps: Any = None) -> Table:
        """Particles matching ``where`` (an expression such as ``"energy > 1.3 and 10 < x < 20"``)
        inside ``box`` (xmin, ymin, zmin, xmax, ymax, zmax; inclusive), at ``quality`` in [0, 1]
        (1 = every particle; a pair (q0, q1) reads only what q1 adds to q0), or among a share
        ``fraction`` of the particles (a preview: round(fraction * N) particles per file,
        spread over the whole step; a larger fraction only adds particles).

        Returns a :class:`Table` of the requested ``columns`` (default: all).

        ``cancel`` (a ``motes._core.CancelToken``, cancelled from another thread) and ``timeout``
        (seconds) stop the query: it raises :class:`motes.CancelledError` at its next check
        (between chunks of work).

        ``steps`` (a list of step indexes, a range, ``"all"``, ``"0:100:10"``; instead of
        ``step``) queries several steps at once: one Table with a leading ``step`` column, the
        rows of each step in step order; ``timeout`` holds for all of them (see :mod:`motes.steps`)."""
        from .field_queries import field_reference, gather_with_fields

        if steps is not None:  # several steps: motes.steps
            from .steps import query as across
            return across(self, steps, step, where=where, box=box, quality=quality, fraction=fraction, columns=columns,
                          species=species, threads=threads, cancel=cancel, timeout=timeout)
        sel = self.select(where, box, quality, fraction=fraction, step=step, species=species, threads=threads,
                          cancel=cancel, timeout=timeout)
        if columns is not None and not isinstance(columns, str) and any(field_reference(c) for c in columns):
            self._columns([c for c in columns if not field_reference(c)], step, species)  # checks the others
            return Table(gather_with_fields(self, sel, list(columns), step), sel.counters)
        names = self._columns(columns, step, species)
        return Table(dict(zip(names, sel.gather_columns(names, 0, sel.size))), sel.counters)

    def query_batches(self, where: Optional[str] = None, box: BoxLike = None, quality: Optional[Quality] = None, *,
                      fraction: Optional[float] = None, columns: Optional[Sequence[str]] = None,
                      batch_size: int = 1 << 20, step: Optional[int] = None, species: Optional[str] = None,
                      threads: Optional[int] = None, cancel: Optional[_core.CancelToken] = None,
                      timeout: Optional[float] = None) -> Iterator[Table]:
        """Like :meth:`query`, yielding tables of at most ``batch_size`` rows (bounded memory);
        ``timeout`` counts from the first batch asked for, over all batches."""
        if _args.integer("batch_size", batch_size, 1, _args.UINT64[1]) < 1:
            raise UsageError("batch_size must be at least 1")
        sel = self.select(where, box, quality, fraction=fraction, step=step, species=species, threads=threads,
                          cancel=cancel, timeout=timeout)
        names = self._columns(columns, step, species)
        for begin in range(0, sel.size, batch_size):
            end = min(sel.size, begin + batch_size)
            with storage_errors(self.path, "cannot read"):
                cols = sel.gather_columns(names, begin, end)
            yield Table(dict(zip(names, cols)), sel.counters)

    def _columns(self, columns, step, species) -> List[str]:
        known = [c.name for c in self.schema(step, species)]
        if columns is None:
            return known
        if isinstance(columns, str):
            columns = [columns]
        for c in columns:
            if c not in known:
                raise UsageError(f"unknown column '{c}' (columns: {', '.join(known)})")
        return list(columns)

    @_storage("cannot read")
    def count(self, where: Optional[str] = None, box: BoxLike = None, quality: Optional[Quality] = None, *,
              fraction: Optional[float] = None, step: Optional[int] = None, species: Optional[str] = None,
              threads: Optional[int] = None, cancel: Optional[_core.CancelToken] = None,
              timeout: Optional[float] = None, steps: Any = None) -> int:
        """Number of particles matching the query (nothing is copied). With ``steps`` (see
        :meth:`query`), a time series: a Table of ``step``, ``time``, ``count`` (see :mod:`motes.steps`)."""
        if steps is not None:  # several steps: motes.steps
            from .steps import count as across
            return across(self, steps, step, where=where, box=box, quality=quality, fraction=fraction, species=species,
                          threads=threads, cancel=cancel, timeout=timeout)
        return int(_core.count(self.source(step, species), self._fields_for(
            _selection(where, box, quality, fraction, threads, cancel, timeout), step)))

    @_storage("cannot read")
    def stats(self, column: str, where: Optional[str] = None, box: BoxLike = None, quality: Optional[Quality] = None, *,
              fraction: Optional[float] = None, step: Optional[int] = None, species: Optional[str] = None,
              threads: Optional[int] = None, cancel: Optional[_core.CancelToken] = None,
              timeout: Optional[float] = None, steps: Any = None) -> Dict[str, Any]:
        """count, valid (not NaN), min, max, sum, mean of ``column`` over the matching particles.
        With ``steps`` (see :meth:`query`), a time series: a Table of ``step``, ``time`` and these
        keys, NaN for None (see :mod:`motes.steps`)."""
        if steps is not None:  # several steps: motes.steps
            from .steps import stats as across
            return across(self, steps, column, step, where=where, box=box, quality=quality, fraction=fraction,
                          species=species, threads=threads, cancel=cancel, timeout=timeout)
        return _core.stats(self.source(step, species), _args.text("column", column), self._fields_for(
            _selection(where, box, quality, fraction, threads, cancel, timeout), step)).to_dict()

    @_storage("cannot read")
    def histogram(self, x: str, y: Optional[str] = None, *, bins: Union[int, Tuple[int, int]] = 64,
                  range: Optional[Sequence] = None, weights: Optional[str] = None, where: Optional[str] = None,
                  box: BoxLike = None, quality: Optional[Quality] = None, fraction: Optional[float] = None,
                  step: Optional[int] = None, species: Optional[str] = None, threads: Optional[int] = None,
                  cancel: Optional[_core.CancelToken] = None, timeout: Optional[float] = None, steps: Any = None):
        """1-D (``y=None``) or 2-D histogram of the matching particles, computed while traversing.

        Same conventions as ``numpy.histogram`` / ``numpy.histogram2d`` with integer bins: returns
        ``(counts, edges)`` or ``(counts, xedges, yedges)``; counts are int64, or float64 sums of
        ``weights``. ``range`` defaults to the min/max of the matching values.

        With ``steps`` (see :meth:`query`): ``(counts, edges, steps)`` or ``(counts, xedges,
        yedges, steps)``, counts of shape ``(n_steps, bins)`` or ``(n_steps, nx, ny)``, every
        step binned over one common range (default: the min/max over all the steps; see
        :mod:`motes.steps`)."""
        from .field_queries import field_reference
        from .field_queries import histogram as field_histogram

        if steps is not None:  # several steps: motes.steps
            from .steps import histogram as across
            return across(self, steps, x, y, step, bins=bins, range=range, weights=weights, where=where, box=box,
                          quality=quality, fraction=fraction, species=species, threads=threads, cancel=cancel,
                          timeout=timeout)
        f = self.source(step, species)
        sel = self._fields_for(_selection(where, box, quality, fraction, threads, cancel, timeout), step)
        axes, nbins, given = _args.histogram_axes(x, y, bins, range)  # given: (min, max) or None per axis
        if any(field_reference(a) for a in axes):  # a grid field at the particles: sampled, then binned
            return field_histogram(self, _core.select(f, sel), axes, nbins, given, weights, step)
        resolved = []
        for name, r in zip(axes, given):
            if r is None:
                s = _core.stats(f, name, sel)
                lo, hi = (0.0, 1.0) if s.min is None else (s.min, s.max)
            else:
                lo, hi = r
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            resolved.append((lo, hi))
        if y is None:
            h = _core.histogram(f, x, int(nbins[0]), *resolved[0], weight=weights, spec=sel)
        else:
            h = _core.histogram(f, x, int(nbins[0]), *resolved[0], y=y, ybins=int(nbins[1]), ylo=resolved[1][0],
                                yhi=resolved[1][1], weight=weights, spec=sel)
        if weights is None:
            h = h.astype(np.int64)
        edges = [np.linspace(lo, hi, int(n) + 1) for (lo, hi), n in zip(resolved, nbins)]
        return (h, *edges)

    @_storage("cannot read")
    def describe(self, step: Optional[int] = None, species: Optional[str] = None, *,
                 all_steps: bool = False, storage: bool = True) -> Dict[str, Any]:
        """What the dataset holds, as a plain dict that ``json.dumps`` takes as is (what
        ``motes info --json`` prints): its path and attributes; every step (index, time,
        attributes, species with counts and bounds); and the particle files of step
        ``step`` (default: the last; ``all_steps``: every step), of every species or only
        ``species``: part files, sizes (data, index, padding, overhead), tree shape, bounds,
        and the columns (dtype, index kind, unit with its label, SI factor and dimension,
        min, max, NaN count, ``storage``: bytes stored and codecs; ``storage=False`` leaves it
        out, which spares reading the header of every block). Bounds and ranges that JSON
        cannot hold (NaN) are None. The layout is documented in ``motes._describe``."""
        from ._describe import describe

        return describe(self, step, species, all_steps, storage)

    @_storage("cannot read")
    def track(self, ids=None, *, where: Optional[str] = None, at_step: Optional[int] = None, steps=None,
              columns: Optional[Sequence[str]] = None, species: Optional[str] = None,
              id_column: Optional[str] = None, fields: Optional[Sequence[str]] = None, preserve_order: bool = True):
        """Where particles are in each step, by id: a :class:`motes.track.Track` (``arrays``:
        (steps x ids) float64 with NaN where a particle is absent, ``present``, ``table``: the
        long form step, id, columns). ``ids`` (distinct), or ``where`` at ``at_step`` for the ids
        of a query; ``steps`` (default: all), ``columns`` (default: all), ``fields``: grid
        fields sampled at the particles' positions. Looked up through each file's id index
        (``motes.write(..., ids=)``); an id held twice within a step is a FormatError."""
        from .track import track

        return track(self, ids, where=where, at_step=at_step, steps=steps, columns=columns, species=species,
                     id_column=id_column, fields=fields, preserve_order=preserve_order)

    @_storage("cannot read")
    def verify(self, progress: bool = False) -> Dict[str, int]:
        """Checks everything: the manifest against the files (the header checksums it records,
        particle counts, bounds, schemas), and every checksum of every file (headers, index
        sections, data blocks), grid fields' files (every part) included. Raises FormatError
        naming the first bad file and block; returns counts ("pinned": species whose files the
        manifest identifies by checksum, all of them unless the dataset was written by motes 0.1)."""
        files = pinned = 0
        for st in self._steps:
            for name, sp in st.species.items():
                src = self._core.open_species(st.index, name)  # checked against the manifest, not cached
                pinned += sp["checksum"] is not None
                for k in range(src.part_count):
                    f = src.part(k)
                    bar = _Progress(progress, f"step {st.index} {name}" + (f" part {k}" if src.part_count > 1 else ""))
                    try:
                        f.verify_data(None if not progress else (lambda d, t: bar("verify", d, t)))
                    finally:
                        bar.close()
                    files += 1
            for name in st.fields:
                f = self._core.open_field(st.index, name)  # every part checked against the manifest
                bar = _Progress(progress, f"step {st.index} field {name}")
                try:
                    f.verify()
                finally:
                    bar.close()
                files += f.part_count
        species = sum(len(st.species) for st in self._steps)
        fields = sum(len(st.fields) for st in self._steps)
        return {"files": files, "steps": len(self._steps), "species": species, "fields": fields, "pinned": pinned}


def _comm_handle(comm: Any) -> int:
    if not getattr(_core, "has_mpi", False):
        raise UsageError("this motes was built without MPI: install an MPI library (e.g. libopenmpi-dev) and rebuild")
    try:
        return int(comm.py2f())
    except AttributeError:
        raise UsageError(f"comm must be an mpi4py communicator, got {type(comm).__name__}") from None


def _on_every_rank(comm: Any, fn, stage: str):
    """Runs fn() on every rank of comm (None: serially). When it raises on any rank, every
    rank raises: a rank that gave up before a collective call would leave the others waiting."""
    if comm is None:
        return fn()
    result, error = None, None
    try:
        result = fn()
    except (MotesError, ValueError, TypeError, OSError) as e:
        error = e
    mine = None if error is None else (_error_kind(error), f"{type(error).__name__}: {error}")
    failed = [(r, m) for r, m in enumerate(comm.allgather(mine)) if m is not None]
    if failed:
        listed = "; ".join(f"rank {r}: {m[1]}" for r, m in failed[:8])
        more = f"; and {len(failed) - 8} more ranks" if len(failed) > 8 else ""
        # Like the core's agreement: the class of the lowest failed rank's kind, on every rank.
        cls = {name: c for name, _status, c, _exit, _doc in _core.error_kinds}[failed[0][1][0]]
        raise cls(f"{stage} failed on {len(failed)} of {comm.size} ranks ({listed}{more})")
    return result


def _error_kind(e: BaseException) -> str:
    """The error table's kind of an exception caught by _on_every_rank."""
    if isinstance(e, MotesError):
        return getattr(e, "kind", "internal")
    if isinstance(e, FileNotFoundError):
        return "not_found"
    if isinstance(e, OSError):
        return "io"
    return "usage"  # ValueError, TypeError: the arguments


def read_partition(path: Union[str, os.PathLike], comm: Any, *, box: BoxLike = None, where: Optional[str] = None,
                   columns: Optional[Sequence[str]] = None, step: Optional[int] = None,
                   species: Optional[str] = None, quality: Optional[float] = None, fraction: Optional[float] = None,
                   threads: Optional[int] = None) -> Table:
    """Collective read of one step over the ranks of ``comm`` (mpi4py), whatever number of
    ranks wrote it. With ``box`` (this rank's region, inclusive; every rank passes one) each
    rank gets the particles inside its box, e.g. to restart a simulation on a new
    decomposition; without, each rank gets an even share of the matching particles.
    ``quality`` < 1 reads a level-of-detail preview (the particles of ``ds.query(quality=q)``).
    Part files are read by ranks spread over the communicator and the rows sent to the
    ranks that asked for them."""
    handle = _comm_handle(comm)

    def prepare():
        spec = _selection(where, box, quality, fraction, threads)  # checked as a query's
        req = _core.PartitionRequest()  # what is None keeps the core's default
        if quality is not None:
            req.quality = spec.quality_to
        if fraction is not None:
            req.fraction = spec.fraction
        if where is not None:
            req.where = spec.where
        req.box = spec.box
        if threads is not None:
            req.threads = spec.threads
        ds = Dataset(path)
        ds.source(step, species)  # the files, checked against the manifest
        req.columns = ds._columns(columns, step, species)
        return ds._species(step, species)["path"], req

    src, req = _on_every_rank(comm, prepare, f"opening '{os.fspath(path)}' for a parallel read")
    with storage_errors(path, "cannot read"):
        cols = _core.read_partition(handle, src, req)
    return Table({n: cols[n] for n in req.columns})


_WRITE_OPTIONS = ("leaf_size", "lod_count", "treelet_size", "threads", "sync", "compression")
_PARALLEL_OPTIONS = ("aggregation", "target_bytes", "best_axis", "overfull", "lock_timeout")
Writer.__doc__ = Writer.__doc__.rstrip() + "\n" + _defaults.options_doc(_WRITE_OPTIONS + _PARALLEL_OPTIONS)
write.__doc__ = write.__doc__.rstrip() + "\n" + _defaults.options_doc(
    _WRITE_OPTIONS + tuple(o for o in _PARALLEL_OPTIONS if o != "overfull"))


def open(path: Union[str, os.PathLike]) -> Dataset:  # noqa: A001 - mirrors builtins.open on purpose
    """Opens a dataset directory written by motes."""
    return Dataset(path)
