"""The openPMD <-> motes mapping (motes.convert.openpmd.mapping) on its own: record and
component naming both ways, units (unitSI, unitDimension, free text), positions and
positionOffset, constant components, FBPIC's constants of shape [1], empty species.
Nothing here needs openpmd-api: the first test proves the module imports without it."""

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from motes import UsageError, FormatError
from motes.convert.base import Species, openpmd_unit
from motes.convert.openpmd import mapping as m

LENGTH = [1.0, 0, 0, 0, 0, 0, 0]
MOMENTUM = [1.0, 1, -1, 0, 0, 0, 0]
WHERE = "run.h5: iteration 7, species 'e'"


def test_mapping_needs_no_openpmd_api():
    """With openpmd_api unimportable, the package and its mapping import and work; reading
    says what to install."""
    code = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "openpmd_api" or name.startswith("openpmd_api."):
                    raise ImportError("blocked by the test")
        sys.meta_path.insert(0, Block())
        import numpy as np
        from motes.convert.base import Species
        from motes.convert.openpmd import mapping, read
        cols = {"x": np.zeros(2), "y": np.zeros(2), "z": np.zeros(2), "momentum_x": np.ones(2),
                "momentum_y": np.ones(2)}
        sp = Species("e", [(k, v.dtype) for k, v in cols.items()], 2, lambda: iter([cols]))
        records, axes = mapping.plan_species("here", sp)
        assert sorted(records) == ["momentum", "position", "positionOffset"], records
        assert "openpmd_api" not in sys.modules
        try:
            next(read("nothing.h5"))
        except Exception as e:
            print(type(e).__name__, e)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "UsageError openPMD conversion needs openpmd-api (pip install openpmd-api)" in r.stdout


# ---------------------------------------------------------------------------------------------
# units
# ---------------------------------------------------------------------------------------------

def test_unit_of_reads_openpmd_unit_texts_and_falls_back_on_metadata():
    units = {"x": openpmd_unit(1e-6, LENGTH), "e": "d_i", "w": "", "c": "cm", "k": "keV", "h": "Mpc/h"}
    assert m.unit_of(units, "x", 5.0, [0.0] * 7, m.DIMENSIONLESS) == (1e-6, LENGTH, None)  # the text wins
    assert m.unit_of(units, "e", None, None, m.DIMENSIONLESS) == (1.0, [0.0] * 7, "d_i")   # free text kept
    # free text naming an SI quantity: its unitSI and dimension, so openPMD readers scale it; the text kept
    assert m.unit_of(units, "c", None, None, m.DIMENSIONLESS) == (0.01, LENGTH, "cm")
    si, dim, text = m.unit_of(units, "k", None, None, m.DIMENSIONLESS)
    # (unyt's electronvolt: CODATA 2010, 5e-8 from the exact 2019 value; yt reads it the same)
    assert math.isclose(si, 1.602176634e-16, rel_tol=1e-7) and dim == [2.0, 1.0, -2.0, 0, 0, 0, 0] and text == "keV"
    assert m.unit_of(units, "h", None, None, LENGTH) == (1.0, LENGTH, "Mpc/h")  # h is the data's, not the text's
    assert m.unit_of(units, "w", 2.5, MOMENTUM, m.DIMENSIONLESS) == (2.5, MOMENTUM, None)  # from the metadata
    assert m.unit_of(units, "absent", None, None, LENGTH) == (1.0, LENGTH, None)


def test_unit_text_is_the_openpmd_unit_or_the_free_text_kept_by_an_export():
    rmeta = {"unitDimension": MOMENTUM, "attributes": {}}
    assert json.loads(m.unit_text(rmeta, 5.344e-22)) == {"unitSI": 5.344e-22, "unitDimension": MOMENTUM}
    free = {"motesUnit": {"value": "keV", "dtype": "string"}}
    assert m.unit_text({"unitDimension": [0.0] * 7, "attributes": free}, 1.0) == "keV"
    # a real SI factor or dimension is what the file says, whatever motesUnit claims
    assert json.loads(m.unit_text({"unitDimension": [0.0] * 7, "attributes": free}, 2.0))["unitSI"] == 2.0
    assert json.loads(m.unit_text({"unitDimension": LENGTH, "attributes": free}, 1.0))["unitDimension"] == LENGTH
    # a free text whose unitSI and dimension the file has: the text again ("cm" round-trips)
    cm = {"motesUnit": {"value": "cm", "dtype": "string"}}
    assert m.unit_text({"unitDimension": LENGTH, "attributes": cm}, 0.01) == "cm"
    assert json.loads(m.unit_text({"unitDimension": LENGTH, "attributes": cm}, 0.02))["unitSI"] == 0.02


