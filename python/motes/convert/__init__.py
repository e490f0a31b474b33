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
import os
import shutil
from typing import Any, Dict, Iterable, Iterator, Optional, Sequence, Union


from ..errors import FormatError, MotesError, NotFoundError, StorageError, UsageError, storage_error, storage_errors
from ..remote import is_remote
from . import destination, provenance, series, sources
from .base import DEFAULT_CHUNK_ROWS, ConversionWarning, Species, Step
from .spelling import option

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
    Format("openpmd", "openpmd", [".h5", ".bp", ".bp4", ".bp5"], True, True,
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
        choose = option("dst_format='openpmd' or dst_format='h5part'", "--to openpmd or --to h5part")
        raise UsageError(f"{p}: an .h5 destination can be openPMD or H5Part; choose with {choose}")
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
    series.check_source(p)
    return series.reading(p, _format(format, p, False).load().read(p, chunk_rows=chunk_rows, **options))


def write(path: str, steps: Iterable[Step], format: Optional[str] = None, **options) -> None:
    """Writes ``steps`` to ``path`` in place (no temporary name; see :func:`convert`)."""
    p = os.fspath(path)
    with storage_errors(p, "cannot write"):
        _format(format, p, True).load().write(p, steps, **options)


@contextlib.contextmanager
def _staged(dst: str, tmp: str):
    """Warnings and errors of writing into the staging folder name the destination, not the
    staging folder (an implementation detail); OSErrors surface as motes StorageErrors."""
    unstaged = destination.shown
    with destination.shown_as(tmp, dst):
        staged = os.path.abspath(tmp) + os.sep
        try:
            yield
        except StorageError as e:
            raise type(e)(unstaged(str(e)), errno=e.errno, strerror=e.strerror,
                          filename=unstaged(e.filename)) from e
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
            read_options: Optional[Dict[str, Any]] = None, write_options: Optional[Dict[str, Any]] = None,
            allow_duplicate: bool = False) -> str:
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
    mapping; for .npz: ``time_from``; for openPMD: ``axes``, the position components on x, y, z),
    ``write_options`` to the destination.

    The destination must not exist unless ``overwrite`` (output of the same kind only), or
    ``append``: the steps are added to the motes dataset ``dst`` (created when absent), each
    published whole or not at all; a step index it already has is an error naming it, and so
    is a step read from a file the dataset already holds a step of, with the same content
    (see :mod:`motes.convert.provenance`) unless ``allow_duplicate``. Steps written without a
    time (their files give none) get one warning when they make a series (several files,
    or an append). Otherwise the destination appears only once complete. Returns the
    destination path."""
    src, dst = os.fspath(src), os.fspath(dst)
    if chunk_rows < 1:
        raise UsageError("chunk_rows must be at least 1")
    probe = src  # what tells the source's format: a glob by its first file
    if not sources.PATTERN.search(os.path.basename(src)) and sources.is_many(src):
        probe = sources.expand(src)[0][0]
    fin = _format(src_format, probe, False)
    fout = _format(dst_format, dst, True)
    files = series.files(src, fin.name)
    if append and overwrite:
        raise UsageError(f"{option('append and overwrite', '--append and --overwrite')} exclude each other")
    if append:
        if fout.name != "motes":
            raise UsageError(f"append adds steps to a motes dataset; {dst} is {fout.name}")
        if os.path.lexists(dst):
            destination.check_overwrite(dst, "motes")  # an existing dataset, nothing else
    elif os.path.lexists(dst):
        if not overwrite:
            raise UsageError(f"{dst} exists; pass {option('overwrite=True', '--overwrite')} to replace it")
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
    last = None
    if append:  # steps that do not give their index go after the dataset's last
        from .motes_format import last_step

        last = last_step(dst)
    first = 0 if last is None or as_step is not None else last[0] + 1

    def numbered(keep=None, settled=True):  # settled: with the index and time the caller gives
        return series.numbered(source, files, chunk_rows, options, as_step if settled else None,
                               time if settled else None, attributes, first, series=append,
                               again=last is not None and last[1] == 0, keep=keep)

    # step= and steps= name the source's steps, as it numbers them (before as_step)
    wanted = series.wanted_steps(fin.name, files, lambda: numbered(settled=False), step, steps, species)
    if wanted is not None and "steps" in inspect.signature(source.read).parameters:
        # Sources that can skip steps do so before preparing them (a motes source plans
        # spatial blocks per species); numbered and select still filter what others yield.
        options.setdefault("steps", wanted)
    steps = series.select(numbered(keep=wanted), wanted if as_step is None else None, species, bar)
    if fout.name == "motes":  # each step records the file it came from; an append refuses one it has
        steps = provenance.stamped(steps, provenance.Recorder(read_options), dst if append else None,
                                   allow_duplicate)
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
                    raise UsageError(f"{target} exists; pass {option('overwrite=True', '--overwrite')} to replace it")
                destination.check_overwrite(target, fout.name)
        with storage_errors(dst, "cannot write"):
            for name in produced:
                destination.replace(os.path.join(tmp, name), os.path.join(parent, name), tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if bar is not None:
            bar.close()
    return dst
