"""A yt frontend for motes datasets: ``yt.load("run.motes")`` (the last step; ``step=`` any
other), ``motes.yt.series(path)`` (every step as a ``yt.DatasetSeries``), and
``motes.yt.grid(path)`` (a step's uniform grid fields as a yt grid dataset). motes registers
this module in the entry point group ``yt.frontends``, which yt (>= 4.2) imports before it
identifies a path; ``import motes.yt`` does the same by hand.

The particles of each species are one yt particle type with every column as a field (``x``,
``y``, ``z`` as positions in code length; a column's unit where yt understands motes' text
for it). yt sees a step as cells of a uniform grid over its bounds (a power of two a side,
at most 16, for CELL_PARTICLES or fewer each: a step of 16M particles is one cell), each a "data file" whose rows are those
of a motes query of the cell (a half-open box). The cells' faces lie on those of yt's coarse
index cells, and yt's particle index is built from the coarse cells each covers, never from
the particles' coordinates, so it knows which cells a
region or a sphere touches; each cell it reads is then a motes query of the cell cut to the
selector's bounding box (for regions and spheres), and yt's selector keeps the exact rows.
"""

from __future__ import annotations

import math
import os
from typing import Dict, List, Optional, Tuple

import numpy as np
from yt.data_objects.static_output import ParticleDataset, ParticleFile
from yt.fields.field_info_container import FieldInfoContainer
from yt.funcs import setdefaultattr
from yt.geometry.particle_geometry_handler import ParticleIndex, validate_index_order
from yt.utilities.io_handler import BaseParticleIOHandler

import motes

__all__ = ["MotesDataset", "series", "grid"]

#: At most about this many particles per cell of the grid yt sees (at most 16 cells a side):
#: yt reads a cell's rows at once, and each cell costs an exact count when yt loads the
#: step (a step in one cell costs none). Cells do not make reads selective: a cell is read
#: as a motes query cut to the selector's box. Measured with bench/yt_sphere.py's 16M
#: particles (load and a small sphere, fresh processes): 0.43 s in 64 cells of 1M, 0.36 s
#: in 8, 0.34 s in one.
CELL_PARTICLES = 1 << 24


def _yt_unit(text: str) -> str:
    """motes' unit text where yt (unyt) parses it, else dimensionless."""
    if not text:
        return ""
    try:
        from unyt import Unit

        Unit(text)
        return text
    except Exception:  # noqa: BLE001 (unyt raises several kinds for text it does not know)
        return ""


class MotesFieldInfo(FieldInfoContainer):
    known_other_fields = ()
    known_particle_fields = (
        ("x", ("code_length", ["particle_position_x"], None)),
        ("y", ("code_length", ["particle_position_y"], None)),
        ("z", ("code_length", ["particle_position_z"], None)),
        ("id", ("", ["particle_index"], None)),
        ("mass", ("code_mass", ["particle_mass"], None)),
    )


class MotesCell(ParticleFile):
    """One cell of the grid yt sees: ``box`` (x0, y0, z0, x1, y1, z1; half-open but on the
    grid's upper faces) and the motes ``where`` that selects exactly its particles."""

    def __init__(self, ds, io, filename, file_id, frange=None):
        self.cell = int(filename.rsplit("#cell", 1)[1])
        self.box, self.where = ds._cells[self.cell]
        super().__init__(ds, io, filename, file_id, frange)


class MotesIndex(ParticleIndex):
    """yt's particle index over the cells, with no cell holding no particle."""

    def _setup_filenames(self):
        ds = self.dataset
        self.data_files = []
        for i in range(ds.file_count):
            df = ds._file_class(ds, self.io, ds.filename_template % {"num": i}, len(self.data_files))
            if max(df.total_particles.values()) > 0:
                df.file_id = len(self.data_files)
                self.data_files.append(df)