def test_unit_dimension_and_si_factor_survive_read_then_write():
    """A column's unit text, read from (unitSI, unitDimension), gives the same pair back."""
    for si, dim in ((1e-6, LENGTH), (5.344e-22, MOMENTUM), (1.602e-19, [2, 1, -2, 0, 0, 0, 0]), (1.0, [0.0] * 7)):
        text = m.unit_text({"unitDimension": dim, "attributes": {}}, si)
        assert m.unit_of({"c": text}, "c", None, None, m.DIMENSIONLESS) == (si, [float(v) for v in dim], None)


# ---------------------------------------------------------------------------------------------
# reading: records -> columns
# ---------------------------------------------------------------------------------------------

def comp(record, name, n, dtype="f8", si=1.0, constant=None, shape=None):
    c = m.Component(record, name, tuple(shape if shape is not None else [n]), constant is not None,
                    np.dtype(dtype), si, constant)
    return c


def species(n, spec):
    """(records_meta, comps, found) for records given as {record: (scalar, dim, [components])},
    laid out as the reader does."""
    meta, comps, found = {}, {}, {}
    for rname, (scalar, dim, members) in spec.items():
        found[rname] = members
        meta[rname] = {"scalar": scalar, "unitDimension": dim, "attributes": {}, "components": {}}
        for c in members:
            cm = {"unitSI": c.unit_si, "dtype": c.dtype.name}
            if c.is_constant:
                cm["constant"] = c.constant
            meta[rname]["components"][c.comp] = cm
            comps[(rname, c.comp)] = c
    return meta, comps, found


def test_records_become_columns_named_record_or_record_component():
    n = 4
    meta, comps, _ = species(n, {
        "position": (False, LENGTH, [comp("position", a, n, "f4", 1e-6) for a in "xyz"]),
        "positionOffset": (False, LENGTH, [comp("positionOffset", a, n, "f4", 1e-6, constant=0.0) for a in "xyz"]),
        "momentum": (False, MOMENTUM, [comp("momentum", a, n, "f4", 5e-22) for a in "xyz"]),
        "weighting": (True, [0.0] * 7, [comp("weighting", "", n)]),
        "id": (True, [0.0] * 7, [comp("id", "", n, "u8")]),
        "charge": (True, [0, 0, 1, 1, 0, 0, 0], [comp("charge", "", n, constant=-1.602e-19)]),
        "flag": (True, [0.0] * 7, [comp("flag", "", n, "?")]),
    })
    cols = m.columns_of(WHERE, meta, comps, n)
    assert [c.name for c in cols] == ["x", "y", "z", "momentum_x", "momentum_y", "momentum_z", "weighting", "id",
                                      "flag"]
    dtypes = {c.name: c.dtype for c in cols}
    assert dtypes["x"] == np.float32 and dtypes["id"] == np.uint64 and dtypes["flag"] == np.uint8
    assert json.loads(next(c.unit for c in cols if c.name == "momentum_y")) == {"unitSI": 5e-22,
                                                                                "unitDimension": MOMENTUM}
    # what each component became is noted for the way back; the constant stays a constant
    assert meta["momentum"]["components"]["y"]["column"] == "momentum_y"
    assert meta["weighting"]["components"][""]["column"] == "weighting"
    assert "column" not in meta["charge"]["components"][""]
    assert meta["charge"]["components"][""]["constant"] == -1.602e-19
    # the rows: constants filled, bool as uint8
    loaded = {(c.record, c.comp): np.arange(n).astype(c.dtype) for c in comps.values() if c.constant is None}
    rows = m.assemble(cols, n, loaded)
    assert rows["x"].dtype == np.float32 and rows["x"].tolist() == [0, 1, 2, 3]
    assert rows["flag"].dtype == np.uint8 and rows["flag"].tolist() == [0, 1, 1, 1]


