"""The particles of a step as a yt dataset (:class:`MotesDataset`, what ``yt.load`` gives).

The particles of each species are one yt particle type with every column as a field (``x``,
``y``, ``z`` as positions in code length, whose unit is the positions' own: see
:mod:`.meta`). yt sees a step as cells of a uniform grid over its domain (a power of two a
side, at most 16, for ``CELL_PARTICLES`` or fewer each: a step of 16M particles is
one cell), each a "data file" whose rows are those of a motes query of the cell (a half-open
box). The cells' faces lie on those of yt's coarse index cells, and yt's particle index is
built from the coarse cells each covers, never from the particles' coordinates, so it knows
which cells a region or a sphere touches; each cell it reads is then a motes query of the
cell cut to the selector's bounding box (for regions and spheres; the whole width of a
periodic axis the box wraps around), and yt's selector keeps the exact rows.
"""

from __future__ import annotations

import functools
import math
import os
from typing import Dict, List, Optional, Tuple

import numpy as np
from yt.data_objects.static_output import ParticleDataset, ParticleFile
from yt.fields.derived_field import FieldValidator
from yt.fields.field_detector import FieldDetector
from yt.fields.field_info_container import FieldInfoContainer
from yt.funcs import setdefaultattr
from yt.geometry.particle_geometry_handler import ParticleIndex, validate_index_order
from yt.utilities.io_handler import BaseParticleIOHandler

import motes

from ..errors import UsageError
from . import meta

#: At most about this many particles per cell of the grid yt sees (at most 16 cells a side):
#: yt reads a cell's rows at once, and each cell costs an exact count when yt loads the
#: step (a step in one cell costs none). Cells do not make reads selective: a cell is read
#: as a motes query cut to the selector's box. Measured with bench/yt_sphere.py's 16M
#: particles (load and a small sphere, fresh processes): 0.43 s in 64 cells of 1M, 0.36 s
#: in 8, 0.34 s in one.
CELL_PARTICLES = 1 << 24

#: What to use instead of a grid field of a particle dataset (a deposit), said by its errors.
GRID_HINT = ("deposit it on a grid: ds.arbitrary_grid(ds.domain_left_edge, ds.domain_right_edge, (64, 64, 64))"
             "[field] (or ds.r[::64j, ::64j, ::64j][field]); or draw the particles: yt.ParticleProjectionPlot("
             "ds, 'z', ('all', 'particle_ones')) counts them per pixel, ('all', 'particle_mass') sums their mass")


class MotesFieldInfo(FieldInfoContainer):
    known_other_fields = ()
    known_particle_fields = (
        ("x", ("code_length", ["particle_position_x"], None)),
        ("y", ("code_length", ["particle_position_y"], None)),
        ("z", ("code_length", ["particle_position_z"], None)),
        ("id", ("", ["particle_index"], None)),
        ("mass", ("code_mass", ["particle_mass"], None)),
    )

    def setup_particle_fields(self, ptype, *args, **kwargs):
        mass = self.ds._species_mass.get(ptype)
        if mass is not None and (ptype, "mass") not in self.field_list:
            # One mass for every particle of the species (pysco's mpart, an openPMD constant).
            def particle_mass(field, data, _kg=mass):
                return data.ds.arr(np.full(data[ptype, "particle_position_x"].shape, _kg), "kg")

            self.add_field((ptype, "particle_mass"), sampling_type="particle", function=particle_mass,
                           units=self.ds.unit_system["mass"])
        super().setup_particle_fields(ptype, *args, **kwargs)
        for key in [k for k in self if k[0] == "deposit"]:
            if not any(isinstance(v, GridOnly) for v in self[key].validators):
                self[key].validators.insert(0, GridOnly(key))


class GridOnly(FieldValidator):
    """A deposit field's validator that names the problem where yt would raise that a particle
    container is not indexed: yt deposits particles only onto grids (arbitrary grids,
    ``ds.r[::Nj, ...]``), not onto regions, spheres, slices or all_data of particles."""

    def __init__(self, key):
        super().__init__()
        self.key = key

    def __call__(self, data):
        if isinstance(data, FieldDetector) or getattr(data, "_spatial", False):
            return True
        raise UsageError(f"{self.key} is a grid field: yt deposits particles only onto a grid, not onto a "
                         f"region, a sphere, a slice or all_data of a particle dataset; {GRID_HINT}")


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
                unit = meta.yt_unit(c.unit, ds.unit_registry)
                if c.name not in ("x", "y", "z") and unit:
                    units[p, c.name] = unit
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
        where, box = data_file.where or None, _selector_box(selector, ds)
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


