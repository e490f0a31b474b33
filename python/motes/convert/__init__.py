"""Conversions between motes and the formats users already have.

    motes.convert.convert("run_%T.h5", "run.motes")                 # openPMD series -> motes
    motes.convert.convert("run.motes", "hot.parquet", read_options={"where": "energy > 1.3"}, step=10)
    motes.convert.convert("run.motes", "preview.vtkhdf", read_options={"quality": 0.5})  # ParaView
    motes.convert.convert("sim.h5part", "run.motes", steps="0:100:10")   # steps as queries take them

Every format module provides ``read(path, **options) -> Iterator[Step]`` and/or
``write(path, steps, **options)`` over the streaming form of :mod:`motes.convert.base`,
so a conversion holds one chunk of rows at a time, never a whole step. The destination
appears only when the conversion succeeded: it is written under a temporary name next
to it and renamed at the end; on any error nothing is left behind.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import numbers
import os
import shutil
import warnings
from dataclasses import replace
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union


from ..errors import FormatError, MotesError, NotFoundError, StorageError, UsageError, storage_error, storage_errors
from ..remote import is_remote
from . import destination, sources
from .input_files import check_regular
from .base import DEFAULT_CHUNK_ROWS, ConversionWarning, Species, Step

__all__ = ["convert", "read", "write", "FORMATS", "detect_format", "Step", "Species", "ConversionWarning"]


class Format:
    def __init__(self, name: str, module: str, extensions: Sequence[str], can_read: bool, can_write: bool,
                 description: str):
        self.name, self.module, self.extensions = name, module, tuple(extensions)
        self.can_read, self.can_write, self.description = can_read, can_write, description

    def load(self):
        return importlib.import_module(f"{__name__}.{self.module}")


FORMATS: Dict[str, Format] = {f.name: f for f in [
    Format("motes", "motes_format", [".motes"], True, True, "motes dataset directory"),
    Format("openpmd", "openpmd", [".h5", ".bp"], True, True,
           "openPMD 1.1 series (openpmd-api; file-based when the path holds %T)"),
    Format("h5part", "h5part", [".h5part"], True, True,
           "H5Part particles and H5Block fields (Step#N groups; ParaView, VisIt)"),
    Format("hdf5", "hdf5", [".h5", ".hdf5", ".he5"], True, False, "any group of equal-length 1-D HDF5 datasets"),
    Format("vtkhdf", "vtkhdf", [".vtkhdf", ".hdf"], False, True,
           "VTKHDF PolyData of vertices, or ImageData of fields (ParaView, VTK)"),
    Format("parquet", "tables", [".parquet", ".pq"], True, True, "Apache Parquet table"),
    Format("arrow", "tables", [".arrow", ".feather", ".ipc"], True, True, "Arrow IPC file"),
    Format("csv", "tables", [".csv"], True, True, "CSV with a header line"),
    Format("npz", "npz", [".npz"], True, True, "numpy .npz: 1-D arrays are columns, scalars step attributes"),
    Format("idx", "idx.steps", [".idx"], True, True, "IDX v6 grid fields (OpenVisus, PIDX)"),
]}


def _sniff_hdf5(path: str) -> str:
    """openpmd, h5part or hdf5 for an existing HDF5 file, by its content."""
    try:
        import h5py
    except ImportError:  # pragma: no cover - h5py is a dependency of the convert extra
        raise UsageError("reading HDF5 needs h5py (pip install 'motes[convert]')") from None
    try:
        with h5py.File(path, "r") as f:
            if "openPMD" in f.attrs:
                return "openpmd"
            if any(k.startswith("Step#") for k in f.keys()):
                return "h5part"
            return "hdf5"
    except OSError as e:
        raise UsageError(f"{path}: cannot be opened as HDF5 ({e})") from None


def detect_format(path: str, for_writing: bool) -> str:
    """The format of ``path``: by its content for existing HDF5 files, else by its extension."""
    p = os.fspath(path)
    low = p.lower().rstrip("/")
    if sources.PATTERN.search(os.path.basename(p)):
        # A pattern of one file per step: a file-based openPMD series for HDF5/ADIOS2 names,
        # else files of the format their extension names (snap_%T.npz, ...).
        plain = sources.template(low)
        if not plain.endswith((".h5", ".hdf5", ".bp", ".bp4", ".bp5", ".json")):
            return detect_format(sources.template(p), for_writing)
        return "openpmd"
    if low.endswith(".motes") or (os.path.isdir(p) and os.path.exists(os.path.join(p, "manifest.json"))):
        return "motes"
    if low.endswith(".vtkhdf"):
        return "vtkhdf"
    if low.endswith(".h5part"):
        return "h5part"
    if not for_writing and os.path.isfile(p) and low.endswith((".h5", ".hdf5", ".hdf", ".he5")):
        return _sniff_hdf5(p)
    if for_writing and low.endswith((".h5", ".hdf5")):
        raise UsageError(f"{p}: an .h5 destination can be openPMD or H5Part; choose with to='openpmd' or "
                         "to='h5part' (CLI: --to)")
    for f in FORMATS.values():
        if low.endswith(f.extensions) and (f.can_write if for_writing else f.can_read):
            return f.name
    kinds = ", ".join(f"{f.name} ({'/'.join(f.extensions)})" for f in FORMATS.values()
                      if (f.can_write if for_writing else f.can_read))
    raise UsageError(f"{p}: cannot tell the format from the name; give it explicitly ({kinds})")


def _format(name: Optional[str], path: str, for_writing: bool) -> Format:
    name = name or detect_format(path, for_writing)
    if name not in FORMATS:
        raise UsageError(f"unknown format '{name}' (formats: {', '.join(FORMATS)})")
    f = FORMATS[name]
    if for_writing and not f.can_write:
        raise UsageError(f"motes cannot write {name} ({f.description}); it can read it")
    if not for_writing and not f.can_read:
        raise UsageError(f"motes cannot read {name} ({f.description}); it can write it")
    return f


def read(path: str, format: Optional[str] = None, *, chunk_rows: int = DEFAULT_CHUNK_ROWS,
         **options) -> Iterator[Step]:
    """The steps of ``path``, streaming chunks of ``chunk_rows`` rows (see
    :mod:`motes.convert.base`); ``options`` go to the format's reader."""
    p = os.fspath(path)
    if "%" not in p and not is_remote(p) and not os.path.exists(p):
        raise NotFoundError(f"no such file or dataset: '{p}'", filename=p)
    _check_source(p)
    return _reading(p, _format(format, p, False).load().read(p, chunk_rows=chunk_rows, **options))