def test_position_plus_offset_in_the_unit_of_position():
    """x = position + positionOffset * (unitSI(offset) / unitSI(position)), in float64, with
    the raw position and a non-constant offset kept as columns."""
    n = 3
    meta, comps, _ = species(n, {
        "position": (False, LENGTH, [comp("position", a, n, "f4", 1e-6) for a in "xy"]),
        "positionOffset": (False, LENGTH, [comp("positionOffset", "x", n, "i4", 1e-5),
                                           comp("positionOffset", "y", n, "f8", 1e-6, constant=2.5)]),
    })
    cols = m.columns_of(WHERE, meta, comps, n)
    assert [c.name for c in cols] == ["x", "y", "z", "position_x", "position_y", "positionOffset_x"]
    by = {c.name: c for c in cols}
    assert by["x"].dtype == np.float64 and by["x"].ratio == pytest.approx(10.0)
    assert by["z"].kind == "fill" and by["z"].dtype == np.float64 and by["z"].unit == by["x"].unit  # missing axis
    pos_x = np.array([0.25, 0.5, 0.75], dtype=np.float32)
    cell = np.array([0, 1, 2], dtype=np.int32)
    rows = m.assemble(cols, n, {("position", "x"): pos_x, ("position", "y"): pos_x, ("positionOffset", "x"): cell})
    np.testing.assert_array_equal(rows["x"], pos_x.astype(np.float64) + cell * (1e-5 / 1e-6))
    np.testing.assert_array_equal(rows["y"], pos_x.astype(np.float64) + 2.5)
    np.testing.assert_array_equal(rows["position_x"], pos_x)
    assert rows["z"].tolist() == [0.0, 0.0, 0.0]
    assert meta["position"]["components"]["x"]["rawColumn"] == "position_x"
    assert meta["positionOffset"]["components"]["x"]["column"] == "positionOffset_x"

    # ... and back: the position stored is the raw column, the offset the offset column
    sp = Species("e", [(c.name, c.dtype) for c in cols], n, lambda: iter([rows]),
                 {c.name: c.unit for c in cols if c.unit}, {"openpmd": {"records": meta}})
    records, axes = m.plan_species(WHERE, sp)
    assert axes == {"x": "x", "y": "y"}  # each position component, and the axis it was read onto
    px, oy = records["position"].comps["x"], records["positionOffset"].comps["y"]
    assert px.raw and px.column == "position_x" and px.dtype == np.float32
    np.testing.assert_array_equal(m.stored_values(px, rows), pos_x)
    assert oy.constant == 2.5 and oy.constant.dtype == np.float64
    np.testing.assert_array_equal(m.stored_values(records["positionOffset"].comps["x"], rows), cell)


def test_position_minus_offset_when_writing_from_x_alone():
    x = np.array([10.0, 20.0, 31.5])
    sp = Species("e", [("x", x.dtype), ("y", x.dtype), ("z", x.dtype)], 3, lambda: iter([{}]), {},
                 {"openpmd": {"records": {"positionOffset": {"components": {
                     a: {"constant": 1.0, "dtype": "float32", "unitSI": 2e-6} for a in "xyz"}},
                     "position": {"unitDimension": LENGTH, "components": {a: {"unitSI": 1e-6, "dtype": "float64"}
                                                                        for a in "xyz"}}}}})
    records, _ = m.plan_species(WHERE, sp)
    o = records["position"].comps["x"]
    assert (o.offset_value, o.ratio) == (1.0, 2.0)
    np.testing.assert_array_equal(m.stored_values(o, {"x": x}), x - 2.0)
    assert records["positionOffset"].comps["z"].constant.dtype == np.float32


