"""Loose input, each refused with a UsageError that names it (never a binding's TypeError,
an overflow, a traceback or a file at the wrong path)."""

import math
import os

import numpy as np
import pytest

import motes
from motes.cli import main

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)


def cols(n=500, seed=0):
    rng = np.random.default_rng(seed)
    return {"x": rng.random(n) - 0.5, "y": rng.random(n), "z": rng.random(n), "e": rng.random(n)}


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    p = tmp_path_factory.mktemp("v") / "v.motes"
    motes.write(p, cols(), **SMALL)
    return motes.open(p)


@pytest.mark.parametrize("quality, needle", [((-1, -0.5), "quality must be a number in \\[0, 1\\], got -1"),
                                             (2, "got 2"), (math.nan, "finite"), (("a", 1), "must be a number"),
                                             ((0.7, 0.2), "reversed"), ((0.1, 0.2, 0.3), "pair")])
def test_quality(ds, quality, needle):
    with pytest.raises(motes.UsageError, match=needle):
        ds.count(quality=quality)


@pytest.mark.parametrize("kwargs, needle", [(dict(step=2**70), "step must be in"), (dict(step=1.5), "step must be an integer"),
                                            (dict(threads=-1), "threads must be in"), (dict(threads=2**40), "threads"),
                                            (dict(box=(math.nan, 0, 0, 1, 1, 1)), "box"),
                                            (dict(box=(0, 0, 0, 1, 1)), "box must be 6 numbers"),
                                            (dict(box="abc"), "box must be 6 numbers")])
def test_query_arguments(ds, kwargs, needle):
    with pytest.raises(motes.UsageError, match=needle):
        ds.count(**kwargs)


@pytest.mark.parametrize("kwargs, needle", [(dict(step=-(2**64)), "step must be in"), (dict(leaf_size=2**40), "leaf_size"),
                                            (dict(lod_count=0), "lod_count"), (dict(threads=-2), "threads"),
                                            (dict(target_bytes=-1), "target_bytes"), (dict(time=math.inf), "finite"),
                                            (dict(time="now"), "must be a number")])
def test_write_arguments(tmp_path, kwargs, needle):
    with pytest.raises(motes.UsageError, match=needle):
        motes.write(tmp_path / "w.motes", cols(), **kwargs)
    assert not (tmp_path / "w.motes").exists()


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_attribute_values(tmp_path, ds, value):
    with pytest.raises(motes.UsageError, match="NaN and infinity have no JSON form"):
        motes.write(tmp_path / "a.motes", cols(), attributes={"a": {"b": [1, value]}}, **SMALL)
    with pytest.raises(motes.UsageError, match="dataset attributes"):
        ds.set_attributes({"a": value})


def test_nul_in_a_path_creates_nothing(tmp_path):
    bad = str(tmp_path / "a\0b.motes")
    with pytest.raises(motes.UsageError, match="NUL"):
        motes.write(bad, cols(), **SMALL)
    with pytest.raises(motes.UsageError, match="NUL"):
        motes.open(bad)
    assert os.listdir(tmp_path) == []


def test_cli_takes_negative_numbers_in_every_form(ds, capsys):
    assert main(["hist", ds.path, "x", "--range", "-5e-1", "5E-1", "--bins", "4"]) == 0
    assert "500 particles" in capsys.readouterr().out
    assert main(["query", ds.path, "--box", "-1e0", "-.5", "-0.5e-0", "1", "1", "1", "--count"]) == 0
    assert capsys.readouterr().out.strip() == "500"
    assert main(["query", ds.path, "--where", "x > -0.25", "--count"]) == 0
    assert int(capsys.readouterr().out) == int(np.sum(cols()["x"] > -0.25))


def test_cli_generate_refuses_what_it_cannot_do(tmp_path, capsys):
    assert main(["generate", "uniform", "1e12", str(tmp_path / "g.motes")]) == 2
    err = capsys.readouterr().err
    assert "need about" in err and "of memory" in err and "Traceback" not in err
    assert main(["generate", "uniform", "100", str(tmp_path / "g.motes"), "--seed", "-1"]) == 2
    assert "--seed: must be at least 0" in capsys.readouterr().err
    assert not (tmp_path / "g.motes").exists()


def test_cli_out_of_range_integers(ds, capsys):
    assert main(["query", ds.path, "--step", str(2**70), "--count"]) == 2
    assert "step must be in" in capsys.readouterr().err
    assert main(["query", ds.path, "--threads", str(2**40), "--count"]) == 2
    assert "threads must be in" in capsys.readouterr().err
