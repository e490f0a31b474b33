"""The in-between form of a conversion: steps of species whose columns stream in chunks.

A *source* reads a file or dataset and yields :class:`Step` objects; a *sink* consumes
them and writes its format. Nothing holds a whole step: a species hands out its rows
through ``chunks()``, an iterator of column dicts of at most ``chunk_rows`` rows each,
and can be iterated again (sinks that need two passes call it twice). A step's grid
fields (:class:`motes.Field`) are whole arrays; sources hand them out as
:class:`LazyFields`, which reads a field only when it is looked up.

Units travel as motes' free-text unit of a column. For openPMD quantities it is the
JSON text ``{"unitSI": <float>, "unitDimension": [7 floats]}`` (see :func:`openpmd_unit`).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..dtypes import SUMMARY, SUPPORTED
from ..fields.model import Field
from ..errors import UsageError
from .destination import shown
from .spelling import option

Chunk = Dict[str, np.ndarray]


class ConversionWarning(UserWarning):
    """Something of the source that a conversion leaves out (a record motes cannot hold as
    columns, say), with the reason. The CLI prints these as ``motes: warning: ...``."""


def warn(message: str, stacklevel: int = 1) -> None:
    """Warns ``message`` as a :class:`ConversionWarning` (``stacklevel`` as
    :func:`warnings.warn` counts it from the caller), naming paths as the user named them:
    never a staging folder's (see :func:`motes.convert.destination.shown`). Options in it are
    spelled with :func:`motes.convert.spelling.option`."""
    warnings.warn(ConversionWarning(shown(message)), stacklevel=stacklevel + 1)

DEFAULT_CHUNK_ROWS = 1 << 20


@dataclass
class Species:
    """One species of one step: its schema and a re-iterable stream of row chunks."""

    name: str
    columns: List[Tuple[str, np.dtype]]          # schema, in order
    count: int                                    # total rows
    chunks: Callable[[], Iterator[Chunk]]         # each call starts again from the first row
    units: Dict[str, str] = field(default_factory=dict)        # column -> unit text
    attributes: Dict[str, Any] = field(default_factory=dict)   # species-level metadata (JSON-able)
    source: str = ""                              # the file it was read from (named by errors)

    def column_names(self) -> List[str]:
        return [c for c, _ in self.columns]


@dataclass
class Step:
    index: Optional[int]  # None when a one-step file does not say; convert() numbers such steps
    time: float
    attributes: Dict[str, Any]
    species: Dict[str, Species]
    # the step's grid fields by name: a dict, or the LazyFields of a source
    fields: Mapping[str, Field] = field(default_factory=dict)
    # why the source gives no time, when it does not (the step is then at time 0): convert()
    # warns once when a series is written so, naming how to give the times
    time_missing: str = ""
    # the file it was read from and the index the file gives it (None: the file does not
    # say), set by motes.convert.read: what motes.convert.provenance records
    source: str = ""
    source_index: Optional[int] = None


class LazyFields(Mapping):
    """The fields of a step as a source hands them out: the names are known at once, a
    :class:`motes.Field` is read from the file each time it is looked up (keep the Field
    you work with rather than looking it up again), so a conversion that does not want
    the fields never reads them and one that does holds one at a time.

    loaders: field name -> a function without arguments that reads the field.
    kind: field name -> its grid's kind (see :func:`grid_kind`), found without reading the
    values (None, or a name it does not know: not known before reading)."""

    def __init__(self, loaders: Dict[str, Callable[[], Field]],
                 kind: Optional[Callable[[str], Optional[str]]] = None):
        self._loaders = dict(loaders)
        self._kind = kind

    def kind(self, name: str) -> Optional[str]:
        """The kind of field ``name``'s grid when the source knows it without reading it."""
        return self._kind(name) if self._kind is not None else None

    def __getitem__(self, name: str) -> Field:
        return self._loaders[name]()

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaders)

    def __len__(self) -> int:
        return len(self._loaders)

    def __repr__(self) -> str:
        return f"LazyFields({list(self._loaders)})"


