"""H5Part and VTKHDF exports with HDF5 filters: chunked, compressed datasets that h5py (with
hdf5plugin for zstd and blosc2) and motes read back exactly, smaller than uncompressed."""
import os

import numpy as np
import pytest

from needs import need

import motes
from motes import convert

h5py = need("h5py")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    rng = np.random.default_rng(3)
    n = 50_000
    cols = {"x": np.sort(rng.random(n)).astype(np.float32), "y": rng.random(n).astype(np.float32),
            "z": np.zeros(n, np.float32), "q": rng.integers(0, 3, n).astype(np.int16)}
    p = tmp_path_factory.mktemp("src") / "a.motes"
    motes.write(p, cols, sync=False)
    return p, dict(motes.open(p).query())


@pytest.mark.parametrize("compression", ["gzip", "zstd", "blosc2"])
@pytest.mark.parametrize("fmt", ["h5part", "vtkhdf"])
def test_filtered_exports_read_back_exactly(tmp_path, source, compression, fmt):
    if compression != "gzip":
        need("hdf5plugin")
    src, want = source
    plain, packed = tmp_path / f"plain.{fmt}.h5", tmp_path / f"packed.{fmt}.h5"
    convert.convert(src, plain, dst_format=fmt)
    convert.convert(src, packed, dst_format=fmt, write_options={"compression": compression})
    assert os.path.getsize(packed) < os.path.getsize(plain)
    if compression != "gzip":
        import hdf5plugin  # noqa: F401  (registers the filters with h5py)
    with h5py.File(packed, "r") as f:
        ds = f["Step#0/q"] if fmt == "h5part" else f["VTKHDF/PointData/q"]
        assert ds.chunks is not None and (ds.compression == "gzip" or ds._filters)
        np.testing.assert_array_equal(ds[...], want["q"])
        if fmt == "vtkhdf":  # an export format: checked here, not imported back
            np.testing.assert_array_equal(f["VTKHDF/Points"][:, 0], want["x"])
            return
    back = tmp_path / "back.motes"
    convert.convert(packed, back)
    got = dict(motes.open(back).query())
    for c in ("x", "y", "q"):
        np.testing.assert_array_equal(np.sort(got[c]), np.sort(want[c]))


def test_unknown_filter_is_refused(tmp_path, source):
    src, _ = source
    with pytest.raises(motes.UsageError, match="HDF5 compression must be one of"):
        convert.convert(src, tmp_path / "o.h5part", dst_format="h5part", write_options={"compression": "lzma"})
    assert not os.path.exists(tmp_path / "o.h5part")


def test_cli_option(tmp_path, source):
    from motes.cli import main

    src, _ = source
    assert main(["convert", str(src), str(tmp_path / "o.vtkhdf"), "--h5-compression", "gzip"]) == 0
    assert main(["convert", str(src), str(tmp_path / "o.parquet"), "--h5-compression", "gzip"]) == 2
