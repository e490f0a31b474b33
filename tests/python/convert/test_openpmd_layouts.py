"""Every openPMD particle layout imports (docs/convert-openpmd.md, "Positions"): position
components of any names on motes' axes x, y, z by the rule (names, the code's table, order,
or --axes), ImpactX's real monitor output converted bit-exact against openpmd-api's own read
and exported back as written, .bp4/.bp5 names, and variable-based series (ADIOS2 steps) read
step by step. Every input is made by the test: ImpactX runs here (bench/gen_impactx.py)."""

import os
import subprocess
import sys

import numpy as np
import pytest

from impactx_util import assert_holds_the_monitor, finish_impactx, openpmd_species, start_impactx
from needs import need

import motes
from motes.cli import main
from motes.convert import convert, detect_format, read
from motes.convert.openpmd.mapping import position_axes

@pytest.mark.parametrize("components, software, axes, want, rule", [
    (["x", "y", "z"], "WarpX", None, {"x": "x", "y": "y", "z": "z"}, "names"),
    (["x", "z"], "WarpX", None, {"x": "x", "z": "z"}, "names"),  # 2-D: y is filled
    (["z"], None, None, {"z": "z"}, "names"),
    (["t", "x", "y"], "ImpactX", None, {"x": "x", "y": "y", "z": "t"}, "ImpactX"),
    (["r", "z"], "somecode", None, {"x": "r", "z": "z"}, "order"),
    (["u", "v", "w"], None, None, {"x": "u", "y": "v", "z": "w"}, "order"),
    (["t", "x", "y"], "ImpactX", ["t", "x", "y"], {"x": "t", "y": "x", "z": "y"}, "axes"),
    (["x", "z"], None, ["x", "-", "z"], {"x": "x", "z": "z"}, "axes"),
])
def test_the_position_rule(components, software, axes, want, rule):
    assert position_axes("f.h5", components, software, axes) == (want, rule)


@pytest.mark.parametrize("components, axes, needle", [
    (["a", "b", "c", "d"], None, "4 components .*choose them with --axes"),
    (["x", "y", "t"], ["x", "y"], "component\\(s\\) t on no axis"),
    (["x", "y", "t"], ["x", "y", "q"], "names 'q', which is no component"),
    (["x", "y", "t"], ["x", "x", "t"], "names 'x' twice"),
    (["x"], ["-", "-"], "must name 1 to 3"),
])
def test_the_position_rule_names_what_is_wrong(components, axes, needle):
    with pytest.raises(motes.UsageError, match=needle):
        position_axes("f.h5", components, None, axes)


@pytest.fixture(scope="module")
def impactx_run(tmp_path_factory):
    """ImpactX's own BeamMonitor file: 4,000 electrons at 5 monitor passes."""
    return finish_impactx(start_impactx(tmp_path_factory.mktemp("impactx")))


def test_impactx_output_converts_exactly(impactx_run, tmp_path):
    dst = str(tmp_path / "beam.motes")
    convert(impactx_run, dst)
    assert_holds_the_monitor(dst, *openpmd_species(impactx_run))
    pos = next(iter(read(dst))).species["beam"].attributes["openpmd"]["records"]["position"]
    assert (pos["axes"], pos["axesRule"]) == ({"x": "x", "y": "y", "z": "t"}, "ImpactX")  # kept with the species


def test_impactx_goes_back_to_openpmd_as_it_was(impactx_run, tmp_path):
    dst = str(tmp_path / "beam.motes")
    convert(impactx_run, dst)
    back = str(tmp_path / "back.h5")
    convert(dst, back, dst_format="openpmd")
    want, _ = openpmd_species(impactx_run)
    got, _ = openpmd_species(back)
    assert sorted(got) == sorted(want)
    for k in want:
        a, b = want[k], got[k]
        assert sorted(a) == sorted(b)  # position/t is position/t again, not z
        oa, ob = np.argsort(a["id"]), np.argsort(b["id"])
        for label in a:
            if isinstance(a[label], tuple):
                assert b[label][0] == a[label][0] and b[label][1] == a[label][1], label
            else:
                assert b[label].dtype == a[label].dtype
                np.testing.assert_array_equal(b[label][ob], a[label][oa], err_msg=label)


def test_axes_on_the_command_line(impactx_run, tmp_path, capsys):
    dst = str(tmp_path / "swapped.motes")
    assert main(["convert", impactx_run, dst, "--axes", "t,x,y"]) == 0
    ds = motes.open(dst)
    first = min(ds.steps)
    want, _ = openpmd_species(impactx_run)
    t = ds.query(step=first, columns=["id", "x", "y"])
    order, by_id = np.argsort(t["id"]), np.argsort(want[first]["id"])
    np.testing.assert_array_equal(t["y"][order], want[first]["position/x"][by_id])  # x is on axis y
    pos = next(iter(read(dst))).species["beam"].attributes["openpmd"]["records"]["position"]
    assert (pos["axes"], pos["axesRule"]) == ({"x": "t", "y": "x", "z": "y"}, "axes")
    assert main(["convert", impactx_run, str(tmp_path / "bad.motes"), "--axes", "x,y"]) == 2
    assert "on no axis" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "swapped.motes"), str(tmp_path / "no.motes"), "--axes", "x,y,z"]) == 2
    assert "--axes places the position components of an openPMD source" in capsys.readouterr().err


