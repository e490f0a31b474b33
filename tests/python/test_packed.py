"""Packed words (docs/format.md §4.12.2): columns whose blocks hold them are read a word per
row where few rows of a block are wanted — tracking, id lookups, scattered selections — with
no block decoded, and the answers equal numpy's on the data written."""
import numpy as np
import pytest

import motes
from motes import _core, synth


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    cols = synth.vpic(300_000, seed=5, with_id=True)
    path = tmp_path_factory.mktemp("packed") / "p.motes"
    motes.write(path, cols, sync=False)
    ds = motes.open(path)
    codecs = {c["name"]: c["codec"] for c in ds.file(0).columns}
    packed = [n for n, c in codecs.items() if c.endswith("+packed") and not c.startswith("quantile")]
    assert {"x", "y", "z"} <= set(packed), codecs  # positions in a treelet: frames of reference
    return cols, ds, packed


def decoded(fn):
    """fn() with the cache of decoded blocks emptied first, and the blocks it decoded."""
    _core.clear_block_cache()
    before = _core.blocks_decoded()
    out = fn()
    return out, _core.blocks_decoded() - before


def test_tracking_reads_packed_columns_where_they_lie(written):
    cols, ds, packed = written
    ids = np.random.default_rng(1).choice(cols["id"], 500, replace=False)
    tr, blocks = decoded(lambda: ds.track(ids, columns=packed))
    order = np.argsort(cols["id"])
    rows = order[np.searchsorted(cols["id"], ids, sorter=order)]
    for name in packed:
        assert np.array_equal(tr.values[name][0], cols[name][rows]), name
    assert blocks == 0  # the id index's keys and rows are packed too


def test_scattered_rows_are_read_a_word_each_and_dense_ones_decoded(written):
    cols, ds, packed = written
    ids = np.random.default_rng(2).choice(cols["id"], 300, replace=False)
    where = "id in (" + ", ".join(str(int(i)) for i in ids) + ")"
    t, blocks = decoded(lambda: ds.query(where, columns=packed))
    mask = np.isin(cols["id"], ids)
    got, want = np.lexsort([np.asarray(t[n]) for n in packed]), np.lexsort([cols[n][mask] for n in packed])
    for name in packed:
        assert np.array_equal(np.asarray(t[name])[got], cols[name][mask][want]), name
    assert blocks == 0  # the rows found through the id index, their values read where they lie
    # Most rows of every block: decoded whole, same answers.
    t, blocks = decoded(lambda: ds.query("energy > 0", columns=packed))
    assert blocks > 0 and len(t) == np.count_nonzero(cols["energy"] > 0)
    assert np.array_equal(np.sort(np.asarray(t["x"])), np.sort(cols["x"][cols["energy"] > 0]))


def test_a_damaged_packed_block_is_named_on_a_gather(written, tmp_path):
    cols, ds, packed = written
    import shutil
    copy = tmp_path / "d.motes"
    shutil.copytree(ds.path, copy)
    f = motes.open(copy).file(0)
    path = f.path
    data = bytearray(open(path, "rb").read())
    # A byte in the middle of the bulk data (inside some coded block), flipped.
    at = 4096 + (f.sizes["data_bytes"] // 2)
    data[at] ^= 0x40
    open(path, "wb").write(bytes(data))
    d = motes.open(copy)
    with pytest.raises(motes.FormatError, match="checksum mismatch"):
        _core.clear_block_cache()
        for name in [c.name for c in d.schema()]:
            d.track(cols["id"][::101], columns=[name])
            d.query(columns=[name])