def _check_source(path: str) -> None:
    """A source that is a file must be a regular one: opening a FIFO blocks until something
    writes to it, a device never ends (a folder is a dataset, a %T path an openPMD series; a
    URL a remote dataset)."""
    if is_remote(path):
        return
    if not os.path.isdir(path) and not sources.PATTERN.search(os.path.basename(path)):
        check_regular(path, "source", UsageError)


def _reading(path: str, steps: Iterable[Step]) -> Iterator[Step]:
    """The steps of a source, its OSErrors (reading steps and chunks) raised as motes
    StorageError naming the file (see motes.errors)."""
    with storage_errors(path, "cannot read"):
        for st in steps:
            yield replace(st, species={k: replace(sp, chunks=_read_chunks(path, sp.chunks), source=path)
                                       for k, sp in st.species.items()})


def _read_chunks(path: str, chunks):
    def gen():
        with storage_errors(path, "cannot read"):
            yield from chunks()
    return gen


def write(path: str, steps: Iterable[Step], format: Optional[str] = None, **options) -> None:
    """Writes ``steps`` to ``path`` in place (no temporary name; see :func:`convert`)."""
    p = os.fspath(path)
    with storage_errors(p, "cannot write"):
        _format(format, p, True).load().write(p, steps, **options)


def _select(steps: Iterable[Step], step: Optional[Sequence[int]], species: Optional[Sequence[str]],
            progress) -> Iterator[Step]:
    """Keeps the chosen steps and species; counts rows into the progress bar."""
    wanted_steps = None if step is None else {int(s) for s in step}
    seen_steps = set()
    for st in steps:
        if wanted_steps is not None and st.index not in wanted_steps:
            continue
        seen_steps.add(st.index)
        chosen = st.species
        if species is not None:
            missing = [s for s in species if s not in st.species]
            if missing:
                raise UsageError(f"step {st.index} has no species {', '.join(map(repr, missing))} "
                                 f"(species: {', '.join(st.species)})")
            chosen = {s: st.species[s] for s in species}
        if progress is not None:
            progress.total = (progress.total or 0) + sum(int(v.count) for v in chosen.values())
            progress.refresh()
            chosen = {k: replace(v, chunks=_counted(v.chunks, progress)) for k, v in chosen.items()}
        yield replace(st, species=chosen)
    if wanted_steps is not None and wanted_steps - seen_steps:
        raise UsageError(f"the source has no step {', '.join(map(str, sorted(wanted_steps - seen_steps)))}")


class _SourceSteps:
    """The steps of a conversion's source, as motes.steps.resolve reads a dataset's."""

    def __init__(self, path: str, listed: List[Step]):
        self.path = path
        self._steps = listed
        self.steps = [st.index for st in listed]