def _selector_box(selector, ds) -> Optional[List[float]]:
    """The box around what a region or a sphere selector keeps (None for any other). On a
    periodic axis it crosses the domain's faces, the box takes the whole axis (yt's selector
    keeps the images across the faces)."""
    if selector is None:
        return None
    name = type(selector).__name__
    try:
        if name == "RegionSelector":
            lo, hi = np.asarray(selector.left_edge, float), np.asarray(selector.right_edge, float)
        elif name == "SphereSelector":
            c, r = np.asarray(selector.center, float), float(selector.radius)
            lo, hi = c - r, c + r
        else:
            return None
    except AttributeError:
        return None
    left, right = ds.domain_left_edge.d, ds.domain_right_edge.d
    wraps = np.asarray(ds.periodicity, bool) & ((lo < left) | (hi > right))
    lo, hi = np.where(wraps, left, lo), np.where(wraps, right, hi)
    return [*lo, *hi]


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
        attrs = dict(st.attributes)
        self.parameters.update(attrs)
        species = [p for p in st.species if ds.count_total(self.step, p) > 0] or list(st.species)
        self.particle_types = self.particle_types_raw = tuple(species)
        lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
        for p in species:
            (l, h) = ds.bounds(self.step, p)
            lo, hi = np.minimum(lo, l), np.maximum(hi, h)
        if not np.all(np.isfinite(lo)):
            lo, hi = np.zeros(3), np.ones(3)
        hi = np.where(hi > lo, hi, lo + 1.0)
        cosmo = meta.cosmology(attrs)
        self.cosmological_simulation = int(cosmo.cosmological)
        self.current_redshift = cosmo.redshift if cosmo.redshift is not None else 0.0
        self.hubble_constant = cosmo.h if cosmo.cosmological else 0.0
        self.omega_matter, self.omega_lambda = cosmo.omega_matter, cosmo.omega_lambda
        units = meta.position_unit({p: [c.unit for c in ds.schema(self.step, p) if c.name in ("x", "y", "z")]
                                    for p in species})
        self._geometry = geo = meta.geometry(lo, hi, units, attrs, cosmo)
        meta.warn(geo.notes, f"{self.parameter_filename} step {self.step}")
        self.domain_left_edge, self.domain_right_edge = geo.left, geo.right
        self._periodicity = (geo.periodic,) * 3
        self.domain_dimensions = np.ones(3, "int32")
        self.dimensionality, self.refine_by = 3, 2
        self._species_mass = {p: m for p in species if (m := meta.species_mass(attrs, p)) is not None
                              and "mass" not in [c.name for c in ds.schema(self.step, p)]}
        if len(set(self._species_mass.values())) == 1 and len(self._species_mass) == len(species):
            self._species_mass["all"] = next(iter(self._species_mass.values()))  # yt's union of the types
        self._make_cells(sum(ds.count_total(self.step, p) for p in species))

    def _make_cells(self, n: int) -> None:
        """The cells yt sees: k a side, a power of two (their faces on yt's coarse index cells)."""
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
        if not hasattr(self, "length_unit"):  # else units_override chose it
            value, unit = self._geometry.length
            try:
                from unyt.dimensions import length

                self.length_unit = self.quan(value, unit)
                ok = self.length_unit.units.dimensions == length
            except Exception:  # noqa: BLE001 (unyt raises several kinds for text it does not know)
                ok = False
            if not ok:
                meta.warn([f"the positions' unit {unit!r} is not a length yt knows: code_length is 1 cm "
                           f"(yt.load(path, units_override={{'length_unit': (1.0, 'Mpc')}}) chooses one)"],
                          f"{self.parameter_filename} step {self.step}")
                self.length_unit = self.quan(1.0, "cm")
        setdefaultattr(self, "mass_unit", self.quan(1.0, "g"))
        setdefaultattr(self, "time_unit", self.quan(1.0, "s"))
        setdefaultattr(self, "velocity_unit", self.quan(1.0, "cm/s"))

    def _add_object_class(self, name, base):
        super()._add_object_class(name, base)
        if "proj" in name and callable(getattr(self, "proj", None)):
            self.proj = _no_grid_projection(self.proj, self)

    @classmethod
    def _is_valid(cls, filename, *args, **kwargs) -> bool:
        return os.path.isdir(filename) and os.path.isfile(os.path.join(filename, "manifest.json")) and _is_motes(filename)

    @property
    def _skip_cache(self):
        return True


def _no_grid_projection(proj, ds):
    """ds.proj refusing, with the reason, the grid fields yt cannot project from particles
    (it would fail later with a bare NotImplementedError); particle fields go on to yt's own
    refusal, which names ParticleProjectionPlot."""

    @functools.wraps(proj)
    def refusing(field, *args, **kwargs):
        for f in field if isinstance(field, list) else [field]:
            try:
                finfo = ds._get_field_info(f)
            except Exception:  # noqa: BLE001 (yt's own error for an unknown field comes from proj)
                continue
            if finfo.sampling_type == "cell":
                raise UsageError(f"{finfo.name} is a grid field: yt projects grid and SPH fields, and a motes "
                                 f"step holds particles (not SPH); {GRID_HINT}")
        return proj(field, *args, **kwargs)

    return refusing


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

    from ..steps import resolve

    ds = motes.open(path)
    chosen = ds.steps if steps is None else resolve(ds, steps)
    return yt.DatasetSeries([MotesDataset(str(path), step=s) for s in chosen])