def test_reading_errors_name_the_place():
    n = 2
    meta, comps, _ = species(n, {"momentum": (False, MOMENTUM, [comp("momentum", "x", n)])})
    with pytest.raises(FormatError, match=r"run.h5: iteration 7, species 'e': has no 'position' record"):
        m.columns_of(WHERE, meta, comps, n)
    meta, comps, _ = species(n, {"position": (False, LENGTH, [comp("position", c, n) for c in "abcd"])})
    with pytest.raises(UsageError, match=r"record 'position': 4 components \(a, b, c, d\); motes has three"):
        m.columns_of(WHERE, meta, comps, n)
    meta, comps, _ = species(n, {"position": (False, LENGTH, [comp("position", "x", n)]),
                                 "positionOffset": (False, LENGTH, [comp("positionOffset", "q", n)])})
    with pytest.raises(FormatError, match=r"record 'positionOffset': components \['q'\] are not among the "):
        m.columns_of(WHERE, meta, comps, n)
    # two records that would make the same column
    meta, comps, _ = species(n, {"position": (False, LENGTH, [comp("position", "x", n)]),
                                 "a": (False, [0.0] * 7, [comp("a", "b", n)]),
                                 "a_b": (True, [0.0] * 7, [comp("a_b", "", n)])})
    with pytest.raises(UsageError, match=r"records 'a/b' and 'a_b/' both map to column 'a_b'"):
        m.columns_of(WHERE, meta, comps, n)
    meta, comps, _ = species(n, {"position": (False, LENGTH, [comp("position", "x", n)]),
                                 "field": (False, [0.0] * 7, [comp("field", "x", n, "c16")])})
    with pytest.raises(UsageError, match=r"record 'field/x': column 'field_x' has unsupported dtype complex128"):
        m.columns_of(WHERE, meta, comps, n)


# ---------------------------------------------------------------------------------------------
# FBPIC and other h5py-based writers: constants of shape [1]
# ---------------------------------------------------------------------------------------------

def test_fbpic_constants_of_shape_one_hold_for_every_particle():
    n = 1000
    _, _, found = species(n, {
        "charge": (True, [0, 0, 1, 1, 0, 0, 0], [comp("charge", "", n, constant=-1.602e-19, shape=[1])]),
        "mass": (True, [0, 1, 0, 0, 0, 0, 0], [comp("mass", "", n, constant=9.1e-31, shape=[1])]),
        "positionOffset": (False, LENGTH, [comp("positionOffset", a, n, constant=0.0, shape=[1]) for a in "xyz"]),
        "position": (False, LENGTH, [comp("position", a, n) for a in "xyz"]),
        "E_interp": (False, [0.0] * 7, [comp("E_interp", "x", n, shape=[500])]),
        "grid": (True, [0.0] * 7, [comp("grid", "", n, shape=[n, 2])]),
    })
    count, source = m.particle_count(found, WHERE)
    assert (count, source) == (1000, "position/x")  # position first, constants never decide
    assert m.extent_problem(found["charge"], count, source) == ""
    assert m.extent_problem(found["positionOffset"], count, source) == ""
    assert m.extent_problem(found["position"], count, source) == ""
    assert m.extent_problem(found["E_interp"], count, source) == \
        "component 'x' has 500 values, but 'position/x' has 1000 particles"
    assert m.extent_problem(found["grid"], count, source) == \
        "it has shape [1000, 2]; particle record components must be 1-D"
    # a constant positionOffset 0 of shape [1] is no offset: x keeps the dtype of position
    meta, comps, _ = species(n, {k: v for k, v in {
        "position": (False, LENGTH, found["position"]), "positionOffset": (False, LENGTH, found["positionOffset"]),
        "charge": (True, [0, 0, 1, 1, 0, 0, 0], found["charge"])}.items()})
    cols = m.columns_of(WHERE, meta, comps, count)
    assert [(c.name, c.offset) for c in cols] == [("x", None), ("y", None), ("z", None)]


def test_particle_count_from_constants_only_and_without_any():
    found = {"position": [comp("position", a, 0, constant=0.0, shape=[5]) for a in "xyz"]}
    assert m.particle_count(found, WHERE) == (5, "position/x")
    with pytest.raises(FormatError, match="has no 1-D record component, so no particle count"):
        m.particle_count({"position": [comp("position", "x", 0, shape=[2, 2])]}, WHERE)


# ---------------------------------------------------------------------------------------------
# constants and empty species
# ---------------------------------------------------------------------------------------------

