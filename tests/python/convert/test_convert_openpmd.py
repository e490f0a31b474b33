"""openPMD import/export (motes.convert.openpmd): series written by openpmd-api itself are read,
written back and compared with openpmd-api; exports pass the openPMD validator."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from needs import missing, need

io = need("openpmd_api")
h5py = need("h5py")

import motes  # noqa: E402
from motes.convert import openpmd as op  # noqa: E402
from motes.convert.base import Species, Step, chunked_arrays, openpmd_unit, parse_openpmd_unit  # noqa: E402

SCALAR = io.Record_Component.SCALAR
ITERATIONS = (100, 200)
MOMENTUM_DIM = {io.Unit_Dimension.L: 1, io.Unit_Dimension.M: 1, io.Unit_Dimension.T: -1}
VALIDATOR = os.path.join(os.path.dirname(sys.executable), "openPMD_check_h5")


def _make_series(path, n_electrons=1000, n_ions=300, seed=1):
    """A small series as a simulation code would write it with openpmd-api; returns the data."""
    rng = np.random.default_rng(seed)
    s = io.Series(str(path), io.Access.create)
    s.author = "Jane Doe <jane@example.org>"
    s.set_software("picsim", "4.2")
    s.machine = "testbox"
    s.set_attribute("runId", np.uint32(7), np.dtype("uint32"))
    expected = {}
    for i in ITERATIONS:
        it = s.iterations[i]
        it.time = i * 0.5
        it.dt = 0.5
        it.time_unit_SI = 1e-15
        it.set_attribute("note", "iteration %d" % i)
        e = it.particles["electrons"]
        e.set_attribute("particleShape", 3.0)
        d = {c: rng.random(n_electrons).astype(np.float32) for c in "xyz"}
        d.update({f"momentum_{c}": rng.normal(size=n_electrons) for c in "xyz"})
        for c in "xyz":
            p = e["position"][c]
            p.reset_dataset(io.Dataset(np.dtype("float32"), [n_electrons]))
            p.unit_SI = 1e-6
            p.store_chunk(d[c])
            o = e["positionOffset"][c]
            o.reset_dataset(io.Dataset(np.dtype("float32"), [n_electrons]))
            o.make_constant(np.float32(0))
            m = e["momentum"][c]
            m.reset_dataset(io.Dataset(np.dtype("float64"), [n_electrons]))
            m.unit_SI = 5.4e-22
            m.store_chunk(d[f"momentum_{c}"])
        e["position"].unit_dimension = {io.Unit_Dimension.L: 1}
        e["positionOffset"].unit_dimension = {io.Unit_Dimension.L: 1}
        e["momentum"].unit_dimension = MOMENTUM_DIM
        e["momentum"].set_attribute("macroWeighted", np.uint32(0), np.dtype("uint32"))
        w = e["weighting"][SCALAR]
        w.reset_dataset(io.Dataset(np.dtype("float64"), [n_electrons]))
        w.make_constant(2.5)
        q = e["charge"][SCALAR]
        q.reset_dataset(io.Dataset(np.dtype("float64"), [n_electrons]))
        q.make_constant(-1.602176634e-19)
        e["charge"].unit_dimension = {io.Unit_Dimension.I: 1, io.Unit_Dimension.T: 1}
        ions = it.particles["ions"]
        di = {c: rng.random(n_ions) for c in "xyz"}
        di["id"] = np.arange(n_ions, dtype=np.uint64) + 1000 * i
        for c in "xyz":
            p = ions["position"][c]
            p.reset_dataset(io.Dataset(np.dtype("float64"), [n_ions]))
            p.store_chunk(di[c])
            o = ions["positionOffset"][c]
            o.reset_dataset(io.Dataset(np.dtype("float64"), [n_ions]))
            o.make_constant(0.0)
        r = ions["id"][SCALAR]
        r.reset_dataset(io.Dataset(np.dtype("uint64"), [n_ions]))
        r.store_chunk(di["id"])
        it.close()
        expected[i] = {"electrons": d, "ions": di}
    s.close()
    return expected


@pytest.fixture(scope="module", params=["data_%T.h5", "data.h5"], ids=["file-based", "group-based"])
def series(request, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("openpmd") / request.param)
    return path, _make_series(path)


def _concat(sp):
    parts = list(sp.chunks())
    return {c: np.concatenate([p[c] for p in parts]) for c, _ in sp.columns}


def _validate(path):
    r = subprocess.run([VALIDATOR, "-i", path], capture_output=True, text=True, timeout=60)
    m = re.search(r"Result: (\d+) Errors and (\d+) Warnings", r.stdout)
    assert m, r.stdout + r.stderr
    return int(m.group(1)), int(m.group(2)), r.returncode, r.stdout


def test_read_columns_units_times(series):
    path, expected = series
    steps = list(op.read(path, chunk_rows=256))
    assert [s.index for s in steps] == list(ITERATIONS)
    for st in steps:
        assert st.time == pytest.approx(st.index * 0.5 * 1e-15, rel=1e-15)
        assert st.attributes["time"] == st.index * 0.5
        assert st.attributes["dt"] == 0.5 and st.attributes["timeUnitSI"] == 1e-15
        info = st.attributes["openpmd"]
        assert info["author"] == "Jane Doe <jane@example.org>" and info["software"] == "picsim"
        assert info["iterationEncoding"] == ("fileBased" if "%T" in path else "groupBased")
        assert info["attributes"]["runId"] == {"value": 7, "dtype": "uint32"}
        assert info["iteration_attributes"]["note"]["value"] == "iteration %d" % st.index
        assert set(st.species) == {"electrons", "ions"}

        e = st.species["electrons"]
        assert e.count == 1000
        assert e.columns == [("x", np.dtype("float32")), ("y", np.dtype("float32")), ("z", np.dtype("float32")),
                             ("momentum_x", np.dtype("float64")), ("momentum_y", np.dtype("float64")),
                             ("momentum_z", np.dtype("float64"))]
        assert parse_openpmd_unit(e.units["x"]) == (1e-6, [1, 0, 0, 0, 0, 0, 0])
        assert parse_openpmd_unit(e.units["momentum_y"]) == (5.4e-22, [1, 1, -1, 0, 0, 0, 0])
        recs = e.attributes["openpmd"]["records"]
        assert recs["weighting"]["components"][""]["constant"] == 2.5        # constants: attributes, not columns
        assert recs["charge"]["components"][""]["constant"] == -1.602176634e-19
        assert recs["positionOffset"]["components"]["x"]["constant"] == 0.0
        assert recs["momentum"]["attributes"]["macroWeighted"] == {"value": 0, "dtype": "uint32"}
        assert e.attributes["openpmd"]["attributes"]["particleShape"]["value"] == 3.0
        got = _concat(e)
        for c, v in expected[st.index]["electrons"].items():
            np.testing.assert_array_equal(got[c], v)

        ions = st.species["ions"]
        assert ions.column_names() == ["x", "y", "z", "id"] and ions.count == 300
        got = _concat(ions)
        for c, v in expected[st.index]["ions"].items():
            np.testing.assert_array_equal(got[c], v)
            assert got[c].dtype == v.dtype


def _load_all(path):
    """Everything openpmd-api sees in a series, for comparisons."""
    s = io.Series(path, io.Access.read_only)
    out = {"series": {k: s.get_attribute(k) for k in ("author", "software", "softwareVersion", "machine", "date",
                                                         "runId", "openPMD", "basePath", "particlesPath")}}
    out["series_dtypes"] = {"runId": s.attribute_dtypes["runId"]}
    for i in s.iterations:
        it = s.iterations[i]
        d = {"time": it.time, "dt": it.dt, "timeUnitSI": it.time_unit_SI, "note": it.get_attribute("note"),
             "species": {}}
        for sn, sp in it.particles.items():
            sd = {"attrs": {k: (sp.get_attribute(k), sp.attribute_dtypes[k]) for k in sp.attributes}}
            for rn, rec in sp.items():
                rd = {"unitDimension": list(rec.unit_dimension), "timeOffset": rec.time_offset,
                      "timeOffsetType": rec.attribute_dtypes["timeOffset"],
                      "custom": {k: (rec.get_attribute(k), rec.attribute_dtypes[k]) for k in rec.attributes
                                 if k not in ("unitDimension", "timeOffset", "unitSI", "value", "shape")}}
                for cn, rc in rec.items():
                    cd = {"unitSI": rc.unit_SI, "dtype": rc.dtype, "shape": list(rc.shape), "constant": rc.constant}
                    if rc.constant:
                        cd["value"] = rc.get_attribute("value")
                        cd["valueType"] = rc.attribute_dtypes["value"]
                    else:
                        cd["data"] = rc.load_chunk()
                    rd[cn] = cd
                sd[rn] = rd
            d["species"][sn] = sd
        s.flush()
        out[i] = d
    s.close()
    return out


def _assert_same(a, b, path=""):
    if isinstance(a, dict):
        assert set(a) == set(b), f"{path}: {sorted(a)} != {sorted(b)}"
        for k in a:
            _assert_same(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype, path
        np.testing.assert_array_equal(a, b, err_msg=path)
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def test_round_trip_through_motes_steps_is_exact(series, tmp_path):
    path, _ = series
    out = str(tmp_path / ("copy_%T.h5" if "%T" in path else "copy.h5"))
    op.write(out, op.read(path, chunk_rows=300))
    a, b = _load_all(path), _load_all(out)
    _assert_same(a, b)           # values, dtypes, unitSI, unitDimension, times, constants, attributes
    assert b[100]["species"]["electrons"]["weighting"]["\x0bScalar"]["constant"]
    assert b["series"]["date"] == a["series"]["date"] and b["series_dtypes"]["runId"] == np.dtype("uint32")


def test_export_passes_openpmd_validator(series, tmp_path):
    path, _ = series
    if "%T" in path:
        op.write(str(tmp_path / "v_%T.h5"), op.read(path))
        target = str(tmp_path / "v_200.h5")
    else:
        op.write(str(tmp_path / "v.h5"), op.read(path))
        target = str(tmp_path / "v.h5")
    errors, warnings, rc, text = _validate(target)
    assert errors == 0 and rc == 0, text
    assert warnings == 0, text            # author is set, particlePatches are written


def test_chunked_read_is_bounded(tmp_path):
    path = str(tmp_path / "big.h5")
    expected = _make_series(path, n_electrons=10_000, n_ions=10)
    steps = list(op.read(path, chunk_rows=1000, species=["electrons"], steps=[200]))
    assert [s.index for s in steps] == [200] and list(steps[0].species) == ["electrons"]
    sp = steps[0].species["electrons"]
    chunks = list(sp.chunks())
    assert len(chunks) >= 10 and max(len(c["x"]) for c in chunks) <= 1000
    for c, v in expected[200]["electrons"].items():
        np.testing.assert_array_equal(np.concatenate([ch[c] for ch in chunks]), v)
    # re-iterable, also after read() is exhausted
    again = list(sp.chunks())
    np.testing.assert_array_equal(again[3]["momentum_z"], chunks[3]["momentum_z"])


def test_selection_errors(series):
    path, _ = series
    with pytest.raises(motes.UsageError, match="no iteration 300"):
        op.read(path, steps=[300])
    with pytest.raises(motes.UsageError, match="positrons"):
        list(op.read(path, species=["positrons"]))


def test_not_openpmd_is_format_error(tmp_path):
    plain = tmp_path / "plain.h5"
    with h5py.File(plain, "w") as f:
        f["x"] = np.arange(10.0)
    with pytest.raises(motes.FormatError, match=re.escape(str(plain))):
        op.read(str(plain))
    text = tmp_path / "text.h5"
    text.write_text("not hdf5")
    with pytest.raises(motes.FormatError, match="not an HDF5 file"):
        op.read(str(text))
    with pytest.raises(motes.NotFoundError, match="missing.h5: no such file"):  # also a FileNotFoundError
        op.read(str(tmp_path / "missing.h5"))
    with pytest.raises(FileNotFoundError, match="no file of the series"):
        op.read(str(tmp_path / "missing_%T.h5"))


def _species_writer(path, fill):
    s = io.Series(str(path), io.Access.create)
    it = s.iterations[0]
    sp = it.particles["e"]
    fill(sp)
    it.close()
    s.close()


def _position(sp, n, dtype="float64", axes="xyz", unit_si=1.0, offset=None):
    rng = np.random.default_rng(5)
    out = {}
    for c in axes:
        p = sp["position"][c]
        out[c] = rng.random(n).astype(dtype)
        p.reset_dataset(io.Dataset(np.dtype(dtype), [n]))
        p.unit_SI = unit_si
        p.store_chunk(out[c])
        o = sp["positionOffset"][c]
        if offset is None or np.isscalar(offset):
            o.reset_dataset(io.Dataset(np.dtype(dtype), [n]))
            o.make_constant(np.dtype(dtype).type(offset or 0))
        else:
            out["off_" + c] = offset[c]
            o.reset_dataset(io.Dataset(offset[c].dtype, [n]))
            o.store_chunk(offset[c])
        o.unit_SI = unit_si
    return out


def test_unsupported_dtype_is_named(tmp_path):
    path = tmp_path / "cplx.h5"

    def fill(sp):
        _position(sp, 4)
        c = sp["field"]["x"]
        c.reset_dataset(io.Dataset(np.dtype("complex128"), [4]))
        c.store_chunk(np.arange(4) * (1 + 1j))

    _species_writer(path, fill)
    with pytest.raises(motes.UsageError) as e:
        list(op.read(str(path)))
    msg = str(e.value)
    assert str(path) in msg and "iteration 0" in msg and "species 'e'" in msg and "field/x" in msg
    assert "complex128" in msg


def test_position_offset_columns(tmp_path):
    """PIConGPU style: float32 in-cell position + int32 cell index, both in cells."""
    path = tmp_path / "cells.h5"
    n = 500
    cells = {c: np.random.default_rng(3).integers(0, 1 << 20, n).astype(np.int32) for c in "xyz"}
    box = {}

    def fill(sp):
        box.update(_position(sp, n, dtype="float32", unit_si=1.5e-7, offset=cells))

    _species_writer(path, fill)
    (st,) = list(op.read(str(path), chunk_rows=128))
    sp = st.species["e"]
    assert sp.column_names() == ["x", "y", "z", "position_x", "position_y", "position_z",
                                 "positionOffset_x", "positionOffset_y", "positionOffset_z"]
    got = _concat(sp)
    for c in "xyz":
        assert got[c].dtype == np.float64
        np.testing.assert_array_equal(got[c], box[c].astype(np.float64) + cells[c])
        np.testing.assert_array_equal(got["position_" + c], box[c])
        np.testing.assert_array_equal(got["positionOffset_" + c], cells[c])
        assert parse_openpmd_unit(sp.units[c])[0] == 1.5e-7
    out = str(tmp_path / "cells_copy.h5")
    op.write(out, op.read(str(path)))
    a, b = _load_all_simple(str(path)), _load_all_simple(out)
    _assert_same(a, b)
    assert _validate(out)[0] == 0


def _load_all_simple(path):
    s = io.Series(path, io.Access.read_only)
    out = {}
    for i in s.iterations:
        for sn, sp in s.iterations[i].particles.items():
            for rn, rec in sp.items():
                for cn, rc in rec.items():
                    key = f"{i}/{sn}/{rn}/{cn!r}"
                    out[key] = {"dtype": rc.dtype, "unitSI": rc.unit_SI, "dim": list(rec.unit_dimension),
                                "constant": rc.constant}
                    if rc.constant:
                        out[key]["value"] = rc.get_attribute("value")
                    else:
                        out[key]["data"] = rc.load_chunk()
    s.flush()
    s.close()
    return out


def test_constant_offset_and_2d_positions(tmp_path):
    path = tmp_path / "planar.h5"
    n = 200
    pos = {}

    def fill(sp):
        pos.update(_position(sp, n, dtype="float64", axes="xz", offset=4.0))

    _species_writer(path, fill)
    (st,) = list(op.read(str(path)))
    sp = st.species["e"]
    assert sp.column_names() == ["x", "y", "z", "position_x", "position_z"]
    got = _concat(sp)
    np.testing.assert_array_equal(got["x"], pos["x"] + 4.0)
    np.testing.assert_array_equal(got["y"], np.zeros(n))        # no y component: zeros
    offs = sp.attributes["openpmd"]["records"]["positionOffset"]["components"]
    assert offs["x"]["constant"] == 4.0 and set(offs) == {"x", "z"}
    out = str(tmp_path / "planar_copy.h5")
    op.write(out, op.read(str(path)))
    b = _load_all_simple(out)
    assert not any("/position/'y'" in k for k in b)          # still 2-D
    np.testing.assert_array_equal(b["0/e/position/'x'"]["data"], pos["x"])
    assert b["0/e/positionOffset/'z'"]["value"] == 4.0


def _motes_step(n=3000, index=5, time=2.5e-9, patches=None, **species_kw):
    rng = np.random.default_rng(9)
    cols = {"x": rng.random(n, dtype=np.float32) * 10, "y": rng.random(n, dtype=np.float32),
            "z": rng.random(n, dtype=np.float32), "ux": rng.normal(size=n).astype(np.float32),
            "momentum_x": rng.normal(size=n), "momentum_y": rng.normal(size=n), "momentum_z": rng.normal(size=n),
            "kinetic_energy": rng.random(n), "id": np.arange(n, dtype=np.uint64)}
    order = np.argsort(cols["x"], kind="stable")
    cols = {k: v[order] for k, v in cols.items()}
    units = {"x": openpmd_unit(1e-6, [1, 0, 0, 0, 0, 0, 0]), "y": openpmd_unit(1e-6, [1, 0, 0, 0, 0, 0, 0]),
             "z": openpmd_unit(1e-6, [1, 0, 0, 0, 0, 0, 0]), "kinetic_energy": "keV",
             "momentum_x": openpmd_unit(1.0, [1, 1, -1, 0, 0, 0, 0]),
             "momentum_y": openpmd_unit(1.0, [1, 1, -1, 0, 0, 0, 0]),
             "momentum_z": openpmd_unit(1.0, [1, 1, -1, 0, 0, 0, 0])}
    attrs = {"code": "vpic"}
    if patches is not None:
        attrs["motes_patches"] = patches(cols)
    sp = Species("electrons", [(k, v.dtype) for k, v in cols.items()], n, chunked_arrays(cols, n, 700),
                 units=units, attributes=attrs, **species_kw)
    step = Step(index=index, time=time, attributes={"deck": {"nx": 64}}, species={"electrons": sp})
    return step, cols


def test_motes_columns_to_openpmd_and_back(tmp_path):
    step, cols = _motes_step()
    out = str(tmp_path / "from_motes.h5")
    op.write(out, [step])
    errors, _, rc, text = _validate(out)
    assert errors == 0 and rc == 0, text
    s = io.Series(out, io.Access.read_only)
    it = s.iterations[5]
    assert it.time == 2.5e-9 and it.time_unit_SI == 1.0
    e = it.particles["electrons"]
    assert set(e) == {"position", "positionOffset", "momentum", "ux", "kinetic_energy", "id"}
    assert e["position"]["x"].unit_SI == 1e-6 and e["position"]["x"].dtype == np.float32
    assert e["momentum"].unit_dimension == [1, 1, -1, 0, 0, 0, 0]
    assert e["kinetic_energy"].get_attribute("motesUnit") == "keV"
    # free text naming an SI unit is written as its unitSI and dimension: openPMD readers scale it
    assert abs(e["kinetic_energy"][io.Record_Component.SCALAR].unit_SI / 1.602176634e-16 - 1) < 1e-7
    assert e["kinetic_energy"].unit_dimension == [2, 1, -2, 0, 0, 0, 0]
    assert e["positionOffset"]["y"].constant
    s.close()
    (back,) = list(op.read(out))
    assert back.index == 5 and back.time == 2.5e-9 and back.attributes["deck"] == {"nx": 64}
    sp = back.species["electrons"]
    assert sp.attributes["code"] == "vpic"
    assert sp.units["kinetic_energy"] == "keV" and sp.units["x"] == openpmd_unit(1e-6, [1, 0, 0, 0, 0, 0, 0])
    assert sorted(sp.column_names()) == sorted(cols)
    got = _concat(sp)
    for c, v in cols.items():
        assert got[c].dtype == v.dtype
        np.testing.assert_array_equal(got[c], v)


def test_positions_in_cm_are_centimetres_to_openpmd_readers(tmp_path):
    """Issue 42, item 7: a dataset whose positions are in "cm" exports them with unitSI 0.01 (a
    reader multiplying by unitSI gets metres), and reads back as "cm"."""
    n = 500
    rng = np.random.default_rng(3)
    cols = {a: rng.random(n) * 100 for a in "xyz"}
    sp = Species("dm", [(k, v.dtype) for k, v in cols.items()], n, chunked_arrays(cols, n, 200),
                 units={a: "cm" for a in "xyz"})
    out = str(tmp_path / "cm.h5")
    op.write(out, [Step(index=0, time=0.0, attributes={}, species={"dm": sp})])
    s = io.Series(out, io.Access.read_only)
    pos = s.iterations[0].particles["dm"]["position"]
    assert pos["x"].unit_SI == 0.01 and pos.unit_dimension == [1, 0, 0, 0, 0, 0, 0]
    x = pos["x"].load_chunk()
    s.flush()
    np.testing.assert_array_equal(x, cols["x"])  # the values as stored, their unit beside them
    s.close()
    (back,) = list(op.read(out))
    assert back.species["dm"].units["x"] == "cm"


def test_motes_patches_are_written(tmp_path):
    def patches(cols):
        out, start = [], 0
        for n in (1000, 1500, 500):
            lo = [float(cols[a][start:start + n].min()) for a in "xyz"]
            hi = [float(cols[a][start:start + n].max()) for a in "xyz"]
            out.append({"offset": lo, "extent": [h - l for h, l in zip(hi, lo)], "numParticles": n,
                        "numParticlesOffset": start})
            start += n
        return out

    step, cols = _motes_step(patches=patches)
    out = str(tmp_path / "patches.h5")
    op.write(out, [step])
    assert _validate(out)[0] == 0
    s = io.Series(out, io.Access.read_only)
    pp = s.iterations[5].particles["electrons"].particle_patches
    num = pp["numParticles"][SCALAR].load()
    first = pp["numParticlesOffset"][SCALAR].load()
    off = {a: pp["offset"][a].load() for a in "xyz"}
    ext = {a: pp["extent"][a].load() for a in "xyz"}
    s.flush()
    assert num.sum() == 3000 and list(num) == [1000, 1500, 500] and list(first) == [0, 1000, 2500]
    assert pp["offset"]["x"].unit_SI == 1e-6
    for k, (n, f) in enumerate(zip(num, first)):
        for a in "xyz":
            v = cols[a][f:f + n]
            assert off[a][k] <= v.min() and v.max() <= off[a][k] + ext[a][k] * (1 + 1e-12)
    s.close()
    # the patches come back from read() and are written again when the species is unchanged
    (back,) = list(op.read(out))
    assert back.species["electrons"].attributes["openpmd"]["patches"]["numParticles"]["values"] == [1000, 1500, 500]
    out2 = str(tmp_path / "patches2.h5")
    op.write(out2, op.read(out))
    s = io.Series(out2, io.Access.read_only)
    num2 = s.iterations[5].particles["electrons"].particle_patches["numParticles"][SCALAR].load()
    s.flush()
    assert list(num2) == [1000, 1500, 500]
    s.close()


def test_default_patch_and_no_patches(tmp_path):
    step, cols = _motes_step()
    out = str(tmp_path / "box.h5")
    op.write(out, [step])
    s = io.Series(out, io.Access.read_only)
    pp = s.iterations[5].particles["electrons"].particle_patches
    num, ox, ex = pp["numParticles"][SCALAR].load(), pp["offset"]["x"].load(), pp["extent"]["x"].load()
    s.flush()
    assert list(num) == [3000]
    assert ox[0] == cols["x"].min() and ox[0] + ex[0] == pytest.approx(float(cols["x"].max()), rel=1e-15)
    s.close()
    step, _ = _motes_step()
    out = str(tmp_path / "nopatch.h5")
    op.write(out, [step], particle_patches=False)
    with h5py.File(out) as f:
        assert "particlePatches" not in f["data/5/particles/electrons"]
    step, _ = _motes_step(patches=lambda cols: [{"offset": [0, 0, 0], "extent": [1, 1, 1], "numParticles": 10,
                                                  "numParticlesOffset": 0}])
    with pytest.raises(motes.UsageError, match="motes_patches hold 10 particles"):
        op.write(str(tmp_path / "bad.h5"), [step])


def test_empty_species_is_valid(tmp_path):
    empty = {c: np.zeros(0, np.float32) for c in "xyz"}
    empty["w"] = np.zeros(0)
    sp = Species("ghosts", [(k, v.dtype) for k, v in empty.items()], 0, chunked_arrays(empty, 0, 100))
    step, _ = _motes_step()
    step.species["ghosts"] = sp
    out = str(tmp_path / "empty.h5")
    op.write(out, [step])
    errors, _, rc, text = _validate(out)
    assert errors == 0 and rc == 0, text
    (back,) = list(op.read(out))
    g = back.species["ghosts"]
    assert g.count == 0 and list(g.chunks()) == [] and g.column_names()[:3] == ["x", "y", "z"]
    # a step without species next to steps with species: still valid
    for name in ("nothing.h5", "nothing_%T.h5"):
        step, _ = _motes_step(index=6)
        op.write(str(tmp_path / name), [Step(index=5, time=0.0, attributes={}, species={}), step])
        target = str(tmp_path / name.replace("%T", "5"))
        errors, _, rc, text = _validate(target)
        assert errors == 0 and rc == 0, text
        assert [(s.index, list(s.species)) for s in op.read(str(tmp_path / name))] == [(5, []), (6, ["electrons"])]


def test_write_arguments(tmp_path):
    step, _ = _motes_step()
    with pytest.raises(motes.UsageError, match="needs %T"):
        op.write(str(tmp_path / "a.h5"), [step], iteration_encoding="file")
    with pytest.raises(motes.UsageError, match="drop the %T"):
        op.write(str(tmp_path / "a_%T.h5"), [step], iteration_encoding="group")
    with pytest.raises(motes.UsageError, match=r"\.h5"):
        op.write(str(tmp_path / "a.txt"), [step])
    with pytest.raises(motes.UsageError, match="no steps"):
        op.write(str(tmp_path / "a.h5"), [])
    # padded file names
    op.write(str(tmp_path / "p_%06T.h5"), [step])
    assert os.path.exists(tmp_path / "p_000005.h5")
    assert [s.index for s in op.read(str(tmp_path / "p_%06T.h5"))] == [5]


def test_adios2_bp(tmp_path):
    if not io.variants.get("adios2"):
        missing("openpmd-api was built without ADIOS2 (its pip wheels have it)")
    step, cols = _motes_step(n=500)
    out = str(tmp_path / "run_%T.bp")
    op.write(out, [step])
    (back,) = list(op.read(out))
    got = _concat(back.species["electrons"])
    np.testing.assert_array_equal(got["momentum_y"], cols["momentum_y"])
    # a variable-based series (ADIOS2 steps) is read as a stream, step by step
    path = str(tmp_path / "var.bp")
    s = io.Series(path, io.Access.create)
    s.set_iteration_encoding(io.Iteration_Encoding.variable_based)
    for i in (0, 1):
        it = s.write_iterations()[i]
        for c in "xyz":
            p = it.particles["e"]["position"][c]
            p.reset_dataset(io.Dataset(np.dtype("float64"), [3]))
            p.store_chunk(np.arange(3.0) + i)
            o = it.particles["e"]["positionOffset"][c]
            o.reset_dataset(io.Dataset(np.dtype("float64"), [3]))
            o.make_constant(0.0)
        it.close()
    s.close()
    stream = op.read(path)
    for i, st in enumerate(stream):
        assert st.index == i
        np.testing.assert_array_equal(_concat(st.species["e"])["x"], np.arange(3.0) + i)
    with pytest.raises(motes.FormatError, match="read as a stream and is gone"):
        _concat(st.species["e"])  # a step of a stream is read before the next one, not after
    with pytest.raises(motes.UsageError, match="'file' or 'group'"):
        op.write(str(tmp_path / "v2.bp"), [step], iteration_encoding="variable")


def test_through_a_motes_dataset(tmp_path):
    """openPMD -> motes -> openPMD with motes.convert: everything but the row order survives,
    and the export carries the motes spatial blocks as particlePatches."""
    from motes.convert import convert
    src, mid, back = str(tmp_path / "src.h5"), str(tmp_path / "mid.motes"), str(tmp_path / "back.h5")
    _make_series(src, n_electrons=2000, n_ions=100)
    convert(src, mid, chunk_rows=500)
    convert(mid, back, dst_format="openpmd", chunk_rows=500)
    a, b = _load_all(src), _load_all(back)
    assert a["series"] == b["series"]
    for i in ITERATIONS:
        for key in ("time", "dt", "timeUnitSI", "note"):
            assert a[i][key] == b[i][key]
        for sp in ("electrons", "ions"):
            for rn, rd in a[i]["species"][sp].items():
                other = b[i]["species"][sp][rn]
                if rn == "attrs":
                    assert rd == other
                    continue
                for cn, cd in rd.items():
                    if not isinstance(cd, dict):
                        assert cd == other[cn], (i, sp, rn, cn)
                        continue
                    for k, v in cd.items():
                        if k == "data":   # motes reorders rows spatially
                            assert v.dtype == other[cn][k].dtype
                            np.testing.assert_array_equal(np.sort(v), np.sort(other[cn][k]))
                        else:
                            assert v == other[cn][k], (i, sp, rn, cn, k)
    errors, _, rc, text = _validate(back)
    assert errors == 0 and rc == 0, text
    s = io.Series(back, io.Access.read_only)
    num = s.iterations[100].particles["electrons"].particle_patches["numParticles"][SCALAR].load()
    s.flush()
    assert num.sum() == 2000 and len(num) >= 4     # one patch per spatial block of <= 500 rows
    s.close()


def test_export_reads_in_openpmd_viewer(tmp_path):
    """A motes step exported as a file-based openPMD series opens in openPMD-viewer."""
    viewer = need("openpmd_viewer")
    import motes
    from motes import convert, synth

    d = synth.vpic(20_000, seed=5, with_id=True)
    w = motes.Writer(tmp_path / "a.motes", sync=False)
    w.write_step(0, {"electrons": d}, time=0.5)
    w.write_step(4, {"electrons": {k: v[::2] for k, v in d.items()}}, time=1.5)
    (tmp_path / "diags").mkdir()
    convert.convert(tmp_path / "a.motes", tmp_path / "diags" / "data_%T.h5", chunk_rows=5000)
    ts = viewer.OpenPMDTimeSeries(str(tmp_path / "diags"), backend="h5py", check_all_files=True)
    assert list(ts.iterations) == [0, 4]
    assert np.allclose(ts.t, [0.5, 1.5])
    ids, energy = ts.get_particle(["id", "energy"], species="electrons", iteration=4)
    order, want = np.argsort(ids), np.argsort(d["id"][::2])
    assert np.array_equal(ids[order], d["id"][::2][want])
    assert np.array_equal(energy[order].astype(np.float32), d["energy"][::2][want])