def _wanted_steps(fmt: str, files: List[Tuple[str, Optional[int]]], numbered: Callable[[], Iterator[Step]],
                  step, steps, species: Optional[Sequence[str]]) -> Optional[List[int]]:
    """The step indexes that ``step`` or ``steps`` name among the source's (None: every step),
    through motes.steps.resolve: a motes dataset's from its manifest, another source's listed
    by reading its steps without their rows."""
    if step is None and steps is None:
        return None
    if step is not None and steps is not None:
        raise UsageError("pass either step= or steps=, not both")
    if steps is None:
        steps = [step] if isinstance(step, numbers.Integral) else list(step)
    from ..steps import resolve

    one = species[0] if species is not None and len(species) == 1 else None  # 'all': the steps holding it
    if fmt == "motes" and len(files) == 1:
        from ..dataset import open as open_dataset

        return resolve(open_dataset(files[0][0]), steps, one)
    with warnings.catch_warnings():  # what the conversion itself warns about
        warnings.simplefilter("ignore", ConversionWarning)
        listed = list(numbered())
    return resolve(_SourceSteps(files[0][0] if len(files) == 1 else "the source", listed), steps, one)


def _counted(chunks, bar):
    def gen():
        for c in chunks():
            n = len(next(iter(c.values()))) if c else 0
            bar.update(n)
            yield c
    return gen


def _files(src: str, fmt: str) -> List[Tuple[str, Optional[int]]]:
    """The source files: one, or one per step for a glob or a %T pattern (openPMD series
    excepted: openpmd-api reads those itself)."""
    if fmt != "openpmd" and sources.is_many(src):
        files = sources.expand(src)
    else:
        if not sources.PATTERN.search(src) and not is_remote(src) and not os.path.exists(src):
            raise NotFoundError(f"no such file or dataset: '{src}'", filename=src)
        files = [(src, None)]
    for path, _ in files:
        _check_source(path)
    return files


def _numbered(source, files: List[Tuple[str, Optional[int]]], chunk_rows: int, options: Dict[str, Any],
              as_step: Optional[int], time: Optional[float], attributes: Optional[Dict[str, Any]],
              first: int = 0, series: bool = False) -> Iterator[Step]:
    """The steps of every file, with their indexes settled (see convert.sources) and the
    caller's index, time and attributes applied. A step that does not give its index is
    numbered by its file's position after ``first`` (an append: the index after the
    dataset's last step). ``series``: the steps are one time series (several files, or an
    append), so steps without a time get one warning."""
    seen: Dict[int, str] = {}
    warned = False
    for k, (path, from_name) in enumerate(files):
        for st in _reading(path, source.read(path, chunk_rows=chunk_rows, **options)):
            index = from_name if from_name is not None else st.index if st.index is not None else first + k
            if as_step is not None or time is not None:
                if seen:
                    raise UsageError("--as-step and --time set the index and time of one step; the source has "
                                     "several (keep one with --step)")
                index = as_step if as_step is not None else index
            if index in seen:
                raise UsageError(f"{path} and {seen[index]} both give step {index}")
            if time is None and st.time_missing and (series or len(files) > 1) and not warned:
                warned = True
                hint = "time_from=NAME (CLI: --time-from NAME) takes each step's time from a scalar of its file"
                if len(files) == 1:
                    hint += ", time=T (CLI: --time T) sets it"
                warnings.warn(ConversionWarning(
                    f"{path}: {st.time_missing}: step {index} is written at time 0, as is every step of this "
                    f"series that gives no time; {hint}"), stacklevel=2)
            seen[index] = path
            yield replace(st, index=int(index), time=st.time if time is None else float(time),
                          attributes={**st.attributes, **(attributes or {})})


@contextlib.contextmanager
def _staged(dst: str, tmp: str):
    """Errors of writing into the staging folder name the destination, not the staging folder
    (an implementation detail); OSErrors surface as motes StorageErrors."""
    staged = os.path.abspath(tmp) + os.sep
    final = os.path.join(os.path.dirname(dst), "")  # as the caller named it ("" for the current folder)

    def unstaged(text):
        return None if text is None else os.fspath(text).replace(staged, final)

    try:
        yield
    except StorageError as e:
        raise type(e)(unstaged(str(e)), errno=e.errno, strerror=e.strerror, filename=unstaged(e.filename)) from e
    except MotesError as e:
        if staged not in str(e) or type(e) not in (UsageError, FormatError, MotesError):
            raise
        raise type(e)(unstaged(str(e))) from e
    except OSError as e:
        if e.filename is not None:
            e.filename = unstaged(e.filename)
        raise storage_error(e, dst, "cannot write") from e


