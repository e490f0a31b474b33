"""Writing: motes.write and motes.Writer (one step or a time series, serial or collective
over MPI ranks, with fields), and the core's WriteOptions of their arguments."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _args, _core, _defaults
from .errors import MotesError, UsageError, storage_method
from ._progress import Progress
from ._ranks import comm_handle, on_every_rank
from .dtypes import column_array
from .remote import is_remote

ColumnsLike = Mapping[str, np.ndarray]


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


def _share_or_names(o, name, value, share, names) -> None:
    """A value-index option (``tails``, ``covering``) onto WriteOptions ``o``: True keeps the
    default, False sets the share to 0, a number sets the share per side, names the columns."""
    if value is None:
        return
    if isinstance(value, bool):
        setattr(o, share, getattr(o, share) if value else 0.0)
    elif isinstance(value, (int, float, np.integer, np.floating)):
        setattr(o, share, _args.number(name, value))
    else:
        setattr(o, names, _args.names(name, value))


def _derived(value) -> list:
    """``derived=``: a mapping of names to expressions, as (name, expression) pairs."""
    if not isinstance(value, Mapping):
        raise UsageError(f"derived must map names to expressions, e.g. {{'vmag': 'sqrt(vx**2 + vy**2 + vz**2)'}}, "
                         f"not {type(value).__name__}")
    return [(_args.text("derived quantity name", name), _args.text(f"derived quantity '{name}'", expression))
            for name, expression in value.items()]


def _write_options(leaf_size=None, lod_count=None, treelet_size=None, threads=None, sync=None, compression=None,
                   ids=None, tails=None, stage_rows=None, covering=None, derived=None, prefix_share=None,
                   region_points=None):
    """The core's WriteOptions of a writer's arguments, checked; what is None keeps the core's default."""
    o = _core.WriteOptions()
    if derived is not None:
        o.derived = _derived(derived)
    # True: the default; False: none; a number: the share per side; names: those columns.
    _share_or_names(o, "tails", tails, "tail_fraction", "tail_columns")
    _share_or_names(o, "covering", covering, "tail_cover", "tail_cover_columns")
    if ids is not None:  # True: the default ("auto"); False: no id index; a name: that column
        if isinstance(ids, bool):
            o.id_column = "auto" if ids else ""
        else:
            o.id_column = _args.text("ids", ids)
    for name, value in (("leaf_size", leaf_size), ("lod_count", lod_count), ("treelet_size", treelet_size)):
        if value is not None:
            setattr(o.layout, name, _args.integer(name, value, 1, _args.UINT32[1]))
    if prefix_share is not None:
        o.layout.prefix_share = _args.number("prefix_share", prefix_share)
    if region_points is not None:
        o.layout.region_points = _args.integer("region_points", region_points, 1, _args.UINT64[1])
    if threads is not None:
        o.layout.threads = _args.threads(threads)
    if sync is not None:
        o.sync = bool(sync)
    if compression is not None:
        o.compression = _args.compression(compression)
    if stage_rows is not None:
        o.stage_rows = bool(stage_rows)
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

    ``covering`` stores, beside each tail index, the other columns' values at the rows of its
    outermost entries (by default the outermost 0.2% of the values on each side, every column
    stored exactly, about 1% more data), so that a tail query reads each column as one
    contiguous run instead of gathering scattered rows: a number in [0, 0.25] sets the share
    per side (at most the tail's own), a list of names the columns covered, and ``False``
    none (files then read as format 2.2).

    ``derived`` declares derived quantities, named expressions over the columns
    (``{"vmag": "sqrt(vx**2 + vy**2 + vz**2)"}``): each gets a tail index (covered as the
    columns' are) and statistics (``File.derived``) without its values being stored, and a
    query testing the same expression against a constant in its tail (``"sqrt(vx**2 + vy**2 +
    vz**2) > 3000"``) is answered through that index. Every species must have the columns
    named; columns with an error bound and fields cannot be derived from (lossless files only).

    ``background=True`` writes the steps on a thread of the core while the caller goes on
    (:mod:`motes.background`): :meth:`write_step` copies the step's arrays (``borrow=True``:
    keeps references instead; the arrays must then not change until the step is done), queues
    it and returns a ``concurrent.futures.Future`` of its summaries. A step is acknowledged,
    published and durable, when its future completes; at most ``max_pending`` steps are queued
    or being written, and ``on_backlog`` says what a step submitted while they are does:
    ``"block"`` (the default: ``write_step`` waits for room, every step is written) or
    ``"skip"`` (the step is not written; its future's result is a
    :class:`motes.SkippedStep`, ``future.skipped`` is True at once, and the step is listed in
    the manifest's skipped steps, :attr:`Dataset.skipped`). When steps come faster than they
    are written the writer says so once per backlog: a :class:`motes.BacklogWarning` with the
    rates, also logged to ``motes.background``. ``nice`` (0-19, Linux) runs the writer's
    threads that much nicer than the process: a simulation beside it keeps the cores it wants,
    and motes writes with what is left (only the copy in ``write_step`` runs at the caller's
    priority). A step's error is set on its future and
    raised again by the next ``write_step``, :meth:`flush` or :meth:`close`. With ``comm``
    every rank calls ``write_step`` as before and the collective write runs on each rank's
    writer thread, on a duplicate of ``comm`` (MPI must allow MPI_THREAD_MULTIPLE, mpi4py's
    default); each rank's future completes, with None, once the step is published.

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
                 local_aggregators: Optional[bool] = None, lock_timeout: Optional[float] = None, compression: Optional[str] = None,
                 ids: Union[bool, str, None] = None, tails: Union[bool, float, Sequence[str], None] = None,
                 stage_rows: Optional[bool] = None, covering: Union[bool, float, Sequence[str], None] = None,
                 derived: Optional[Mapping[str, str]] = None, prefix_share: Optional[float] = None,
                 region_points: Optional[int] = None, background: bool = False, max_pending: int = 2,
                 borrow: bool = False, on_backlog: Optional[str] = None, nice: int = 0):
        self.path = _args.path(path)
        if is_remote(self.path):
            raise UsageError(f"cannot write to {self.path}: datasets in object stores and on web servers are "
                             "read-only in motes (write one locally and upload its directory)")
        self._background = None  # motes.background.BackgroundSteps, from the first background step
        self._max_pending = _args.integer("max_pending", max_pending, 1, 1 << 20)
        self._on_backlog = _on_backlog(on_backlog, background, comm)
        self._nice = _args.integer("nice", nice, 0, 19)
        if self._nice and not background:
            raise UsageError(f"nice={nice} lowers a background writer's threads: pass background=True as well "
                             "(a synchronous write runs on the caller's threads)")
        self._borrow = bool(borrow)
        self._background_wanted = bool(background)
        if background and comm is not None:
            _check_thread_level()
        self._core = None  # created with the first step, once its columns passed validation
        self._options = _write_options(leaf_size, lod_count, treelet_size, threads, sync, compression, ids, tails,
                                       stage_rows, covering, derived, prefix_share, region_points)
        self._lock_timeout = None if lock_timeout is None else _args.number("lock_timeout", lock_timeout)
        self._progress = progress
        self._comm = None if comm is None else comm_handle(comm)
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
        if local_aggregators is not None:
            self._aggregation["local"] = bool(local_aggregators)

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

    @storage_method("cannot write the step")
    def write_step(self, step: int, species: Union[ColumnsLike, Mapping[str, ColumnsLike], None], *,
                   time: float = 0.0, attributes: Optional[Mapping[str, Any]] = None,
                   index: Optional[Mapping[str, str]] = None, units: Optional[Mapping[str, str]] = None,
                   species_name: str = "particles", error_bounds: Optional[Mapping[str, float]] = None,
                   fields: Optional[Mapping[str, Any]] = None) -> List[dict]:
        """Writes one step. ``species`` maps species name -> columns, or is the columns of one species
        (named ``species_name``). ``index`` maps column -> "auto" | "none" | "quantile";
        ``units`` column -> unit text, or species name -> such a mapping.
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
            per_species = isinstance(units, Mapping) and bool(units) and all(isinstance(u, Mapping)
                                                                             for u in units.values())
            payload = [(_args.text("species name", name),
                        _column_tuples(cols, index, (units or {}).get(name) if per_species else units, error_bounds))
                       for name, cols in groups.items()]
            return payload, _args.attributes("step attributes", attributes), _args.step(step), \
                _args.number("step time", time)

        payload, attrs, step, time = on_every_rank(self._comm_obj, prepare, f"checking the columns of step {step}")
        from .fields.file import field_tuple

        if self._comm is not None:
            from .fields.blocks import split_fields

            whole, blocks = split_fields(self._comm_obj, fields)  # whole grids on rank 0; every rank's blocks
            if self._background_wanted:
                return self._submit_parallel(step, time, attrs, payload, whole, blocks)
            return _core.write_step_parallel(self._comm, self.path, step, time, attrs, payload,
                                             self._parallel_options(), fields=whole, field_blocks=blocks).to_dict()

        if fields is not None and not isinstance(fields, Mapping):
            raise UsageError(f"fields must map names to motes.Field, got {type(fields).__name__}")
        field_payload = [field_tuple(_args.text("field name", n), f) for n, f in (fields or {}).items()]
        if self._background_wanted:
            return self._submit(step, time, attrs, payload, field_payload)
        bar = Progress(self._progress, f"step {step}")
        with self._writing():
            try:
                summaries, field_summaries = self._core.append_step(step, time, attrs, payload, self._options,
                                                                    progress=bar.callback(), fields=field_payload)
            finally:
                bar.close()
            return _summary_dicts(field_payload, (summaries, field_summaries))

    def _queue(self, core):
        """The background queue, for ``core`` (None: collective MPI writes)."""
        from .background import BackgroundSteps

        return BackgroundSteps(core, self._max_pending, self._on_backlog, self.path, self._nice)

    def _submit(self, step, time, attrs, payload, field_payload):
        """Queues a step on the background writer (created with the first); its future."""
        if self._background is None:
            if self._core is None:
                self._core = _core.DatasetCore.create(self.path, lock_timeout=self._lock_timeout)
            self._background = self._queue(self._core)
        return self._background.submit(step, time, attrs, payload, self._options, field_payload, self._borrow,
                                       lambda outcome: _summary_dicts(field_payload, outcome))

    def _submit_parallel(self, step, time, attrs, payload, whole, blocks):
        """Queues a collective step on the background writer: its MPI calls go through a
        communicator of its own (a duplicate of the writer's), beside the simulation's."""
        if self._background is None:
            self._background_comm = self._comm_obj.Dup()
            self._background = self._queue(None)
        return self._background.submit_parallel(comm_handle(self._background_comm), self.path, step, time, attrs,
                                                payload, self._parallel_options(), whole, blocks, self._borrow)

    def flush(self) -> None:
        """Waits until every step given is written (background writers; others write each step
        before returning); raises the first error of a step not yet raised."""
        if self._background is not None:
            self._background.flush()

    def skip_step(self, step: int, *, time: float = 0.0, reason: str = "skipped"):
        """Lists step ``step`` as skipped, not written, with ``reason`` (a background writer
        only: the entry joins the manifest in its turn, after the steps given before it): what
        a reader sees in :attr:`Dataset.skipped` for a step a policy left out (``motes ingest
        --every K`` gives ``"every"``). Returns the step's future (a :class:`motes.SkippedStep`)."""
        if not self._background_wanted:
            raise UsageError("skip_step lists a step in a background writer's queue: make the writer with "
                             "background=True")
        step, time = _args.step(step), _args.number("step time", time)
        reason = _args.text("reason", reason)
        if reason == "backlog":
            raise UsageError("reason 'backlog' is the writer's own (on_backlog='skip'); name the policy that skipped "
                             "the step")
        if self._background is None:
            if self._core is None:
                self._core = _core.DatasetCore.create(self.path, lock_timeout=self._lock_timeout)
            self._background = self._queue(self._core)
        return self._background.skip(step, time, reason, self._options.sync)

    @property
    def pending(self) -> int:
        """Steps queued or being written (0 for a writer that is not in the background)."""
        return self._background.pending if self._background is not None else 0

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

    @storage_method("cannot write the step")
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
        from .fields.file import field_tuple

        if self._comm is not None:
            raise UsageError("write_step_chunks is serial; parallel writers use write_step")
        self.flush()  # a background writer's steps in flight come first: this one is written now
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
        """Waits for the steps in flight (background writers), raising the first error not yet
        raised. A writer that created the dataset and published no step removes it."""
        if self._background is None:
            return
        background, self._background = self._background, None
        try:
            background.close()
        finally:
            comm = getattr(self, "_background_comm", None)
            if comm is not None:
                self._background_comm = None
                comm.Free()
            core = self._core
            if core is not None and core.created:
                try:
                    core.remove_if_unused()
                except (MotesError, OSError):
                    pass

    def __enter__(self) -> "Writer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _on_backlog(value: Optional[str], background: bool, comm: Any) -> str:
    """The policy of a background writer whose queue is full: "block" (default) or "skip"."""
    from .background import check_on_backlog

    if value is None:
        return "block"
    check_on_backlog(value)
    if not background:
        raise UsageError(f"on_backlog={value!r} applies to background writes: pass background=True as well "
                         "(a synchronous write_step returns once its step is written, so no step waits in a queue)")
    if value == "skip" and comm is not None:
        raise UsageError("on_backlog='skip' is for serial writers: with comm= each rank's queue fills at its own "
                         "moment, and a collective step must be skipped by every rank or by none")
    return value


def _check_thread_level() -> None:
    """Background collective writes call MPI from a thread of their own while the simulation
    calls it from its own: MPI must run with MPI_THREAD_MULTIPLE (mpi4py asks for it unless
    mpi4py.rc.thread_level says otherwise)."""
    from mpi4py import MPI

    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        raise UsageError("background=True with comm= needs MPI initialised with MPI_THREAD_MULTIPLE (mpi4py's "
                         "default; this process has a lower level: see mpi4py.rc.thread_level)")


def _summary_dicts(field_payload, outcome) -> List[dict]:
    """A written step's summaries as dicts: one per species, then one per field."""
    summaries, field_summaries = outcome
    return [s.to_dict() for s in summaries] + [
        {"field": name, "file_bytes": f.file_bytes, "data_bytes": f.data_bytes, "stored_bytes": f.stored_bytes,
         "bitmask": f.bitmask, "ranges": f.ranges}
        for (name, *_), f in zip(field_payload, field_summaries)]


def write(path: Union[str, os.PathLike], columns: Union[ColumnsLike, Mapping[str, ColumnsLike], None], *,
          step: int = 0,
          time: float = 0.0, species: str = "particles", attributes: Optional[Mapping[str, Any]] = None,
          index: Optional[Mapping[str, str]] = None, units: Optional[Mapping[str, str]] = None,
          leaf_size: Optional[int] = None, lod_count: Optional[int] = None, treelet_size: Optional[int] = None,
          threads: Optional[int] = None, sync: Optional[bool] = None, progress: bool = False, comm: Any = None,
          aggregation: Optional[str] = None, target_bytes: Optional[int] = None, best_axis: Optional[bool] = None,
          lock_timeout: Optional[float] = None, compression: Optional[str] = None,
          error_bounds: Optional[Mapping[str, float]] = None, fields: Optional[Mapping[str, Any]] = None,
          ids: Union[bool, str, None] = None, tails: Union[bool, float, Sequence[str], None] = None,
          covering: Union[bool, float, Sequence[str], None] = None, derived: Optional[Mapping[str, str]] = None,
          prefix_share: Optional[float] = None, region_points: Optional[int] = None):
    """Writes one step of particles into the dataset directory ``path`` (created when absent).

    ``columns`` maps names to equal-length 1-D numpy arrays and must hold ``x``, ``y``, ``z``
    (float32/float64); or it maps species names to such mappings. Arrays are read in place.
    Values are stored compressed and exactly (``compression="lossless"``) or as they are
    (``"none"``); ``error_bounds`` allows an absolute error per column instead.
    With ``comm`` (mpi4py), a collective write of every rank's columns (see :class:`Writer`);
    ``ids``, ``tails``, ``covering`` and ``derived`` choose the value indexes (see :class:`Writer`).
    ``fields`` maps names to :class:`motes.Field` grids written with the step (``columns``
    may then be None: a step of fields only).
    """
    w = Writer(path, leaf_size=leaf_size, lod_count=lod_count, treelet_size=treelet_size, threads=threads,
               sync=sync, progress=progress, comm=comm, aggregation=aggregation, target_bytes=target_bytes,
               best_axis=best_axis, lock_timeout=lock_timeout, compression=compression, ids=ids, tails=tails,
               covering=covering, derived=derived, prefix_share=prefix_share,
               region_points=region_points)
    return w.write_step(step, columns, time=time, attributes=attributes, index=index, units=units,
                        species_name=species, error_bounds=error_bounds, fields=fields)


_WRITE_OPTIONS = ("leaf_size", "lod_count", "treelet_size", "prefix_share", "region_points", "threads", "sync", "compression", "stage_rows")
_PARALLEL_OPTIONS = ("aggregation", "target_bytes", "best_axis", "overfull", "local_aggregators", "lock_timeout")
Writer.__doc__ = Writer.__doc__.rstrip() + "\n" + _defaults.options_doc(_WRITE_OPTIONS + _PARALLEL_OPTIONS)
write.__doc__ = write.__doc__.rstrip() + "\n" + _defaults.options_doc(
    tuple(o for o in _WRITE_OPTIONS + _PARALLEL_OPTIONS if o not in ("overfull", "local_aggregators", "stage_rows")))