def test_empty_components_of_an_empty_species_are_empty_columns():
    """openpmd-api stores a dataset of extent [0] as a constant of shape [0]: in a species of
    no particles it is an empty column of its dtype (the constant value is kept for the way
    back); anywhere else a constant stays a constant."""
    def spec(n, shape):
        return {"position": (False, LENGTH, [comp("position", a, n, "f4", constant=0.0, shape=shape) for a in "xyz"]),
                "positionOffset": (False, LENGTH, [comp("positionOffset", a, n, "f4", constant=0.0, shape=shape)
                                                   for a in "xyz"]),
                "id": (True, [0.0] * 7, [comp("id", "", n, "u8", constant=0, shape=shape)]),
                "charge": (True, [0, 0, 1, 1, 0, 0, 0], [comp("charge", "", n, constant=-1.0, shape=shape)])}

    meta, comps, found = species(0, spec(0, [0]))
    count, _ = m.particle_count(found, WHERE)
    cols = m.columns_of(WHERE, meta, comps, count)
    assert [(c.name, c.dtype) for c in cols] == [("x", np.float32), ("y", np.float32), ("z", np.float32),
                                                  ("id", np.uint64), ("charge", np.float64)]
    assert meta["charge"]["components"][""] == {"unitSI": 1.0, "dtype": "float64", "constant": -1.0,
                                                "column": "charge"}
    assert m.assemble(cols, 0, {})["id"].dtype == np.uint64
    # written back: the constants as they were, the columns consumed (no second 'id' record)
    sp = Species("e", [(c.name, c.dtype) for c in cols], 0, lambda: iter([]), {}, {"openpmd": {"records": meta}})
    records, _ = m.plan_species(WHERE, sp)
    assert sorted(records) == ["charge", "id", "position", "positionOffset"]
    assert records["charge"].comps[""].constant == -1.0 and records["charge"].comps[""].column is None
    assert records["id"].comps[""].constant.dtype == np.uint64
    # the same metadata on a species that has rows again: its rows are written, not the constant
    sp = Species("e", [(c.name, c.dtype) for c in cols], 3, lambda: iter([]), {}, {"openpmd": {"records": meta}})
    records, _ = m.plan_species(WHERE, sp)
    assert records["charge"].comps[""].column == "charge" and records["charge"].comps[""].constant is None

    # with particles, a constant of shape [N] (WarpX) or [1] (FBPIC) is no column
    for shape in ([4], [1]):
        meta, comps, found = species(4, spec(4, shape))
        found["position"] = [comp("position", a, 4, "f4") for a in "xyz"]
        comps.update({("position", a): c for a, c in zip("xyz", found["position"])})
        cols = m.columns_of(WHERE, meta, comps, m.particle_count(found, WHERE)[0])
        assert [c.name for c in cols] == ["x", "y", "z"]


def test_constant_components_are_written_as_constants_in_their_dtype():
    sp = Species("e", [("x", np.dtype("f8")), ("y", np.dtype("f8")), ("z", np.dtype("f8"))], 5, lambda: iter([]),
                 {}, {"openpmd": {"records": {"weighting": {"scalar": True, "unitDimension": [0.0] * 7,
                                                            "components": {"": {"constant": 3, "dtype": "uint16",
                                                                                "unitSI": 1.0}}}}}})
    records, _ = m.plan_species(WHERE, sp)
    w = records["weighting"].comps[""]
    assert w.constant == 3 and w.constant.dtype == np.uint16 and w.column is None
    # no metadata: positionOffset is a constant 0 of the position dtype, unit length
    sp = Species("e", [(a, np.dtype("f4")) for a in "xyz"], 5, lambda: iter([]))
    records, axes = m.plan_species(WHERE, sp)
    assert axes == {"x": "x", "y": "y", "z": "z"} and records["position"].unit_dimension == LENGTH
    off = records["positionOffset"].comps["x"]
    assert off.constant == 0 and off.constant.dtype == np.float32


# ---------------------------------------------------------------------------------------------
# writing: columns -> records
# ---------------------------------------------------------------------------------------------

def plan(columns, units=None, attributes=None):
    cols = [(c, np.dtype(dt)) for c, dt in columns]
    return m.plan_species(WHERE, Species("e", cols, 1, lambda: iter([]), units or {}, attributes or {}))[0]