def convert(src: str, dst: str, *, src_format: Optional[str] = None, dst_format: Optional[str] = None,
            step: Optional[Union[int, Sequence[int]]] = None, steps: Any = None,
            species: Optional[Sequence[str]] = None,
            chunk_rows: int = DEFAULT_CHUNK_ROWS, overwrite: bool = False, append: bool = False,
            as_step: Optional[int] = None, time: Optional[float] = None,
            attributes: Optional[Dict[str, Any]] = None, progress: bool = False,
            read_options: Optional[Dict[str, Any]] = None, write_options: Optional[Dict[str, Any]] = None) -> str:
    """Converts ``src`` into ``dst`` (formats from the names or content unless given), in
    bounded memory: chunks of ``chunk_rows`` rows. ``species`` keeps only those species;
    ``step`` (one step index, or a list of them) or ``steps`` (any form of
    :func:`motes.steps.resolve`: ``"all"``, ``"0:100:10"``, ``"0,10"``, a list, a range) keep only
    those steps, resolved against the steps of the source as queries resolve them against a
    dataset's (a step named that the source lacks is an error naming the steps it has).

    ``src`` may name many files, one step each: a glob (``"snap_*.npz"``) or a ``%T`` pattern
    (``"snap_%T.npz"``; see :mod:`motes.convert.sources` for how steps are numbered).
    ``as_step`` and ``time`` set the index and time of a one-step source, ``attributes``
    are added to every step. ``read_options`` go to the source (for a motes source:
    ``where``, ``box``, ``quality``, ``columns``; for generic HDF5: ``group``, ``columns``
    mapping; for .npz: ``time_from``), ``write_options`` to the destination.

    The destination must not exist unless ``overwrite`` (output of the same kind only), or
    ``append``: the steps are added to the motes dataset ``dst`` (created when absent), each
    published whole or not at all; a step index it already has is an error naming it.
    Otherwise the destination appears only once complete. Returns the destination path."""
    src, dst = os.fspath(src), os.fspath(dst)
    if chunk_rows < 1:
        raise UsageError("chunk_rows must be at least 1")
    probe = src  # what tells the source's format: a glob by its first file
    if not sources.PATTERN.search(os.path.basename(src)) and sources.is_many(src):
        probe = sources.expand(src)[0][0]
    fin = _format(src_format, probe, False)
    fout = _format(dst_format, dst, True)
    files = _files(src, fin.name)
    if append and overwrite:
        raise UsageError("append and overwrite exclude each other")
    if append:
        if fout.name != "motes":
            raise UsageError(f"append adds steps to a motes dataset; {dst} is {fout.name}")
        if os.path.lexists(dst):
            destination.check_overwrite(dst, "motes")  # an existing dataset, nothing else
    elif os.path.lexists(dst):
        if not overwrite:
            raise UsageError(f"{dst} exists; pass overwrite=True (CLI: --overwrite) to replace it")
        destination.check_overwrite(dst, fout.name)
    parent = os.path.dirname(os.path.abspath(dst)) or "."
    if not os.path.isdir(parent):
        raise UsageError(f"{dst}: the folder {parent} does not exist")
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(desc=f"{os.path.basename(src)} -> {os.path.basename(dst)}", unit=" rows", unit_scale=True)
    source = fin.load()
    options = dict(read_options or {})
    first = 0
    if append and as_step is None:  # steps that do not give their index go after the dataset's last
        from .motes_format import next_step

        first = next_step(dst)

    def numbered():
        return _numbered(source, files, chunk_rows, options, as_step, time, attributes, first,
                         series=append and first > 0)

    wanted = _wanted_steps(fin.name, files, numbered, step, steps, species)
    if wanted is not None and "steps" in inspect.signature(source.read).parameters:
        # Sources that can skip steps do so before preparing them (a motes source plans
        # spatial blocks per species); _select still filters what others yield.
        options.setdefault("steps", wanted)
    steps = _select(numbered(), wanted, species, bar)
    if append:  # into the dataset itself: each step is published atomically by the writer
        try:
            with storage_errors(dst, "cannot write"):
                fout.load().write(dst, steps, **(write_options or {}))
        finally:
            if bar is not None:
                bar.close()
        return dst
    # Written into a private folder next to the destination, then moved into place: a
    # failed conversion leaves nothing, and readers never see a half-written file.
    with storage_errors(dst, "cannot write"):
        tmp = destination.staging_folder(parent)
    try:
        with _staged(dst, tmp):
            fout.load().write(os.path.join(tmp, os.path.basename(dst.rstrip("/"))), steps, **(write_options or {}))
        produced = os.listdir(tmp)
        if not produced:
            raise UsageError(f"{src}: nothing to convert (no steps or species selected)")
        for name in produced:  # several for a file-based openPMD series
            target = os.path.join(parent, name)
            if os.path.lexists(target) and os.path.abspath(target) != os.path.abspath(dst):
                if not overwrite:
                    raise UsageError(f"{target} exists; pass overwrite=True (CLI: --overwrite) to replace it")
                destination.check_overwrite(target, fout.name)
        with storage_errors(dst, "cannot write"):
            for name in produced:
                destination.replace(os.path.join(tmp, name), os.path.join(parent, name), tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if bar is not None:
            bar.close()
    return dst