class IOHandlerMotes(BaseParticleIOHandler):
    _dataset_type = "motes"

    def _count_particles(self, data_file) -> Dict[str, int]:
        ds = data_file.ds
        if not data_file.where:  # the whole step
            return {p: int(ds.motes.count_total(ds.step, p)) for p in ds.particle_types_raw}
        return {p: int(ds.motes.count(data_file.where, step=ds.step, species=p)) for p in ds.particle_types_raw}

    def _identify_fields(self, data_file):
        ds = data_file.ds
        fields, units = [], {}
        for p in ds.particle_types_raw:
            for c in ds.motes.schema(ds.step, p):
                fields.append((p, c.name))
                if c.name not in ("x", "y", "z") and _yt_unit(c.unit):
                    units[p, c.name] = _yt_unit(c.unit)
        return fields, units

    def _yield_coordinates(self, data_file):
        """What yt's index is built from: not the particles but the centres of the index's coarse
        cells that the cell's box covers (the cells are aligned on them: no coarse cell is
        shared by two, so yt never refines its index from coordinates)."""
        ds = data_file.ds
        left, width = ds.domain_left_edge.d, ds.domain_right_edge.d - ds.domain_left_edge.d
        side = ds._coarse
        lo = np.rint((np.array(data_file.box[:3]) - left) / width * side).astype(int)
        hi = np.rint((np.array(data_file.box[3:]) - left) / width * side).astype(int)
        axes = [left[a] + (np.arange(lo[a], hi[a]) + 0.5) * width[a] / side for a in range(3)]
        grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
        for p in ds.particle_types_raw:
            yield p, grid.astype("float64")

    def _query(self, data_file, ptype, columns, selector=None):
        ds = data_file.ds
        where, box = data_file.where or None, _selector_box(selector)
        ds.cells_read.append(data_file.cell)
        return ds.motes.query(where, box=box, columns=columns, step=ds.step, species=ptype)

    def _read_particle_coords(self, chunks, ptf):
        for data_file in self._sorted_chunk_iterator(chunks):
            for ptype in sorted(ptf):
                t = self._query(data_file, ptype, ["x", "y", "z"])
                yield ptype, tuple(np.asarray(t[a], dtype="float64") for a in "xyz"), 0.0

    def _read_particle_data_file(self, data_file, ptf, selector=None):
        out = {}
        for ptype, fields in sorted(ptf.items()):
            t = self._query(data_file, ptype, list(dict.fromkeys(["x", "y", "z", *fields])), selector)
            x, y, z = (np.asarray(t[a], dtype="float64") for a in "xyz")
            mask = selector.select_points(x, y, z, 0.0) if selector is not None else slice(None)
            if mask is None:
                continue
            for f in fields:
                out[ptype, f] = np.asarray(t[f])[mask]
        return out


def _selector_box(selector) -> Optional[List[float]]:
    """The box around what a region or a sphere selector keeps (None for any other)."""
    if selector is None:
        return None
    name = type(selector).__name__
    try:
        if name == "RegionSelector":
            lo, hi = np.asarray(selector.left_edge, float), np.asarray(selector.right_edge, float)
            return [*lo, *hi]
        if name == "SphereSelector":
            c, r = np.asarray(selector.center, float), float(selector.radius)
            return [*(c - r), *(c + r)]
    except AttributeError:
        return None
    return None


class MotesDataset(ParticleDataset):
    _index_class = MotesIndex
    _file_class = MotesCell
    _field_info_class = MotesFieldInfo

    def __init__(self, filename, dataset_type="motes", step: Optional[int] = None, units_override=None,
                 unit_system="cgs", index_order=None, index_filename=None):
        self.motes = motes.open(filename)
        self.step = self.motes.steps[-1] if step is None else self.motes.step(step).index
        self.cells_read: List[int] = []  # the cells motes was asked for, in order (one per species and read)
        index_order = validate_index_order(index_order)
        self._coarse = 1 << index_order[0]  # yt's coarse index cells a side
        # yt would cache its index beside the dataset; built from the cells' boxes it costs
        # milliseconds, so nothing is written (unless index_filename names a file).
        super().__init__(filename, dataset_type=dataset_type, units_override=units_override,
                         unit_system=unit_system, index_order=index_order,
                         index_filename=index_filename or os.devnull)

    def _parse_parameter_file(self):
        ds, st = self.motes, self.motes.step(self.step)
        self.unique_identifier = f"{os.path.abspath(self.parameter_filename)}#{self.step}"
        self.current_time = float(st.time)
        self.parameters.update(st.attributes)
        species = [p for p in st.species if ds.count_total(self.step, p) > 0] or list(st.species)
        self.particle_types = self.particle_types_raw = tuple(species)
        lo = np.full(3, np.inf)
        hi = np.full(3, -np.inf)
        for p in species:
            (l, h) = ds.bounds(self.step, p)
            lo, hi = np.minimum(lo, l), np.maximum(hi, h)
        if not np.all(np.isfinite(lo)):
            lo, hi = np.zeros(3), np.ones(3)
        hi = np.where(hi > lo, hi, lo + 1.0)
        width = hi - lo
        # A little room around the particles: yt's index wants them strictly inside.
        self.domain_left_edge, self.domain_right_edge = lo - 1e-6 * width, hi + 1e-6 * width
        self.domain_dimensions = np.ones(3, "int32")
        self.dimensionality, self.refine_by = 3, 2
        self._periodicity = (False, False, False)
        self.cosmological_simulation = 0
        self.current_redshift = self.omega_lambda = self.omega_matter = self.hubble_constant = 0.0
        n = sum(ds.count_total(self.step, p) for p in species)
        # k a power of two, so that the cells' faces lie on those of yt's coarse index cells.
        wanted = max(1.0, (n / CELL_PARTICLES) ** (1 / 3))
        k = int(min(16, self._coarse, 1 << math.ceil(math.log2(wanted) - 1e-9)))
        edges = [np.linspace(self.domain_left_edge[a], self.domain_right_edge[a], k + 1) for a in range(3)]
        self._cells: List[Tuple[List[float], str]] = []
        for i in range(k):
            for j in range(k):
                for m in range(k):
                    box = [float(v) for v in (edges[0][i], edges[1][j], edges[2][m], edges[0][i + 1], edges[1][j + 1],
                                              edges[2][m + 1])]
                    terms = []
                    for a, name in enumerate("xyz"):
                        idx = (i, j, m)[a]
                        terms.append(f"{name} >= {box[a]!r}")
                        terms.append(f"{name} {'<=' if idx == k - 1 else '<'} {box[a + 3]!r}")
                    self._cells.append((box, " and ".join(terms) if k > 1 else ""))
        self.file_count = len(self._cells)
        self.filename_template = f"{self.parameter_filename}#cell%(num)i"

    def _set_code_unit_attributes(self):
        setdefaultattr(self, "length_unit", self.quan(1.0, "cm"))
        setdefaultattr(self, "mass_unit", self.quan(1.0, "g"))
        setdefaultattr(self, "time_unit", self.quan(1.0, "s"))
        setdefaultattr(self, "velocity_unit", self.quan(1.0, "cm/s"))

    @classmethod
    def _is_valid(cls, filename, *args, **kwargs) -> bool:
        return os.path.isdir(filename) and os.path.isfile(os.path.join(filename, "manifest.json")) and _is_motes(filename)

    @property
    def _skip_cache(self):
        return True


