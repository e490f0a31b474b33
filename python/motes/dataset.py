"""Reading: motes.open and Dataset (steps, species, queries, analyses, fields), and
motes.follow. The collective read_partition is in motes.partition, writing in motes.writer,
query results in motes.table."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _args, _core, leftovers
from ._describe import describe
from ._sizes import sizes
from ._verify import verify
from ._defaults import HISTOGRAM_BINS
from .dtypes import numpy_dtype
from .errors import UsageError, storage_errors
from .live import follow_steps, wait_for_step
from .errors import storage_method
from .request import BoxLike, Quality, Request, checked_columns, selection
from .table import Column, Table

__all__ = ["open", "follow", "Dataset"]



@dataclass
class Step:
    """One step of a dataset: its index, physical time, attributes and species."""

    index: int
    time: float
    attributes: Dict[str, Any]
    species: Dict[str, dict] = field(repr=False)
    fields: Dict[str, dict] = field(default_factory=dict, repr=False)
    dataset: Optional["Dataset"] = field(default=None, repr=False, compare=False)


class Dataset:
    """An open dataset directory. Use :func:`motes.open`."""

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = _args.path(path)
        from .remote import core_path, is_remote

        self.remote = is_remote(self.path)  # an object store or a web server (motes.remote)
        self._core_path = core_path(self.path) if self.remote else self.path
        with storage_errors(self.path, "cannot open the dataset"):
            self._core = _core.DatasetCore.open(self._core_path)
        self._load_steps()
        self._files: Dict[str, Any] = {}

    def _load_steps(self) -> None:
        self._steps = [Step(s["index"], s["time"], s["attributes"], s["species"], s["fields"], self)
                       for s in self._core.steps]

    # --- a dataset being written -------------------------------------------------------------
    @storage_method("cannot re-read the manifest")
    def refresh(self) -> List[int]:
        """Re-reads the manifest: the steps published since this handle was opened (or last
        refreshed) appear, whole (a writer publishes a step atomically, after its files).
        Returns the indexes of the new steps. Steps already seen never change: a dataset
        deleted and written again since (another identity, or a step seen gone or changed)
        raises :class:`motes.DatasetReplacedError` and the handle keeps the run it read;
        open the path again to read the new run."""
        before = set(self.steps)
        self._core.reload()
        self._load_steps()
        return [s for s in self.steps if s not in before]

    def wait_for_step(self, after: Optional[int] = None, timeout: Optional[float] = None,
                      poll: float = 0.05) -> Step:
        """Waits until a step with an index above ``after`` (default: the last step this handle
        knows) is published, and returns it (the handle refreshed); ``TimeoutError`` after
        ``timeout`` seconds (None: waits without limit). Woken by inotify where the kernel has
        it, else by polling the manifest every ``poll`` seconds (:mod:`motes.live`)."""
        return wait_for_step(self, after, timeout, poll)

    def __repr__(self) -> str:
        names = sorted({n for st in self._steps for n in st.species})
        return f"<motes.Dataset {self.path!r}: {len(self._steps)} steps, species {names}>"

    # --- structure ---------------------------------------------------------------------------
    @property
    def steps(self) -> List[int]:
        return [s.index for s in self._steps]

    @property
    def step_entries(self) -> List[Step]:
        """The steps, in order, as :class:`motes.dataset.Step` (index, time, attributes,
        species, fields), as this handle last read them (:meth:`refresh`)."""
        return list(self._steps)

    def _entry(self, index: int) -> Step:
        """The Step of a step index the core resolved (so present)."""
        return next(s for s in self._steps if s.index == index)

    @property
    def id(self) -> str:
        """The dataset's identity: 32 hex digits drawn when it was created and kept by every
        append, so a dataset deleted and written again under the same path has another one
        ('' for a dataset of an older motes that has not been written to since)."""
        return self._core.id

    @property
    def times(self) -> List[float]:
        return [s.time for s in self._steps]

    @property
    def skipped(self) -> list:
        """The steps given to a writer and not written, by index: each a
        :class:`motes.SkippedStep` (``index``, ``time``, ``reason``). A background writer with
        ``on_backlog="skip"`` lists here every step submitted while its queue was full
        (reason ``"backlog"``), so that a step skipped is told from a step lost. Empty for a
        dataset that skipped none (or was written before manifest 1.7)."""
        from .background import SkippedStep

        return [SkippedStep(k["index"], k["time"], k["reason"]) for k in self._core.skipped]

    @property
    def attributes(self) -> Dict[str, Any]:
        """Dataset-level attributes (a JSON object), e.g. the code and its input deck."""
        return self._core.attributes

    @storage_method("cannot write the attributes")
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
        index = _core.resolve_step(self._core, None if step is None else _args.step(step))
        return self._entry(index)

    def species_names(self, step: Optional[int] = None) -> List[str]:
        return list(self.step(step).species) if self._steps else []

    def field_names(self, step: Optional[int] = None) -> List[str]:
        """The grid fields of a step (default: the last)."""
        return list(self.step(step).fields) if self._steps else []

    def sample(self, field: str, x, y=None, z=None, *, step: Optional[int] = None, component: Optional[str] = None,
               fill: float = float("nan")):
        """A grid field of a step at arbitrary points (positions x, y, z): linear interpolation
        along each axis (trilinear in 3-D), ``fill`` outside the grid; the positions broadcast
        together and the result has their shape (``np.meshgrid`` planes give a plane); see
        :meth:`motes.fields.file.StoredField.sample`."""
        return self.field(field, step).sample(x, y, z, component=component, fill=fill)

    @storage_method("cannot open the field file")
    def field(self, name: str, step: Optional[int] = None):
        """A grid field of a step (default: the last) as a :class:`motes.fields.file.StoredField`:
        ``.shape``, ``.levels``, ``.read(box=None, level=0)`` (see there). Its file is checked
        against the manifest when opened."""
        from .fields.file import StoredField

        st = self.step(step)
        if name not in st.fields:
            raise UsageError(f"step {st.index} has no field '{name}' (fields: {', '.join(st.fields) or 'none'})")
        key = ("field", st.index, name)
        f = self._files.get(key)
        if f is None:
            f = self._files[key] = StoredField(self._core.open_field(st.index, name))
        return f

    def _resolve(self, step: Optional[int], species: Optional[str]) -> Tuple[Step, str]:
        index, name = _core.resolve_species(self._core, None if step is None else _args.step(step), species)
        return self._entry(index), name

    def _species(self, step: Optional[int], species: Optional[str]) -> dict:
        st, name = self._resolve(step, species)
        return st.species[name]

    def schema(self, step: Optional[int] = None, species: Optional[str] = None) -> List[Column]:
        """Columns of a species: name, numpy dtype, extra index kind, unit, error bound."""
        sp = self._species(step, species)
        return [Column(n, numpy_dtype(d), i, u, b) for n, d, i, u, b in sp["columns"]]

    def column_names(self, step: Optional[int] = None, species: Optional[str] = None) -> List[str]:
        """The names of a species' columns, in schema order (what :meth:`schema` names, built
        without its Column objects: every query asks)."""
        return [c[0] for c in self._species(step, species)["columns"]]

    def count_total(self, step: Optional[int] = None, species: Optional[str] = None) -> int:
        return int(self._species(step, species)["count"])

    def bounds(self, step: Optional[int] = None, species: Optional[str] = None):
        return self._species(step, species)["bounds"]

    def _source_for(self, spec, step: int, species: str):
        """:meth:`source` of a resolved step index and species name, for a query of ``spec``:
        over a remote dataset, the reads that open its files (their heads) stop at the query's
        deadline or token, as its own reads do."""
        if not self.remote or (spec.deadline is None and spec.cancel is None):
            return self._opened(step, species)
        from .remote import bounded

        with bounded(spec.deadline, spec.cancel):
            return self._opened(step, species)

    def source(self, step: Optional[int] = None, species: Optional[str] = None):
        """The particles of one species in one step (cached): one particle file, or the part
        files of a parallel write behind their step index; queries run over it. The files are
        checked against the manifest (checksums, count, bounds, schema) when first opened."""
        st, name = self._resolve(step, species)
        return self._opened(st.index, name)

    @storage_method("cannot open the particle files")
    def _opened(self, step: int, species: str):
        key = (step, species)
        c = self._files.get(key)
        if c is None:
            c = self._files[key] = self._core.open_species(step, species)
        return c

    def file(self, step: Optional[int] = None, species: Optional[str] = None, part: int = 0):
        """Particle file ``part`` of one species in one step (a serial write has one)."""
        src = self.source(step, species)
        if not 0 <= part < src.part_count:
            raise UsageError(f"part {part} out of range (this species has {src.part_count} part files)")
        return src.part(part)

    # --- queries -----------------------------------------------------------------------------
    def request(self, where: Optional[str] = None, box: BoxLike = None, quality: Optional[Quality] = None, *,
                fraction: Optional[float] = None, columns: Optional[Sequence[str]] = None, values: Sequence[str] = (),
                step: Optional[int] = None, species: Optional[str] = None, threads: Optional[int] = None,
                cancel: Optional[_core.CancelToken] = None, timeout: Optional[float] = None) -> Request:
        """One read of one species in one step, resolved and checked once: a
        :class:`motes.request.Request` (the step, the species, its columns, the ``columns``
        asked for, and the core's ``QuerySpec`` with the grid fields its expressions sample).
        The arguments are :meth:`query`'s; ``values`` are numeric expressions the read will
        compute (histogram axes, weights, a column of stats): the grid fields they sample are
        bound here; the core checks them when it reads (a derived quantity's name is one).
        Every query and analysis of this class reads through one, and so do plans, the part
        queries of :mod:`motes.mpi` and :mod:`motes.dask`, and :mod:`motes.arrow`."""
        spec = selection(where, box, quality, fraction, threads, cancel, timeout)
        if isinstance(columns, str):
            columns = [columns]
        req = _core.resolve_read(self._core, None if step is None else _args.step(step), species,
                                 None if columns is None else list(columns), [v for v in values if v is not None],
                                 spec, lambda at, name, component: self.field(name, at).sampler(component or None))
        at = req.step
        return Request(self._entry(at), req.species, list(req.known), list(req.columns), req.spec,
                       lambda: self._source_for(req.spec, at, req.species))

    def plan(self, where: Optional[str] = None, box: BoxLike = None, quality: Optional[Quality] = None, *,
             fraction: Optional[float] = None, step: Optional[int] = None, steps: Any = None,
             species: Optional[str] = None, levels: bool = False):
        """The part files a query reads and about how many rows of each, found from the index
        alone (no particle is read): a :class:`motes.plan.ReadPlan` of
        :class:`motes.plan.PartRead` (step, species, part, count, rows), in (step, part)
        order, and how many parts it leaves out (empty, or ruled out by the step index's
        value ranges against ``where`` and ``box``). What :mod:`motes.mpi` and
        :mod:`motes.dask` hand out, part by part; see :mod:`motes.plan`.

        ``steps`` (the forms of :meth:`query`) plans several steps at once; ``levels``: each
        part's estimated particles per level of detail inside ``box`` too (``PartRead.levels``)."""
        from .plan import plan

        return plan(self, where, box, quality, fraction, step, steps, species, levels)

    @storage_method("cannot read")
    def select(self, where: Optional[str] = None, box: BoxLike = None, quality: Optional[Quality] = None, *,
               fraction: Optional[float] = None, step: Optional[int] = None, species: Optional[str] = None,
               threads: Optional[int] = None, cancel: Optional[_core.CancelToken] = None,
               timeout: Optional[float] = None):
        """The selection (file positions) matching the query, without copying any column.
        ``cancel`` and ``timeout`` hold for its gathers too (see :meth:`query`)."""
        req = self.request(where, box, quality, fraction=fraction, step=step, species=species, threads=threads,
                           cancel=cancel, timeout=timeout)
        return _core.select(req.source(), req.spec)

    @storage_method("cannot read")
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

        ``cancel`` (a ``motes.CancelToken``, cancelled from another thread) and ``timeout``
        (seconds) stop the query: it raises :class:`motes.CancelledError` at its next check
        (between chunks of work).

        ``steps`` (a list of step indexes, a range, ``"all"``, ``"0:100:10"``; instead of
        ``step``) queries several steps at once: one Table with a leading ``step`` column, the
        rows of each step in step order; ``timeout`` holds for all of them (see :mod:`motes.steps`)."""
        from .fields.queries import field_reference, gather_with_fields

        if steps is not None:  # several steps: motes.steps
            from .steps import query as across
            return across(self, steps, step, where=where, box=box, quality=quality, fraction=fraction, columns=columns,
                          species=species, threads=threads, cancel=cancel, timeout=timeout)
        req = self.request(where, box, quality, fraction=fraction, columns=columns, step=step, species=species,
                           threads=threads, cancel=cancel, timeout=timeout)
        sel = _core.select(req.source(), req.spec)
        if any(field_reference(c, req.known) for c in req.columns):
            return Table(gather_with_fields(self, sel, req.columns, req.step.index, req.known), sel.counters)
        return Table(dict(zip(req.columns, sel.gather_columns(req.columns, 0, sel.size))), sel.counters)

    def query_batches(self, where: Optional[str] = None, box: BoxLike = None, quality: Optional[Quality] = None, *,
                      fraction: Optional[float] = None, columns: Optional[Sequence[str]] = None,
                      batch_size: int = 1 << 20, step: Optional[int] = None, species: Optional[str] = None,
                      threads: Optional[int] = None, cancel: Optional[_core.CancelToken] = None,
                      timeout: Optional[float] = None) -> Iterator[Table]:
        """Like :meth:`query`, yielding tables of at most ``batch_size`` rows (bounded memory);
        ``timeout`` counts from the first batch asked for, over all batches."""
        if _args.integer("batch_size", batch_size, 1, _args.UINT64[1]) < 1:
            raise UsageError("batch_size must be at least 1")
        req = self.request(where, box, quality, fraction=fraction, step=step, species=species, threads=threads,
                           cancel=cancel, timeout=timeout)
        names = checked_columns(columns, req.known)
        sel = _core.select(req.source(), req.spec)
        for begin in range(0, sel.size, batch_size):
            end = min(sel.size, begin + batch_size)
            with storage_errors(self.path, "cannot read"):
                cols = sel.gather_columns(names, begin, end)
            yield Table(dict(zip(names, cols)), sel.counters)

    @storage_method("cannot read")
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
        req = self.request(where, box, quality, fraction=fraction, step=step, species=species, threads=threads,
                           cancel=cancel, timeout=timeout)
        return int(_core.count(req.source(), req.spec))

    @storage_method("cannot read")
    def stats(self, column: str, where: Optional[str] = None, box: BoxLike = None, quality: Optional[Quality] = None, *,
              fraction: Optional[float] = None, step: Optional[int] = None, species: Optional[str] = None,
              threads: Optional[int] = None, cancel: Optional[_core.CancelToken] = None,
              timeout: Optional[float] = None, steps: Any = None) -> Dict[str, Any]:
        """count, valid (not NaN), min, max, sum, mean of ``column`` (or of a numeric expression,
        as a histogram's axis) over the matching particles.
        With ``steps`` (see :meth:`query`), a time series: a Table of ``step``, ``time`` and these
        keys, NaN for None (see :mod:`motes.steps`)."""
        if steps is not None:  # several steps: motes.steps
            from .steps import stats as across
            return across(self, steps, column, step, where=where, box=box, quality=quality, fraction=fraction,
                          species=species, threads=threads, cancel=cancel, timeout=timeout)
        column = _args.text("column", column)
        req = self.request(where, box, quality, fraction=fraction, values=[column], step=step, species=species,
                           threads=threads, cancel=cancel, timeout=timeout)
        return _core.stats(req.source(), column, req.spec).to_dict()

    @storage_method("cannot read")
    def histogram(self, x: str, y: Optional[str] = None, *, bins: Union[int, Tuple[int, int]] = HISTOGRAM_BINS,
                  range: Optional[Sequence] = None, weights: Optional[str] = None, where: Optional[str] = None,
                  box: BoxLike = None, quality: Optional[Quality] = None, fraction: Optional[float] = None,
                  step: Optional[int] = None, species: Optional[str] = None, threads: Optional[int] = None,
                  cancel: Optional[_core.CancelToken] = None, timeout: Optional[float] = None, steps: Any = None):
        """1-D (``y=None``) or 2-D histogram of the matching particles, computed while traversing.

        Same conventions as ``numpy.histogram`` / ``numpy.histogram2d`` with integer bins: returns
        ``(counts, edges)`` or ``(counts, xedges, yedges)``; counts are int64, or float64 sums of
        ``weights``. ``range`` defaults to the min/max of the matching values (the core's rule:
        ``motes._defaults.histogram_range``). ``x``, ``y`` and ``weights`` are columns, or
        numeric expressions over them: ``"field('Bz')"`` (a grid field at the particles),
        ``"ux**2 + uy**2"``; NaN values (a field outside its grid) are not counted.

        With ``steps`` (see :meth:`query`): ``(counts, edges, steps)`` or ``(counts, xedges,
        yedges, steps)``, counts of shape ``(n_steps, bins)`` or ``(n_steps, nx, ny)``, every
        step binned over one common range (default: the min/max over all the steps; see
        :mod:`motes.steps`)."""
        if steps is not None:  # several steps: motes.steps
            from .steps import histogram as across
            return across(self, steps, x, y, step, bins=bins, range=range, weights=weights, where=where, box=box,
                          quality=quality, fraction=fraction, species=species, threads=threads, cancel=cancel,
                          timeout=timeout)
        st, species = self._resolve(step, species)  # a missing step or species is named before the axes are checked
        axes, nbins, given = _args.histogram_axes(x, y, bins, range)  # given: (min, max) or None per axis
        if weights is not None:
            weights = _args.text("weights", weights)
        req = self.request(where, box, quality, fraction=fraction, values=axes + [weights], step=st.index,
                           species=species, threads=threads, cancel=cancel, timeout=timeout)
        from .parts import binned, resolve_ranges

        sel, f = req.spec, req.source()
        resolved = resolve_ranges(given, [_core.stats(f, name, sel).to_dict() if r is None else None
                                          for name, r in zip(axes, given)])
        h = binned(f, axes, nbins, resolved, weights, sel)
        if weights is None:
            h = h.astype(np.int64)
        edges = [np.linspace(lo, hi, int(n) + 1) for (lo, hi), n in zip(resolved, nbins)]
        return (h, *edges)

    @storage_method("cannot read")
    def view(self, *, step: Optional[int] = None, species: Optional[str] = None, where: Optional[str] = None,
             color: Optional[str] = None, width: Union[int, str] = "100%", height: int = 480):
        """The browser viewer of this dataset inline in a notebook, starting at ``step``,
        ``species``, ``where`` and ``color`` (:func:`motes.notebook.view`)."""
        from .notebook import view

        return view(self, step=step, species=species, where=where, color=color, width=width, height=height)

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
        return describe(self, step, species, all_steps, storage)

    def sizes(self, step: Optional[int] = None, species: Optional[str] = None) -> Dict[str, Any]:
        """Where the bytes of the particle files go (what ``motes info --sizes`` prints), over
        every step (or ``step``) and species (or ``species``): per column its values, quantile
        index, tail index, node ranges and bitmaps; the tree, tail covers, id index and
        headers; the indexes against the writer's index budget; and why each index is there.
        A plain dict that ``json.dumps`` takes as is; the layout is documented in
        ``motes._sizes``."""
        return sizes(self, step, species)

    @storage_method("cannot read")
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

    @storage_method("cannot list the dataset's folder")
    def leftovers(self):
        """What writers that died left in the dataset's folder (never part of the dataset):
        temporary files ``*.tmp-<pid>-<n>`` and folders of unpublished steps, as
        :class:`motes.leftovers.Leftover` (with the writer's pid and whether it runs on this
        host: a write in progress looks the same). See :mod:`motes.leftovers`."""
        core = _core.DatasetCore.open(self._core_path)  # the manifest on disk now, not this handle's snapshot
        return leftovers.find(core)

    @storage_method("cannot clean the dataset's folder")
    def clean_leftovers(self, *, lock_timeout: Optional[float] = None):
        """Removes the leftovers of writers that no longer run, under the dataset's writers'
        lock (UsageError naming the holder while another writer holds it); returns (removed,
        kept). A running writer's files are never removed. See :mod:`motes.leftovers`."""
        timeout = None if lock_timeout is None else _args.number("lock_timeout", lock_timeout)
        return leftovers.clean(self.path, timeout)

    @storage_method("cannot read")
    def verify(self, progress: bool = False) -> Dict[str, int]:
        """Checks everything: the manifest against the files (the header checksums it records,
        particle counts, bounds, schemas), and every checksum of every file (headers, index
        sections, data blocks), grid fields' files (every part) included. Raises FormatError
        naming the first bad file and block; returns counts ("pinned": species whose files the
        manifest identifies by checksum, all of them unless the dataset was written by motes 0.1)."""
        return verify(self._core, self._steps, progress)


def open(path: Union[str, os.PathLike]) -> Dataset:  # noqa: A001 - mirrors builtins.open on purpose
    """Opens a dataset directory written by motes."""
    return Dataset(path)


def follow(path, *, start: Optional[int] = None, timeout: Optional[float] = None, poll: float = 0.05) -> Iterator:
    """Yields the steps of a dataset as they are published: those already there (from index
    ``start`` on, default all), then each new one as soon as the manifest that publishes it is
    written, until no new step arrives for ``timeout`` seconds (None: never stops). Each is a
    :class:`motes.dataset.Step` whose ``dataset`` is the one handle, refreshed:

    >>> for step in motes.follow("run.motes", timeout=600):
    ...     t = step.dataset.query("energy > 2", step=step.index)
    """
    return follow_steps(Dataset(path), None if start is None else _args.step(start), timeout, poll)