def test_bp4_and_bp5_are_openpmd(tmp_path):
    for name in ("a.bp4", "a.bp5", "a.bp", "a_%T.bp5"):
        assert detect_format(str(tmp_path / name), True) == "openpmd"
    src = str(tmp_path / "one.motes")
    motes.write(src, {c: np.random.default_rng(1).random(500) for c in "xyz"})
    for ext in ("bp4", "bp5"):
        out = str(tmp_path / f"one.{ext}")
        convert(src, out)
        assert os.path.isdir(out)
        back = str(tmp_path / f"back_{ext}.motes")
        convert(out, back)
        np.testing.assert_array_equal(np.sort(motes.open(back).query()["x"]), np.sort(motes.open(src).query()["x"]))


VARIABLE_BASED = """
import json, sys
import numpy as np
import openpmd_api as io
s = io.Series(sys.argv[1], io.Access.create, json.dumps({"adios2": {"engine": {"type": "bp5"}}}))
s.set_iteration_encoding(io.Iteration_Encoding.variable_based)
rng = np.random.default_rng(0)
for k in range(4):
    it = s.write_iterations()[10 * k]
    it.time, it.time_unit_SI = 0.5 * k, 1e-15
    e = it.particles["e"]
    n = 1000 + 7 * k
    for c in "xz":  # a 2-D code
        d = rng.random(n)
        e["position"][c].reset_dataset(io.Dataset(d.dtype, [n]))
        e["position"][c].store_chunk(d, [0], [n])
        e["positionOffset"][c].reset_dataset(io.Dataset(np.dtype("f8"), [n]))
        e["positionOffset"][c].make_constant(0.0)
    i = np.arange(n, dtype=np.uint64) + 1000 * k
    e["id"][io.Record_Component.SCALAR].reset_dataset(io.Dataset(i.dtype, [n]))
    e["id"][io.Record_Component.SCALAR].store_chunk(i, [0], [n])
    m = it.meshes["rho"]
    g = rng.random((4, 6))
    m.axis_labels, m.grid_spacing, m.grid_global_offset = ["x", "z"], [0.25, 0.2], [0.0, 0.0]
    rc = m[io.Mesh_Record_Component.SCALAR]
    rc.reset_dataset(io.Dataset(g.dtype, list(g.shape)))
    rc.position = [0.0, 0.0]
    rc.store_chunk(g, [0, 0], list(g.shape))
    it.close()
s.close()
"""


def test_a_variable_based_series_is_read_step_by_step(tmp_path):
    io = need("openpmd_api")
    src = str(tmp_path / "stream.bp5")
    subprocess.run([sys.executable, "-c", VARIABLE_BASED, src], check=True, timeout=300)
    series = io.Series(src, io.Access.read_linear)
    want = {}
    for it in series.read_iterations():
        e = it.particles["e"]
        x, z = e["position"]["x"].load_chunk(), e["position"]["z"].load_chunk()
        i = e["id"][io.Record_Component.SCALAR].load_chunk()
        rho = it.meshes["rho"][io.Mesh_Record_Component.SCALAR].load_chunk()
        it.close()  # flushes the loads
        want[int(it.iteration_index)] = (x, z, i, rho, it.time * it.time_unit_SI)
    series.close()

    dst = str(tmp_path / "stream.motes")
    convert(src, dst)
    ds = motes.open(dst)
    assert ds.steps == [0, 10, 20, 30]
    for k, (x, z, i, rho, time) in want.items():
        t = ds.query(step=k)
        order, by_id = np.argsort(t["id"]), np.argsort(i)
        np.testing.assert_array_equal(t["id"][order], i[by_id])
        np.testing.assert_array_equal(t["x"][order], x[by_id])
        np.testing.assert_array_equal(t["z"][order], z[by_id])
        assert not t["y"].any()  # the 2-D code's missing axis
        assert ds.times[ds.steps.index(k)] == time
        # axisLabels x, z with C order: rho[ix, iz]; a motes field is (z, y, x)
        np.testing.assert_array_equal(ds.field("rho", k).read(), rho.T[:, None, :])

    picked = str(tmp_path / "picked.motes")
    convert(src, picked, steps=[10, 30])
    assert motes.open(picked).steps == [10, 30]
    with pytest.raises(motes.UsageError, match="no step 5"):
        convert(src, str(tmp_path / "none.motes"), steps=[5])
    assert not os.path.exists(str(tmp_path / "none.motes"))