def _is_motes(path: str) -> bool:
    try:
        motes.open(path)
        return True
    except motes.MotesError:
        return False


def series(path, steps=None):
    """Every step (or those ``steps`` names, the forms of :func:`motes.steps.resolve`) of a
    motes dataset as a ``yt.DatasetSeries``."""
    import yt

    from .steps import resolve

    ds = motes.open(path)
    chosen = ds.steps if steps is None else resolve(ds, steps)
    return yt.DatasetSeries([MotesDataset(str(path), step=s) for s in chosen])


def grid(path, step: Optional[int] = None, level: int = 0, fields: Optional[List[str]] = None):
    """The uniform 3-D Cartesian grid fields of a step (default: the last) as a yt dataset
    (``yt.load_uniform_grid``), read at ``level`` (every 2^level-th sample along each axis, a
    prefix of the field's file) only when yt first asks for each field. ``fields`` names the
    fields (default: every field of the step on the same grid as the first such field); they
    must share one grid. A sample is the centre of a cell one (level) spacing wide, so a
    node-centred field's domain reaches half a spacing past its first and last samples.
    Components of a vector field are the yt fields ``name_x``, ``name_y``... (its component
    names). Particles stay in :class:`MotesDataset` (``yt.load``): yt's grid datasets keep
    their particles in memory."""
    import yt

    from .errors import UsageError

    ds = motes.open(path)
    st = ds.step(step)
    level = int(level)
    names = list(fields) if fields is not None else list(st.fields)
    chosen, geometry = [], None
    for name in names:
        f = ds.field(name, st.index)
        usable = f.geometry == "cartesian" and f.ndim == 3 and f.origin is not None
        if not usable:
            if fields is not None:
                raise UsageError(f"field '{name}' is not on a uniform 3-D Cartesian grid ({f.geometry}, {f.ndim}-D"
                                 f"{', rectilinear' if f.origin is None else ''}): yt's uniform grids cannot hold it")
            continue
        if not 0 <= level <= f.levels:
            raise UsageError(f"field '{name}' has levels 0 to {f.levels}, not {level}")
        here = (f.dims, f.origin, f.spacing, f.centering)
        if geometry is None:
            geometry = here
        elif here != geometry:
            if fields is not None:
                raise UsageError(f"field '{name}' is on another grid than '{chosen[0].name}' ({here} against "
                                 f"{geometry}); load them with separate calls")
            continue
        chosen.append(f)
    if not chosen:
        raise UsageError(f"step {st.index} has no uniform 3-D Cartesian grid field (fields: "
                         f"{', '.join(st.fields) or 'none'})")
    dims, origin, spacing, centering = geometry
    stride = 1 << level
    n = np.array([(d + stride - 1) // stride for d in dims])
    width = np.array(spacing, float) * stride
    first = np.array(origin, float) + (0.5 if centering == "cell" else 0.0) * np.array(spacing, float)
    bbox = np.stack([first - width / 2, first - width / 2 + n * width], axis=1)

    def reader(f, component):
        def read(grid_object, field_name):  # yt's (grid, field) callable: x, y, z index order
            a = f.read(level=level, component=component)
            return np.ascontiguousarray(np.transpose(a)).astype("float64", copy=False)
        return read

    data = {}
    for f in chosen:
        unit = _yt_unit(f.unit)
        for comp in (f.components or (None,)):
            key = f.name if comp is None else f"{f.name}_{comp}"
            data[key] = (reader(f, comp), unit) if unit else reader(f, comp)
    return yt.load_uniform_grid(data, tuple(int(v) for v in n), bbox=bbox, sim_time=float(st.time),
                                periodicity=(False, False, False), length_unit="cm",
                                parameters=dict(st.attributes), dataset_name=f"{os.fspath(path)}#{st.index}")
