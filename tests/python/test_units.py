"""Units are structured metadata shown as human units: openPMD's unitSI and unitDimension
become "m", "kg m s^-1", "µm", "J" in motes info, plot axes and Dataset.schema()."""

import json
import sys

import numpy as np
import pytest

from needs import need

import motes
from motes import units
from motes.cli import main
from motes.cli.hist import _axis_label


def ou(si, dims):
    return json.dumps({"unitSI": si, "unitDimension": dims})


@pytest.mark.parametrize("text, want", [
    (ou(1.0, [1, 0, 0, 0, 0, 0, 0]), "m"),
    (ou(1.0, [1, 1, -1, 0, 0, 0, 0]), "kg m s^-1"),
    (ou(1e-6, [1, 0, 0, 0, 0, 0, 0]), "µm"),
    (ou(1e-15, [0, 0, 1, 0, 0, 0, 0]), "fs"),
    (ou(1.0, [2, 1, -2, 0, 0, 0, 0]), "J"),
    (ou(1.0, [1, 1, -3, -1, 0, 0, 0]), "V m^-1"),
    (ou(5.4e-22, [1, 1, -1, 0, 0, 0, 0]), "5.4e-22 kg m s^-1"),
    (ou(1.0, [0, 0, 0, 0, 0, 0, 0]), ""),
    (ou(1.0, [-3, 0, 0, 0, 0, 0, 0]), "m^-3"),
    (ou(1.0, [0.5, 0, 0, 0, 0, 0, 0]), "m^0.5"),
    ("keV", "keV"), ("", ""), ("{not json", "{not json"),
])
def test_labels(text, want):
    assert units.label(text) == want


def test_structure():
    u = units.parse(ou(1e-6, [1, 0, 0, 0, 0, 0, 0]))
    assert u.unit_si == 1e-6 and u.dimension == (1, 0, 0, 0, 0, 0, 0)
    assert units.parse("keV").unit_si is None


@pytest.fixture
def openpmd_import(tmp_path):
    need("h5py")
    need("openpmd_api")
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from test_convert_real_codes import fbpic_like

    src, _ = fbpic_like(str(tmp_path / "h5"), iterations=(100,))
    assert main(["convert", src, str(tmp_path / "run.motes"), "--no-progress"]) == 0
    return motes.open(tmp_path / "run.motes")


def test_openpmd_units_show_as_si_units(openpmd_import, capsys):
    ds = openpmd_import
    cols = {c.name: c for c in ds.schema()}
    assert cols["x"].unit_label == "m" and cols["momentum_x"].unit_label == "kg m s^-1"
    assert cols["x"].unit_si == 1.0 and cols["momentum_x"].unit_dimension == (1, 1, -1, 0, 0, 0, 0)
    assert json.loads(cols["x"].unit)["unitSI"] == 1.0  # stored as it was
    capsys.readouterr()
    assert main(["info", ds.path]) == 0
    out = capsys.readouterr().out
    assert "kg m s^-1" in out and "unitDimension" not in out
    assert main(["info", ds.path, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    col = {c["name"]: c for c in info["files"][0]["columns"]}["momentum_x"]
    assert col["unit_label"] == "kg m s^-1" and col["unit_si"] == 1.0 and col["unit_dimension"] == [1, 1, -1, 0, 0, 0, 0]
    assert _axis_label(ds, "momentum_x", None, "electrons") == "momentum_x [kg m s^-1]"
    assert _axis_label(ds, "id", None, "electrons") == "id"


def test_plot_axis_shows_the_human_unit(openpmd_import, tmp_path):
    matplotlib = need("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seen = {}
    real_savefig = plt.Figure.savefig

    def capture(fig, *args, **kwargs):
        ax = fig.axes[0]
        seen["x"], seen["y"] = ax.get_xlabel(), ax.get_ylabel()
        return real_savefig(fig, *args, **kwargs)

    plt.Figure.savefig = capture
    try:
        assert main(["hist", openpmd_import.path, "x", "momentum_z", "--plot", str(tmp_path / "p.png")]) == 0
    finally:
        plt.Figure.savefig = real_savefig
    assert seen == {"x": "x [m]", "y": "momentum_z [kg m s^-1]"}