def grid_kind(fields: Mapping[str, Field], name: str) -> Optional[str]:
    """What grid field ``name`` of a step's ``fields`` lies on: "cartesian" (uniform),
    "rectilinear" (coordinates per axis) or "thetaMode"; None when a source's
    :class:`LazyFields` cannot tell without reading the field."""
    if isinstance(fields, LazyFields):
        return fields.kind(name)
    f = fields[name]
    if getattr(f, "geometry", "cartesian") != "cartesian":
        return f.geometry
    return "cartesian" if f.uniform else "rectilinear"


def openpmd_unit(unit_si: float, unit_dimension: Sequence[float]) -> str:
    """The unit text motes stores for an openPMD record component."""
    dims = [float(v) for v in unit_dimension]
    if len(dims) != 7:
        raise UsageError(f"unitDimension needs 7 powers (L, M, T, I, theta, N, J), got {len(dims)}")
    return json.dumps({"unitSI": float(unit_si), "unitDimension": dims})


def parse_openpmd_unit(text: str) -> Optional[Tuple[float, List[float]]]:
    """(unitSI, unitDimension) from a unit text written by :func:`openpmd_unit`, or None."""
    if not text or not text.lstrip().startswith("{"):
        return None
    try:
        d = json.loads(text)
        return float(d["unitSI"]), [float(v) for v in d["unitDimension"]]
    except (ValueError, KeyError, TypeError):
        return None


def chunked_arrays(arrays: Dict[str, Any], count: int, chunk_rows: int) -> Callable[[], Iterator[Chunk]]:
    """chunks() over array-likes that support slicing (numpy arrays, h5py datasets, memmaps):
    each chunk reads only its rows."""

    def gen() -> Iterator[Chunk]:
        for start in range(0, count, chunk_rows):
            stop = min(count, start + chunk_rows)
            yield {k: np.asarray(v[start:stop]) for k, v in arrays.items()}

    return gen


def check_columns(where: str, columns: Dict[str, Any]) -> int:
    """Equal lengths and 1-D; returns the length. UsageError naming the file/path otherwise."""
    lengths = {}
    for k, v in columns.items():
        shape = getattr(v, "shape", None)
        if shape is None or len(shape) != 1:
            raise UsageError(f"{where}: '{k}' is not a 1-D array (shape {shape})")
        lengths[k] = int(shape[0])
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{k}: {n}" for k, n in lengths.items())
        raise UsageError(f"{where}: columns have unequal lengths ({detail})")
    return next(iter(lengths.values()), 0)


