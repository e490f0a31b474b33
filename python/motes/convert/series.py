"""The steps of a conversion's source: its files read (:func:`reading`), their steps numbered
and timed (:func:`numbered`, with the one warning about steps without a time), and the steps
and species asked for kept (:func:`wanted_steps`, :func:`select`)."""

from __future__ import annotations

import inspect
import numbers
import os
import warnings
from dataclasses import replace
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ..errors import NotFoundError, UsageError, storage_errors
from ..remote import is_remote
from . import sources
from .base import ConversionWarning, Step, warn
from .input_files import check_regular
from .spelling import option


def check_source(path: str) -> None:
    """A source that is a file must be a regular one: opening a FIFO blocks until something
    writes to it, a device never ends (a folder is a dataset, a %T path an openPMD series; a
    URL a remote dataset)."""
    if is_remote(path):
        return
    if not os.path.isdir(path) and not sources.PATTERN.search(os.path.basename(path)):
        check_regular(path, "source", UsageError)


def reading(path: str, steps: Iterable[Step]) -> Iterator[Step]:
    """The steps of a source, each knowing the file it was read from and the index the file
    gives it (``source``, ``source_index``), its OSErrors (reading steps and chunks) raised as
    motes StorageError naming the file (see motes.errors)."""
    with storage_errors(path, "cannot read"):
        for st in steps:
            yield replace(st, source=path, source_index=st.index,
                          species={k: replace(sp, chunks=_read_chunks(path, sp.chunks), source=path)
                                   for k, sp in st.species.items()})


def _read_chunks(path: str, chunks):
    def gen():
        with storage_errors(path, "cannot read"):
            yield from chunks()
    return gen


def files(src: str, fmt: str) -> List[Tuple[str, Optional[int]]]:
    """The source files: one, or one per step for a glob or a %T pattern (openPMD series
    excepted: openpmd-api reads those itself)."""
    if fmt != "openpmd" and sources.is_many(src):
        found = sources.expand(src)
    else:
        if not sources.PATTERN.search(src) and not is_remote(src) and not os.path.exists(src):
            raise NotFoundError(f"no such file or dataset: '{src}'", filename=src)
        found = [(src, None)]
    for path, _ in found:
        check_source(path)
    return found


def untimed_warning(path: str, why: str, index: int, *, one_file: bool, time_from: bool, again: bool) -> str:
    """The warning for a step written at time 0 because its file gives no time (``why``).
    ``one_file``: a time can be given for it (--time); ``time_from``: its format reads one from
    a scalar (--time-from); ``again``: the dataset's last step is at time 0 already (an append
    loop's later files), so the warning is short."""
    ways = []
    if time_from:
        ways.append(option("read_options={'time_from': NAME}", "--time-from NAME"))
    if one_file:
        ways.append(option("time=T", "--time T"))
    if again:
        return (f"{path}: step {index} is written at time 0, as the dataset's last step was (the file gives no time"
                + (f"; {' or '.join(ways)}" if ways else "") + ")")
    hints = []
    if time_from:
        hints.append(f"{ways[0]} takes each step's time from a scalar of its file")
    if one_file:
        hints.append(f"{ways[-1]} sets it")
    else:
        hints.append("appended one file at a time, each takes " + option("time=T", "--time T"))
    return (f"{path}: {why}: step {index} is written at time 0, as is every step of this series that gives no "
            f"time; " + ", ".join(hints))


def numbered(source, found: List[Tuple[str, Optional[int]]], chunk_rows: int, options: Dict[str, Any],
             as_step: Optional[int], time: Optional[float], attributes: Optional[Dict[str, Any]],
             first: int = 0, series: bool = False, again: bool = False,
             keep: Optional[Sequence[int]] = None) -> Iterator[Step]:
    """The steps of every file, with their indexes settled (see convert.sources) and the
    caller's index, time and attributes applied. A step that does not give its index is
    numbered by its file's position after ``first`` (an append: the index after the
    dataset's last step). ``keep``: only the steps of these indexes (as the source numbers
    them, before ``as_step``). ``series``: the steps are one time series (several files, or
    an append), so steps without a time get one warning (a short one when ``again``: see
    :func:`untimed_warning`)."""
    seen: Dict[int, str] = {}
    warned = False
    takes_time_from = "time_from" in inspect.signature(source.read).parameters
    for k, (path, from_name) in enumerate(found):
        for st in reading(path, source.read(path, chunk_rows=chunk_rows, **options)):
            index = from_name if from_name is not None else st.index if st.index is not None else first + k
            if keep is not None and index not in keep:
                continue
            if as_step is not None or time is not None:
                if seen:
                    raise UsageError(f"{option('as_step= and time=', '--as-step and --time')} set the index and "
                                     f"time of one step; the source has several (keep one with "
                                     f"{option('step=', '--step')})")
                index = as_step if as_step is not None else index
            if index in seen:
                raise UsageError(f"{path} and {seen[index]} both give step {index}")
            if time is None and st.time_missing and (series or len(found) > 1) and not warned:
                warned = True
                warn(untimed_warning(path, st.time_missing, index, one_file=len(found) == 1,
                                     time_from=takes_time_from, again=again), stacklevel=2)
            seen[index] = path
            yield replace(st, index=int(index), time=st.time if time is None else float(time),
                          attributes={**st.attributes, **(attributes or {})})


class _SourceSteps:
    """The steps of a conversion's source, as motes.steps.resolve reads a dataset's."""

    def __init__(self, path: str, listed: List[Step]):
        self.path = path
        self._steps = listed
        self.steps = [st.index for st in listed]


def wanted_steps(fmt: str, found: List[Tuple[str, Optional[int]]], listing: Callable[[], Iterator[Step]],
                 step, steps, species: Optional[Sequence[str]]) -> Optional[List[int]]:
    """The step indexes that ``step`` or ``steps`` name among the source's (None: every step),
    through motes.steps.resolve: a motes dataset's from its manifest, another source's listed
    by reading its steps without their rows (``listing``)."""
    if step is None and steps is None:
        return None
    if step is not None and steps is not None:
        raise UsageError(f"pass either {option('step= or steps=', '--step or --steps')}, not both")
    if steps is None:
        steps = [step] if isinstance(step, numbers.Integral) else list(step)
    from ..steps import resolve

    one = species[0] if species is not None and len(species) == 1 else None  # 'all': the steps holding it
    if fmt == "motes" and len(found) == 1:
        from ..dataset import open as open_dataset

        return resolve(open_dataset(found[0][0]), steps, one)
    with warnings.catch_warnings():  # what the conversion itself warns about
        warnings.simplefilter("ignore", ConversionWarning)
        listed = list(listing())
    return resolve(_SourceSteps(found[0][0] if len(found) == 1 else "the source", listed), steps, one)


def select(steps: Iterable[Step], step: Optional[Sequence[int]], species: Optional[Sequence[str]],
           progress) -> Iterator[Step]:
    """Keeps the chosen steps and species; counts rows into the progress bar."""
    wanted = None if step is None else {int(s) for s in step}
    seen = set()
    for st in steps:
        if wanted is not None and st.index not in wanted:
            continue
        seen.add(st.index)
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
    if wanted is not None and wanted - seen:
        raise UsageError(f"the source has no step {', '.join(map(str, sorted(wanted - seen)))}")


def _counted(chunks, bar):
    def gen():
        for c in chunks():
            n = len(next(iter(c.values()))) if c else 0
            bar.update(n)
            yield c
    return gen