def test_columns_become_vector_or_scalar_records():
    xyz = [("x", "f8"), ("y", "f8"), ("z", "f8")]
    records = plan(xyz + [("momentum_x", "f4"), ("momentum_y", "f4"), ("momentum_z", "f4"), ("ux", "f4"),
                          ("id", "u8"), ("kinetic_energy", "f4"), ("E_x", "f8"), ("B_r", "f8")])
    assert sorted(records) == ["B_r", "E", "id", "kinetic_energy", "momentum", "position", "positionOffset", "ux"]
    assert sorted(records["momentum"].comps) == ["x", "y", "z"] and not records["momentum"].scalar
    assert records["momentum"].comps["y"].column == "momentum_y"
    assert list(records["E"].comps) == ["x"]                 # one column, an axis suffix: a vector record
    assert records["B_r"].scalar and list(records["B_r"].comps) == [""]  # one column, another suffix: scalar
    assert records["kinetic_energy"].scalar and records["id"].comps[""].dtype == np.uint64
    # a column of that prefix name, or components of different dimensions, keep them scalar
    records = plan(xyz + [("p", "f8"), ("p_x", "f8"), ("p_y", "f8")])
    assert {"p", "p_x", "p_y"} <= set(records) and records["p_x"].scalar
    units = {"q_a": openpmd_unit(1.0, LENGTH), "q_b": openpmd_unit(1.0, MOMENTUM)}
    records = plan(xyz + [("q_a", "f8"), ("q_b", "f8")], units)
    assert records["q_a"].scalar and records["q_b"].unit_dimension == MOMENTUM


def test_units_of_written_records():
    units = {a: openpmd_unit(1e-6, LENGTH) for a in "xyz"}
    units.update({"momentum_x": openpmd_unit(5e-22, MOMENTUM), "momentum_y": openpmd_unit(5e-22, MOMENTUM),
                  "energy": "keV", "w": "d_i"})
    records = plan([("x", "f4"), ("y", "f4"), ("z", "f4"), ("momentum_x", "f4"), ("momentum_y", "f4"),
                    ("energy", "f4"), ("w", "f4")], units)
    assert records["position"].comps["z"].unit_si == 1e-6 and records["position"].unit_dimension == LENGTH
    assert records["momentum"].comps["x"].unit_si == 5e-22 and records["momentum"].unit_dimension == MOMENTUM
    w = records["w"]   # free text of no SI unit: unitSI 1, no dimension, the text kept for the way back
    assert w.comps[""].unit_si == 1.0 and w.unit_dimension == [0.0] * 7 and w.attributes == {"motesUnit": "d_i"}
    assert m.unit_text({"unitDimension": w.unit_dimension, "attributes": {"motesUnit": {"value": "d_i",
                                                                                        "dtype": "string"}}},
                       w.comps[""].unit_si) == "d_i"
    e = records["energy"]   # free text of an SI unit: its unitSI and dimension (openPMD readers scale it), the text
    assert math.isclose(e.comps[""].unit_si, 1.602e-16, rel_tol=1e-3) and e.unit_dimension == [2, 1, -2, 0, 0, 0, 0]
    assert e.attributes == {"motesUnit": "keV"}
    assert m.unit_text({"unitDimension": e.unit_dimension, "attributes": {"motesUnit": {"value": "keV",
                                                                                        "dtype": "string"}}},
                       e.comps[""].unit_si) == "keV"


def test_writing_errors_name_the_column():
    with pytest.raises(UsageError, match=r"species 'e': has no column 'z' \(openPMD export needs x, y, z\)"):
        plan([("x", "f8"), ("y", "f8")])
    with pytest.raises(UsageError, match=r"column 'particlePatches' clashes with the openPMD record"):
        plan([("x", "f8"), ("y", "f8"), ("z", "f8"), ("particlePatches", "f8")])
    with pytest.raises(UsageError, match=r"record 'c': column 'c' has unsupported dtype complex64"):
        plan([("x", "f8"), ("y", "f8"), ("z", "f8"), ("c", "c8")])


def test_dtypes_are_native_and_canonical():
    assert m.canon(np.dtype(">f8").newbyteorder("=")) == np.dtype("f8")
    assert m.column_dtype(WHERE, "b", np.bool_) == np.uint8
    assert m.column_dtype(WHERE, "v", np.dtype(">i4")) == np.dtype("i4")
    assert m.scalar_of("int16", 7).dtype == np.int16
