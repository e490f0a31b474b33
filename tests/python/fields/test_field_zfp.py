"""Fields stored within a tolerance (ZFP fixed accuracy, docs/format.md §14.8): every level and
random box reads back within the tolerance of numpy's striding of the input, for 1-3-D grids
of float32 and float64, scalar and vector; smooth grids take a fraction of the lossless size;
blocks ZFP cannot keep (NaN, infinities) are stored exactly; an exact field's file is unchanged
(version 1.0, no zfp-blocks feature); bad tolerances are usage errors naming the problem."""

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import motes
from motes.field import Field
from motes.fields.file import open_field_file, write_field_file

from test_field_file import expected, grid

# Container header (docs/format.md §4.2): version minor (u16) at 10, required features (u64) at 16.
FEATURE_ZFP_BLOCKS = 0x8


def header(path):
    b = open(path, "rb").read(24)
    return struct.unpack_from("<H", b, 10)[0], struct.unpack_from("<Q", b, 16)[0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_level_and_box_within_the_tolerance(tmp_path, data):
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 70 if ndim < 3 else 24), min_size=ndim, max_size=ndim)))
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    vector = data.draw(st.booleans())
    tol = data.draw(st.sampled_from([1e-4, 1e-3, 0.05]))
    a = grid(shape, dtype, seed=data.draw(st.integers(0, 1000)))
    if vector:
        a = np.stack([a, 2 * a], axis=-1)
    f = Field(a, components=("u", "v") if vector else None, tolerance=tol)
    path = tmp_path / "f.mfd"
    s = write_field_file(path, f, name="f", block_bits=data.draw(st.sampled_from([6, 9, 14])), sync=False)
    stored = open_field_file(path)
    assert stored.tolerance == tol
    dims = tuple(reversed(shape))
    for level in {0, 1, stored.levels}:
        lo = [data.draw(st.integers(0, d - 1)) for d in dims]
        hi = [data.draw(st.integers(l + 1, d)) for l, d in zip(lo, dims)]
        got = stored.read(index_box=(lo, hi), level=level)
        want = expected(a, ndim, level, lo, hi)
        assert got.shape == want.shape and got.dtype == a.dtype
        assert np.max(np.abs(got.astype(np.float64) - want), initial=0) <= tol
    # The block ranges bound what is stored: the field's range holds every value read.
    whole = stored.read()
    for k, (mn, mx) in enumerate(stored.ranges):
        c = whole[..., k] if vector else whole
        assert mn == c.min() and mx == c.max()
    stored.verify()
    minor, features = header(path)
    assert (features & FEATURE_ZFP_BLOCKS) == (FEATURE_ZFP_BLOCKS if s["zfp_blocks"] else 0) and minor == (1 if s["zfp_blocks"] else 0)


def test_smooth_fields_take_a_fraction_of_the_lossless_bytes(tmp_path):
    z, y, x = np.meshgrid(*[np.linspace(0, 1, 96)] * 3, indexing="ij")
    a = (np.sin(6 * x) * np.cos(4 * y) + np.exp(-((z - 0.5) ** 2) * 20)).astype(np.float32)
    exact = write_field_file(tmp_path / "exact.mfd", Field(a), sync=False)
    lossy = write_field_file(tmp_path / "lossy.mfd", Field(a, tolerance=1e-3 * float(np.ptp(a))), sync=False)
    assert lossy["stored_bytes"] * 3 < exact["stored_bytes"], (lossy["stored_bytes"], exact["stored_bytes"])
    got = open_field_file(tmp_path / "lossy.mfd").read()
    assert np.max(np.abs(got - a)) <= 1e-3 * float(np.ptp(a))
    assert header(tmp_path / "exact.mfd") == (0, header(tmp_path / "exact.mfd")[1]) and \
        not header(tmp_path / "exact.mfd")[1] & FEATURE_ZFP_BLOCKS


def test_blocks_with_nan_or_inf_are_stored_exactly(tmp_path):
    a = grid((40, 40, 40), np.float64)
    a[3, 4, 5] = np.nan
    a[39, 39, 39] = np.inf
    s = write_field_file(tmp_path / "f.mfd", Field(a, tolerance=1e-3), block_bits=9, sync=False)
    assert 0 < s["zfp_blocks"]
    got = open_field_file(tmp_path / "f.mfd").read()
    assert np.isnan(got[3, 4, 5]) and got[39, 39, 39] == np.inf
    finite = np.isfinite(a)
    assert np.max(np.abs(got[finite] - a[finite])) <= 1e-3


def test_tolerance_through_a_dataset(tmp_path):
    a = grid((30, 20, 10), np.float32)
    motes.write(tmp_path / "run.motes", None, step=0, fields={"rho": Field(a, tolerance=1e-2)}, sync=False)
    ds = motes.open(tmp_path / "run.motes")
    f = ds.field("rho")
    assert f.tolerance == 1e-2 and np.max(np.abs(f.read() - a)) <= 1e-2
    assert ds.verify()["fields"] == 1


@pytest.mark.parametrize("kwargs,match", [
    (dict(array=np.zeros((4, 4), np.int32), tolerance=0.1), "float32 or float64"),
    (dict(array=np.zeros((4, 4), np.float32), tolerance=-1), "finite and >= 0"),
    (dict(array=np.zeros((4, 4), np.float32), tolerance=float("nan")), "finite and >= 0"),
    (dict(array=np.zeros((4, 4), np.float32), tolerance="x"), "must be a number"),
])
def test_bad_tolerances_are_usage_errors(kwargs, match):
    with pytest.raises(motes.UsageError, match=match):
        Field(**kwargs)


def test_the_guide_does_not_list_zfp_fields_as_missing(tmp_path):
    """The guide documents ZFP for fields (motes.Field(tolerance=)), which this file tests:
    no 'Not yet' paragraph of it may say otherwise."""
    import pathlib
    import re

    guide = (pathlib.Path(__file__).resolve().parents[3] / "docs" / "guide.md").read_text()
    assert "motes.Field(a, tolerance=t)" in guide and "ZFP's fixed-accuracy mode" in guide
    not_yet = [p for p in re.split(r"\n\s*\n", guide) if re.match(r"\s*Not yet\b", p)]
    assert not_yet, "the guide's 'Not yet' paragraphs moved: update this test"
    for paragraph in not_yet:
        assert "ZFP" not in paragraph and "tolerance" not in paragraph, paragraph
    a = np.linspace(0, 1, 4096, dtype=np.float32).reshape(16, 16, 16)
    write_field_file(tmp_path / "z.mfd", Field(a, tolerance=1e-3), name="z", sync=False)
    assert header(tmp_path / "z.mfd")[1] & FEATURE_ZFP_BLOCKS  # as documented: ZFP blocks
