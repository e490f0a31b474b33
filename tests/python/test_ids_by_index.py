"""Format 2.7 (docs/format.md §4.15, feature ids-by-index): the id column is stored only as its id
index, and every read of it (whole, a box, a filter, a progressive prefix, tracking, several
parts, other id dtypes, duplicate ids) gives what numpy gives on the data written. A file whose
index rows are not a permutation is refused by name, even with every checksum right."""
import json
import math
import os
import struct

import numpy as np
import pytest

import motes
from motes import _core

from format_util import core_write_options, write_manifest

IDS_BY_INDEX = 0x80
ID_ROWS, BLOCK_TABLE = 11, 9


def cloud(n, seed=0, dtype=np.int64, ids=None):
    rng = np.random.default_rng(seed)
    c = {a: rng.random(n, dtype=np.float32) for a in "xyz"}
    c["ux"] = rng.standard_normal(n).astype(np.float32)
    c["id"] = (rng.permutation(n) if ids is None else ids).astype(dtype)
    return c


def particle_file(ds_path, step=0):
    return os.path.join(ds_path, "steps", f"{step:06d}", "particles.mpf")


def sections(data):
    table, count, entry = struct.unpack_from("<QII", data, 32)
    out = []
    for i in range(count):
        kind, storage, _, column, offset, length, checksum = struct.unpack_from("<HBBIQQQ", data, table + i * entry)
        out.append(dict(kind=kind, storage=storage, column=column, offset=offset, length=length, at=table + i * entry))
    return out


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.int32, np.uint32])
def test_every_read_of_the_id_column_equals_numpy(tmp_path, dtype):
    n = 20000
    c = cloud(n, dtype=dtype)
    if dtype in (np.int64, np.int32):
        c["id"] = (c["id"].astype(np.int64) - n // 2).astype(dtype)  # negative ids too
    else:
        c["id"] = (c["id"].astype(np.uint64) + (np.uint64(1) << np.uint64(8 * np.dtype(dtype).itemsize - 1))).astype(dtype)
    motes.write(tmp_path / "d", c, sync=False)
    ds = motes.open(tmp_path / "d")
    f = ds.file()
    assert f.version == (2, 7) and f.required_features & IDS_BY_INDEX
    data = open(particle_file(tmp_path / "d"), "rb").read()
    id_col = list(c).index("id")
    assert not [s for s in sections(data) if s["kind"] == 3 and s["column"] == id_col]  # no data section
    t = ds.query()
    assert t["id"].dtype == dtype
    row_of = {v: i for i, v in enumerate(c["id"].tolist())}
    order = np.array([row_of[v] for v in np.asarray(t["id"]).tolist()])
    assert np.array_equal(np.sort(order), np.arange(n))  # every particle once
    for name in c:
        assert np.array_equal(np.asarray(t[name]), c[name][order]), name
    box = [0.1, 0.2, 0.3, 0.5, 0.6, 0.7]
    inside = np.ones(n, bool)
    for a, name in enumerate("xyz"):
        inside &= (c[name] >= np.float32(box[a])) & (c[name] <= np.float32(box[3 + a]))
    assert np.array_equal(np.sort(np.asarray(ds.query(box=box)["id"])), np.sort(c["id"][inside]))
    mid = c["id"][np.argsort(c["id"])[n // 3]]
    where = ds.query(where=f"id < {int(mid)} and ux > 0.5", columns=["id", "ux"])
    want = (c["id"] < mid) & (c["ux"] > np.float32(0.5))
    assert np.array_equal(np.sort(np.asarray(where["id"])), np.sort(c["id"][want]))
    # a progressive read: the prefixes union to every id, once
    seen = np.concatenate([np.asarray(ds.query(quality=(lo, hi), columns=["id"])["id"])
                           for lo, hi in ((0.0, 0.1), (0.1, 0.5), (0.5, 1.0))])
    assert np.array_equal(np.sort(seen), np.sort(c["id"]))
    assert ds.verify()["files"] == 1


def test_tracking_needs_no_id_values(tmp_path):
    steps = 3
    with motes.Writer(tmp_path / "d", sync=False) as w:
        for s in range(steps):
            w.write_step(s, cloud(30000, seed=s), time=float(s))
    ds = motes.open(tmp_path / "d")
    ids = np.array([5, 17, 29999, 12345], dtype=np.int64)
    tr = ds.track(ids, columns=["x", "id"])
    for s in range(steps):
        c = cloud(30000, seed=s)
        rows = np.argsort(c["id"])[ids]
        assert np.array_equal(np.asarray(tr.values["x"][s]), c["x"][rows].astype(np.float64))
        assert np.array_equal(np.asarray(tr.values["id"][s]), ids.astype(np.float64))


def test_duplicate_ids_read_back_as_written(tmp_path):
    c = cloud(9000, seed=3, ids=np.random.default_rng(1).integers(0, 500, 9000))
    motes.write(tmp_path / "d", c, sync=False)
    t = motes.open(tmp_path / "d").query(columns=["x", "id"])
    got = sorted(zip(np.asarray(t["x"]).tolist(), np.asarray(t["id"]).tolist()))
    assert got == sorted(zip(c["x"].tolist(), c["id"].tolist()))


def test_parallel_parts_each_store_their_ids_by_index(tmp_path):
    """Several part files (a parallel write's), each with its own index of a subset of the ids."""
    from mpi4py import MPI

    n = 40000
    c = cloud(n, seed=7)
    motes.write(tmp_path / "d", c, comm=MPI.COMM_SELF, target_bytes=200_000, sync=False)
    ds = motes.open(tmp_path / "d")
    parts = ds.source(0, "particles")
    assert parts.part_count > 1
    for k in range(parts.part_count):
        assert parts.part(k).required_features & IDS_BY_INDEX
    t = ds.query(columns=["x", "id"])
    assert np.array_equal(np.sort(np.asarray(t["id"])), np.sort(c["id"]))
    row_of = np.argsort(c["id"])[np.asarray(t["id"])]
    assert np.array_equal(np.asarray(t["x"]), c["x"][row_of])


def test_ids_and_their_index_cost_about_one_permutation(tmp_path):
    """Random ids in a spatial order: the pair costs at most 1.1 x log2(N!) bits (docs/format.md
    §4.15), where the column and the index each paid for the permutation before 2.7. (Rows are
    packed in ceil(log2 N) bits: N a power of two is where that costs least over the entropy.)"""
    n = 1 << 20
    motes.write(tmp_path / "d", cloud(n, seed=11), sync=False, tails=False)
    data = open(particle_file(tmp_path / "d"), "rb").read()
    secs = sections(data)
    index = [i for i, s in enumerate(secs) if s["kind"] in (10, 11, 12)]
    tables = [s for s in secs if s["kind"] == BLOCK_TABLE and s["column"] in index]
    stored = sum(secs[i]["length"] for i in index) + sum(s["length"] for s in tables)
    entropy_bits = math.lgamma(n + 1) / math.log(2)
    assert stored * 8 <= 1.1 * entropy_bits, (stored * 8 / n, entropy_bits / n)
    assert not [s for s in secs if s["kind"] == 3 and s["column"] == 4]  # the id column has no data


def test_the_old_layout_is_still_written_on_request_and_read(tmp_path, monkeypatch):
    core_write_options(monkeypatch, ids_by_index=False)
    c = cloud(5000)
    motes.write(tmp_path / "d", c, sync=False)
    f = motes.open(tmp_path / "d").file()
    assert not f.required_features & IDS_BY_INDEX and f.version < (2, 7)
    t = motes.open(tmp_path / "d").query(columns=["x", "id"])
    assert np.array_equal(np.asarray(t["x"]), c["x"][np.argsort(c["id"])[np.asarray(t["id"])]])


def _xxh3(b):
    import xxhash

    return xxhash.xxh3_64_intdigest(b)


def test_rows_that_are_not_a_permutation_are_refused_with_every_checksum_right(tmp_path):
    """Block 1 of the rows made a copy of block 0 (its own checksum right, so every block, section
    and header checksum is right after the edit, made from the spec): the column they store
    cannot be read, and the reader says so instead of answering with ids of the wrong rows."""
    n = 8192  # two blocks of 4096 rows
    motes.write(tmp_path / "d", cloud(n, seed=2), sync=False, tails=False, covering=False)
    path = particle_file(tmp_path / "d")
    data = bytearray(open(path, "rb").read())
    secs = sections(data)
    rows_at = next(i for i, s in enumerate(secs) if s["kind"] == ID_ROWS)
    table = next(s for s in secs if s["kind"] == BLOCK_TABLE and s["column"] == rows_at)
    assert table["storage"] == 0 and table["length"] == 2 * 24  # raw, two entries (docs/format.md §4.11)
    data[table["offset"] + 24:table["offset"] + 48] = data[table["offset"]:table["offset"] + 24]
    struct.pack_into("<Q", data, table["at"] + 24, _xxh3(bytes(data[table["offset"]:table["offset"] + table["length"]])))
    t_off, count, entry = struct.unpack_from("<QII", data, 32)
    struct.pack_into("<Q", data, 48, _xxh3(bytes(data[t_off:t_off + count * entry])))
    struct.pack_into("<Q", data, 248, _xxh3(bytes(data[:248])))
    open(path, "wb").write(bytes(data))
    # the manifest names the file by its header checksum (docs/format.md §3.3.3): the new one
    manifest = json.load(open(tmp_path / "d" / "manifest.json"))
    manifest["steps"][0]["species"]["particles"]["checksum"] = f"{_xxh3(bytes(data[:248])):016x}"
    write_manifest(tmp_path / "d", manifest)
    _core.clear_block_cache()
    ds = motes.open(tmp_path / "d")
    ds.query(columns=["x"])  # what does not need ids still reads
    with pytest.raises(motes.FormatError, match="not a permutation of the positions"):
        ds.query(columns=["id"])
    with pytest.raises(motes.FormatError):
        ds.verify()
