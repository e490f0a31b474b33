"""The cache of decoded blocks outlives one open of a file: a file opened again (a viewer or
a notebook reopening a dataset) finds its blocks decoded already, and a file whose contents
changed, whether replaced or rewritten in place, is decoded afresh (never answered from the
blocks of what it held before)."""
import gc
import os
import shutil
import struct

import numpy as np
import pytest

import motes
from motes import _core, synth

N = 60_000


def _write(path, seed):
    motes.write(path, synth.vpic(N, seed=seed), sync=False)  # compressed (the default): coded blocks
    return path


def _all(path, where=None):
    ds = motes.open(path)
    got = ds.query(where)
    out = {k: np.asarray(got[k]).copy() for k in ("x", "ux", "energy")}
    del ds, got
    gc.collect()
    return out


def _same(a, b):
    return all(np.array_equal(a[k], b[k]) for k in a)


def _decodes(fn):
    before = _core.blocks_decoded()
    out = fn()
    return out, _core.blocks_decoded() - before


@pytest.fixture(autouse=True)
def _cold():
    _core.clear_block_cache()
    yield
    _core.clear_block_cache()


def test_reopening_a_file_decodes_nothing_again(tmp_path):
    path = _write(tmp_path / "a.motes", 1)
    first, decoded_first = _decodes(lambda: _all(path))
    assert decoded_first > 0
    again, decoded_again = _decodes(lambda: _all(path))
    assert decoded_again == 0
    assert _same(first, again)
    # A filtered query after reopening, too: its blocks are among those decoded.
    sub, decoded_sub = _decodes(lambda: _all(path, "energy > 2"))
    assert decoded_sub == 0
    keep = first["energy"] > 2
    assert sorted(sub["ux"].tolist()) == sorted(first["ux"][keep].tolist())


def test_a_file_replaced_at_its_path_is_decoded_afresh(tmp_path):
    a = _write(tmp_path / "a.motes", 1)
    b = _write(tmp_path / "b.motes", 2)
    old = _all(a)
    new_b = _all(b)
    shutil.rmtree(a)
    shutil.copytree(b, a)  # new files (new inodes) with other contents, at the same paths
    got, decoded = _decodes(lambda: _all(a))
    assert decoded > 0
    assert _same(got, new_b) and not _same(got, old)


def test_a_file_rewritten_in_place_is_decoded_afresh(tmp_path):
    """The same inode with other contents: the key holds the header checksum, which covers
    every section and block, so no block of the old contents is taken for the new."""
    a = _write(tmp_path / "a.motes", 1)
    b = _write(tmp_path / "b.motes", 2)
    old = _all(a)
    new_b = _all(b)
    for src, dst in ((os.path.join(dp, f), os.path.join(str(a), os.path.relpath(os.path.join(dp, f), str(b))))
                     for dp, _, fs in os.walk(b) for f in fs if not f.endswith(".lock")):
        ino = os.stat(dst).st_ino
        with open(src, "rb") as s, open(dst, "r+b") as d:  # overwrite in place: same inode
            d.truncate(0)
            d.write(s.read())
        assert os.stat(dst).st_ino == ino
    got, decoded = _decodes(lambda: _all(a))
    assert decoded > 0
    assert _same(got, new_b) and not _same(got, old)


def test_two_copies_of_a_file_are_two_files(tmp_path):
    """Identity is the file's (device, inode) with its contents: a copy is decoded on its own
    (nothing is shared by contents alone, so a crafted file cannot stand in for another)."""
    a = _write(tmp_path / "a.motes", 1)
    c = tmp_path / "c.motes"
    shutil.copytree(a, c)
    first = _all(a)
    copy, decoded = _decodes(lambda: _all(c))
    assert decoded > 0 and _same(first, copy)


def test_value_indexes_and_fields_are_kept_across_opens(tmp_path):
    """The id index (id in (...)), a tail index (a threshold in the tail) and a grid field's
    blocks: each decodes on the first open and not on the next."""
    path = tmp_path / "v.motes"
    cols = synth.vpic(N, seed=3, with_id=True)
    fields = synth.harris_fields((24, 12, 8))
    motes.write(path, cols, fields=fields, tails=["ux"], sync=False)
    ids = cols["id"][::997][:40]
    t = float(np.quantile(cols["ux"], 0.999))
    name = next(iter(fields))

    def reads():
        ds = motes.open(path)
        by_id = np.sort(np.asarray(ds.query(f"id in ({', '.join(str(int(i)) for i in ids)})", columns=["id"])["id"]))
        tail = np.sort(np.asarray(ds.query(f"ux > {t!r}", columns=["ux"])["ux"]))
        field = np.asarray(ds.field(name).read()).copy()
        del ds
        gc.collect()
        return by_id, tail, field

    (by_id, tail, field), first = _decodes(reads)
    assert first > 0
    np.testing.assert_array_equal(by_id, np.sort(ids))
    np.testing.assert_array_equal(tail, np.sort(cols["ux"][cols["ux"] > np.float32(t)]))
    np.testing.assert_array_equal(field, fields[name].array)
    (by_id2, tail2, field2), again = _decodes(reads)
    assert again == 0
    np.testing.assert_array_equal(by_id2, by_id)
    np.testing.assert_array_equal(tail2, tail)
    np.testing.assert_array_equal(field2, field)


def test_verify_reads_every_section_again_after_a_reopen(tmp_path):
    """What is kept across opens (decoded blocks, the tree, column indexes) answers queries as
    the intact file does, but `verify` checks the bytes on disk: a section damaged in place
    since an earlier open (the header, and so the key, unchanged) is found."""
    path = _write(tmp_path / "a.motes", 1)
    _all(path, "energy > 2")  # kept: the tree, the energy column's index, blocks
    step = next(os.path.join(dp, f) for dp, _, fs in os.walk(path) for f in fs if f.endswith(".mpf"))
    with open(step, "rb") as fh:  # the section table (docs/format.md 4.2, 4.3): find the nodes section (kind 2)
        raw = fh.read()
    table, count = struct.unpack_from("<QI", raw, 32)
    entries = [struct.unpack_from("<HBBIQQQ", raw, table + 32 * k) for k in range(count)]
    offset, length = next((e[4], e[5]) for e in entries if e[0] == 2)
    at = offset + length // 2
    with open(step, "r+b") as fh:  # in place: same inode, same header checksum
        fh.seek(at)
        b = fh.read(1)
        fh.seek(at)
        fh.write(bytes([b[0] ^ 0x10]))
    with pytest.raises(motes.FormatError):
        _core.File.open(step, True)