def check_dtype(where: str, name: str, dtype: np.dtype) -> np.dtype:
    """The dtype a source column becomes, decided here for every format and both commands
    (``motes convert``, ``motes write``): float32/64, int8-64 and uint8-64 as they are (in
    native byte order); ``bool`` as uint8; float16 widened to float32 (exact). Anything
    else is a UsageError naming the column and saying what to do."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.dtype(np.uint8)
    if dt.kind == "f" and dt.itemsize == 2:
        return np.dtype(np.float32)
    if dt.fields is None and dt.newbyteorder("=") in SUPPORTED:  # the core's dtype table (motes.dtypes)
        return dt.newbyteorder("=")
    if dt.kind in "OUSV" and dt.fields is None:
        hint = "text or objects: only numbers can be stored; drop the column or encode it as numbers"
    elif dt.kind in "mM":
        hint = "dates or times: convert them to numbers first"
    elif dt.kind == "c":
        hint = "complex: store the real and imaginary parts as two columns"
    elif dt.kind == "f":
        hint = "extended precision: convert it to float64 first (it rounds)"
    else:
        hint = f"motes stores {SUMMARY}"
    raise UsageError(f"{where}: column '{name}' has unsupported dtype {dt} ({hint})")


# Names of an (n, 3) array that holds positions: split into the columns x, y, z on import.
POSITION_NAMES = ("pos", "position", "positions", "coord", "coords", "coordinate", "coordinates", "xyz")


def single_species(steps: Iterable[Step], path: str) -> Tuple[Step, Species]:
    """The one species of one step a table destination holds; UsageError when there are more."""
    chosen = None
    for st in steps:
        for sp in st.species.values():
            if chosen is not None:
                raise UsageError(f"{path}: a table holds one species of one step; the source has more "
                                 f"(choose with {option('step= and species=', '--step and --species')})")
            chosen = (st, sp)
    if chosen is None:
        raise UsageError(f"{path}: nothing to write (no step or species selected)")
    return chosen


def table_metadata(st: Step, sp: Species) -> Dict[str, Any]:
    """The step and species metadata a table keeps beside its columns (JSON)."""
    attrs = {k: v for k, v in sp.attributes.items() if k != "motes_patches"}
    return {"step": st.index, "time": st.time, "species": sp.name, "attributes": st.attributes,
            "species_attributes": attrs}


Source = Callable[..., Iterable[Step]]
Sink = Callable[..., None]


def rechunk(chunks: Iterable[Chunk], chunk_rows: int) -> Iterator[Chunk]:
    """Chunks of exactly chunk_rows rows (the last may be shorter) from chunks of any size."""
    pending: List[Chunk] = []
    rows = 0
    for c in chunks:
        n = len(next(iter(c.values()))) if c else 0
        start = 0
        while n - start > 0:
            take = min(chunk_rows - rows, n - start)
            pending.append({k: v[start:start + take] for k, v in c.items()})
            rows += take
            start += take
            if rows == chunk_rows:
                yield {k: np.concatenate([p[k] for p in pending]) for k in pending[0]}
                pending, rows = [], 0
    if rows:
        yield {k: np.concatenate([p[k] for p in pending]) for k in pending[0]}


def species_selection(species) -> Optional[List[str]]:
    """``species=`` of a sink: None (every species), or the list of names it names."""
    if species is None:
        return None
    if isinstance(species, str):
        return [species]
    try:
        names = list(species)
    except TypeError:
        names = None
    if not names or not all(isinstance(s, str) and s for s in names):
        raise UsageError(f"species must be a name or a list of names, got {species!r}")
    return names


def one_species(species, holder: str) -> Optional[str]:
    """The species a one-species file is asked to hold; None: the only one of each step."""
    sel = species_selection(species)
    if sel is not None and len(sel) != 1:
        raise UsageError(f"{holder} holds one species; got species={species!r} (write one file each)")
    return sel[0] if sel else None


def pick_species(path: str, step: Step, wanted: Optional[str], chosen: Optional[str], holder: str) -> Optional[Species]:
    """The species of ``step`` that a one-species file (``holder``: 'an H5Part file') writes:
    ``wanted``, else the only one, the same in every step (``chosen``: the earlier steps')."""
    names = list(step.species)
    if wanted is not None:
        return step.species.get(wanted)
    if not names:
        return None
    if len(names) > 1:
        raise UsageError(f"{path}: step {step.index} holds species {', '.join(names)}; {holder} holds "
                         "one species: pass species='<name>' (one file per species)")
    if chosen is not None and names[0] != chosen:
        raise UsageError(f"{path}: step {step.index} holds species '{names[0]}' but earlier steps "
                         f"'{chosen}'; pass species='<name>' to choose one")
    return step.species[names[0]]


def chunk_column(chunk: Chunk, name: str, where: str) -> np.ndarray:
    """Column ``name`` of a chunk that a sink writes, as a 1-D array; a UsageError naming
    ``where`` when the chunk lacks it or it is not 1-D."""
    if name not in chunk:
        raise UsageError(f"{where}: a chunk lacks column '{name}'")
    a = np.asarray(chunk[name])
    if a.ndim != 1:
        raise UsageError(f"{where}: chunk of column '{name}' is not 1-D (shape {a.shape})")
    return a
