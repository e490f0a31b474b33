"""IDX version 6 (motes.convert.idx) against OpenVisus itself: OpenVisus reads what we write
bit-exactly at every resolution, we read what OpenVisus writes, our own round trips at
every level and random boxes, clear errors, and damaged headers and block files that never
raise anything but FormatError / UsageError / NotFoundError.

The OpenVisus tests skip only when OpenVisusNoGui cannot be imported (the fields and test
extras install it)."""

import os
import re
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from needs import need

import motes
from motes import _core
from motes.convert import idx
from motes.convert.idx import blockfile, header, parse

DTYPES = [np.float32, np.float64, np.int32, np.uint8]
ALLOWED = (motes.FormatError, motes.UsageError, motes.NotFoundError)


@pytest.fixture(scope="module")
def ov():
    return need("OpenVisus", "pip install 'motes[fields]' (OpenVisusNoGui)")


def _values(rng, shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -(1 << 30)), min(info.max, 1 << 30), size=shape, endpoint=True).astype(dt)


def _shape(rng, ndim):
    # non-powers of two mostly, size-1 axes sometimes
    return tuple(int(rng.choice([1, 2, 3, 5, 6, 7, 9, 12, 17, 23, 31, 33])) for _ in range(ndim))


def _case(seed):
    """A random dataset: shape, fields (some vector), time steps, compression, layout, blocks."""
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(1, 4))
    shape = _shape(rng, ndim)
    if np.prod(shape) < 4:
        shape = shape[:-1] + (shape[-1] + 5,)
    nfields = int(rng.integers(1, 4))
    times = sorted(int(t) for t in rng.choice(40, size=int(rng.integers(1, 4)), replace=False))
    kinds = []
    for k in range(nfields):
        dt = DTYPES[int(rng.integers(len(DTYPES)))] if k else DTYPES[seed % len(DTYPES)]
        comps = 3 if rng.random() < 0.25 else 1
        kinds.append((f"f{k}", dt, comps))
    steps = []
    for t in times:
        fields = {}
        for name, dt, comps in kinds:
            a = _values(rng, shape + ((comps,) if comps > 1 else ()), dt)
            fields[name] = motes.Field(a, components=("x", "y", "z") if comps == 3 else None,
                                       spacing=(0.5,) * ndim)
        steps.append((t, fields))
    opts = dict(compression=("raw", "zip", "lz4")[seed % 3], layout=("row-major", "hzorder")[(seed // 3) % 2],
                bits_per_block=int(rng.integers(1, 9)), blocks_per_file=int(rng.integers(1, 9)))
    return steps, opts


def _bits(bitmask):
    return [bitmask[1:].count(str(a)) for a in range(3)]


def _strided(a, ndim, sb):
    """a[::2**s_z, ::2**s_y, ::2**s_x] for a (z, y, x)[-ndim:] array (plus components)."""
    return a[tuple(slice(None, None, 1 << sb[ndim - 1 - i]) for i in range(ndim))]


def _ov_read(ds, field, time, resolution):
    return np.asarray(ds.read(field=field, time=time, max_resolution=resolution))


# -- OpenVisus reads ours -------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(24))
def test_openvisus_reads_ours_bit_exactly(tmp_path, ov, seed):
    steps, opts = _case(seed)
    path = tmp_path / "ours.idx"
    h = idx.write(path, steps, **opts)
    ds = ov.LoadDataset(str(path))
    ndim = steps[0][1]["f0"].ndim
    assert ds.getMaxResolution() == len(h.bitmask) - 1
    assert list(ds.getTimesteps()) == [t for t, _ in steps]
    bits = _bits(h.bitmask)
    maxh = len(h.bitmask) - 1
    for t, fields in steps:
        for name, f in fields.items():
            got = _ov_read(ds, name, t, maxh)
            assert got.dtype == f.array.dtype and got.shape == f.array.shape
            assert got.tobytes() == f.array.tobytes(), (name, t)
            for k in range(1, max(bits) + 1):
                r = maxh - sum(min(k, b) for b in bits)
                assert _core.hz_resolution_of_level(h.bitmask, k) == r
                want = _strided(f.array, ndim, (k, k, k))
                got = _ov_read(ds, name, t, r)
                assert got.shape == want.shape and got.tobytes() == want.tobytes(), (name, t, k)


@pytest.mark.parametrize("layout", ["row-major", "hzorder"])
def test_openvisus_reads_every_resolution_of_ours(tmp_path, ov, layout):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((5, 11, 9)).astype(np.float32)
    path = tmp_path / "all.idx"
    h = idx.write(path, [(0, {"a": motes.Field(a)})], layout=layout, bits_per_block=3, compression="zip")
    ds = ov.LoadDataset(str(path))
    for r in range(len(h.bitmask)):
        sb = _core.hz_stride_bits(h.bitmask, r)
        assert np.array_equal(_ov_read(ds, "a", 0, r), _strided(a, 3, sb)), r


def test_openvisus_sees_the_physic_box(tmp_path, ov):
    a = np.zeros((4, 5, 6), np.float32)
    path = tmp_path / "geo.idx"
    idx.write(path, [(0, {"a": motes.Field(a, origin=(1, 2, 3), spacing=(0.5, 0.25, 2))})])
    box = ov.LoadDataset(str(path)).db.getDatasetBounds().toAxisAlignedBox()
    assert [box.p1[i] for i in range(3)] == [1, 2, 3]
    assert [box.p2[i] for i in range(3)] == [1 + 6 * 0.5, 2 + 5 * 0.25, 3 + 4 * 2]


# -- we read OpenVisus' ---------------------------------------------------------------------

def _ov_write(ov, path, arrays, times, bits_per_block, compression, layout, blocks_per_file=None):
    """An IDX dataset written by OpenVisus: arrays {name: (z, y, x) array}."""
    first = next(iter(arrays.values()))
    ndim = first.ndim
    dims = list(reversed(first.shape))
    fields = [ov.Field(n, header.dtype_name(a.dtype), "hzorder" if layout == "hzorder" else "row_major")
              for n, a in arrays.items()]
    kw = dict(url=str(path), dims=dims, fields=fields, bitsperblock=bits_per_block)
    if len(times) > 1 or times[0] != 0:
        kw["time"] = [min(times), max(times), "time_%04d/"]
    if blocks_per_file:
        kw["blocksperfile"] = blocks_per_file
    db = ov.CreateIdx(**kw)
    assert db.getPointDim() == ndim
    for t in times:
        for n, a in arrays.items():
            db.write(a + t, field=n, time=t) if a.dtype.kind == "f" else db.write(a, field=n, time=t)
    if compression != "raw":
        db.compressDataset([compression])
    return db


@pytest.mark.parametrize("seed", range(12))
def test_we_read_openvisus_bit_exactly(tmp_path, ov, seed):
    rng = np.random.default_rng(100 + seed)
    ndim = 2 + seed % 2
    shape = tuple(int(rng.integers(2, 30)) for _ in range(ndim))
    arrays = {f"v{k}": _values(rng, shape, DTYPES[(seed + k) % len(DTYPES)]) for k in range(1 + seed % 3)}
    times = [0] if seed % 4 == 0 else [2, 3, 4]
    compression = ("raw", "zip", "lz4")[seed % 3]
    layout = ("row-major", "hzorder")[(seed // 2) % 2]
    path = tmp_path / "theirs.idx"
    _ov_write(ov, path, arrays, times, int(rng.integers(2, 9)), compression, layout,
              blocks_per_file=int(rng.integers(1, 5)) if seed % 2 else None)
    with idx.read(path) as ds:
        assert ds.dims == tuple(reversed(shape)) and list(ds.times) == times and set(ds.fields) == set(arrays)
        for name, a in arrays.items():
            assert ds.fields[name].layout == layout and ds.fields[name].dtype == a.dtype
            for t in times:
                want = a + t if a.dtype.kind == "f" else a
                assert ds.read(name, t).tobytes() == want.tobytes()
                for r in range(ds.maxh + 1):
                    sb = _core.hz_stride_bits(ds.bitmask, r)
                    assert np.array_equal(ds.read(name, t, resolution=r), _strided(want, ndim, sb)), r
                for _ in range(6):
                    lo = [int(rng.integers(0, n)) for n in reversed(shape)]
                    hi = [int(rng.integers(l + 1, n + 1)) for l, n in zip(lo, reversed(shape))]
                    r = int(rng.integers(0, ds.maxh + 1))
                    sb = _core.hz_stride_bits(ds.bitmask, r)
                    full = _strided(want, ndim, sb)
                    sel = tuple(slice(-(-lo[a] >> sb[a]), -(-hi[a] >> sb[a])) for a in reversed(range(ndim)))
                    got = ds.read(name, t, box=(lo, hi), resolution=r)
                    assert np.array_equal(got, full[sel]), (lo, hi, r)


def test_we_read_openvisus_vector_fields_and_geometry(tmp_path, ov):
    rng = np.random.default_rng(3)
    v = rng.standard_normal((6, 7, 9, 3)).astype(np.float32)
    path = tmp_path / "vec.idx"
    db = ov.CreateIdx(url=str(path), dims=[9, 7, 6], fields=[ov.Field("E", "float32[3]")], bitsperblock=5,
                      physic_box=ov.BoxNd.fromString("1 10 -2 5 0 3"))
    db.write(v, field="E")
    db.compressDataset(["zip"])
    with idx.read(path) as ds:
        assert ds.fields["E"].components == 3
        assert np.array_equal(ds.read("E"), v)
        assert np.array_equal(ds.read("E", level=1), v[::2, ::2, ::2])
        f = ds.to_field("E")
        assert f.components == ("0", "1", "2") and f.origin == (1.0, -2.0, 0.0)
        assert f.spacing == (1.0, 1.0, 0.5)


# -- our round trips ------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(24))
def test_round_trip_every_level_and_random_boxes(tmp_path, seed):
    steps, opts = _case(1000 + seed)
    path = tmp_path / "rt.idx"
    h = idx.write(path, steps, **opts)
    rng = np.random.default_rng(seed)
    with idx.read(path) as ds:
        assert ds.times == tuple(t for t, _ in steps) and ds.bitmask == h.bitmask
        for t, fields in steps:
            for name, f in fields.items():
                nd = f.ndim
                assert ds.read(name, t).tobytes() == f.array.tobytes()
                for k in range(ds.levels + 2):
                    assert np.array_equal(ds.read(name, t, level=k), _strided(f.array, nd, (k, k, k))), k
                for _ in range(5):
                    lo = [int(rng.integers(0, n)) for n in f.dims]
                    hi = [int(rng.integers(l + 1, n + 1)) for l, n in zip(lo, f.dims)]
                    k = int(rng.integers(0, ds.levels + 1))
                    s = 1 << k
                    sel = tuple(slice(-(-lo[a] // s), -(-hi[a] // s)) for a in reversed(range(nd)))
                    got = ds.read(name, t, box=(lo, hi), level=k)
                    assert np.array_equal(got, _strided(f.array, nd, (k, k, k))[sel]), (lo, hi, k)
                back = ds.to_field(name, t)
                assert back.array.tobytes() == f.array.tobytes()
                assert (back.origin, back.spacing, back.components) == (f.origin, f.spacing, f.components)


def test_steps_may_list_their_fields_in_any_order(tmp_path):
    a, b = np.arange(12, dtype=np.float32).reshape(3, 4), np.arange(12, dtype=np.uint8).reshape(3, 4)
    idx.write(tmp_path / "o.idx", [(0, {"a": motes.Field(a), "b": motes.Field(b)}),
                                   (1, {"b": motes.Field(b + 1), "a": motes.Field(a + 1)})])
    with idx.read(tmp_path / "o.idx") as ds:
        assert np.array_equal(ds.read("a", 1), a + 1) and np.array_equal(ds.read("b", 1), b + 1)


def test_round_trip_geometry_units_and_attributes(tmp_path):
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    coords = (np.array([0, 1, 3, 7.5]), np.array([-1, 0, 2.0]), np.array([5, 6.0]))
    steps = [(7, {"r": motes.Field(a, coords=coords, centering="cell", unit="kg/m^3", attributes={"n": 3})})]
    idx.write(tmp_path / "g.idx", steps)
    f = idx.read(tmp_path / "g.idx").to_field("r", 7)
    assert f.centering == "cell" and f.unit == "kg/m^3" and f.attributes == {"n": 3}
    assert all(np.array_equal(c, d) for c, d in zip(f.coords, coords))
    text = (tmp_path / "g.idx").read_text()
    assert "(physic_box)\n0.0 12.0 -1.0 4.0 5.0 7.0\n" in text


def test_blocks_outside_the_grid_are_missing(tmp_path):
    a = np.ones((3, 5, 9), np.float32)  # padded to 4 x 8 x 16
    h = idx.write(tmp_path / "m.idx", [(0, {"a": motes.Field(a)})], bits_per_block=3, blocks_per_file=4,
                  compression="raw")
    order = _core.HzOrder(h.bitmask)
    present = 0
    for b in range(h.total_blocks):
        first, _, _ = order.block_lattice(3, b)
        inside = first[0] < 9 and first[1] < 5 and first[2] < 3
        name = tmp_path / h.block_filename(0, b)
        if not name.exists():
            assert not inside
            continue
        bf = blockfile.BlockFile(str(name), 1, 4)
        offset, size, flags = bf.header(0, h.block_position(b))
        bf.close()
        assert (offset != 0 and size == 8 * 4 and flags == 0x10) == inside, b
        present += inside
    assert 0 < present < h.total_blocks


def test_files_names_and_header_text(tmp_path):
    a = np.zeros((2, 2, 300), np.uint8)
    h = idx.write(tmp_path / "n.idx", [(3, {"a": motes.Field(a)}), (5, {"a": motes.Field(a)})], bits_per_block=1,
                  blocks_per_file=2, compression="lz4", layout="hzorder")
    text = (tmp_path / "n.idx").read_text()
    assert text.startswith("(version)\n6\n(box)\n0 299 0 1 0 1\n(fields)\n")
    assert "a uint8 default_compression(lz4) default_layout(hzorder) default_value(0)" in text
    assert "(time)\ntime_%04d/ (3,3,1) (5,5,1)\n" in text
    assert "(filename_template)\n./n/%04x.bin\n" in text
    assert header.block_filename("./n/%04x.bin", "time_%04d/", 5, 0x12) == "./n/time_0005/0012.bin"
    # OpenVisus' GetFilenameV56: extra bits go to extra folders of the leftmost width
    assert header.block_filename("./n/%02x/%04x.bin", "", 0, 0x123456) == "./n/12/3456.bin"
    assert header.block_filename("./n/%02x/%04x.bin", "", 0, 0x7123456) == "./n/07/12/3456.bin"
    assert header.block_filename("./all.bin", "t%d/", 9, 77) == "./all.bin"
    assert os.path.exists(tmp_path / "n" / "time_0005" / "0000.bin")


def test_zip_level_and_compressions_round_trip(tmp_path):
    a = np.random.default_rng(0).integers(0, 4, size=(9, 10, 11)).astype(np.int32)
    sizes = {}
    for c in ("raw", "zip", "lz4"):
        idx.write(tmp_path / f"{c}.idx", [(0, {"a": motes.Field(a)})], compression=c, bits_per_block=8)
        sizes[c] = sum(p.stat().st_size for p in (tmp_path / c).rglob("*.bin"))
        assert np.array_equal(idx.read(tmp_path / f"{c}.idx").read("a"), a)
    assert sizes["zip"] < sizes["raw"] and sizes["lz4"] < sizes["raw"]


def test_docs_example_runs(tmp_path, monkeypatch):
    doc = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "convert-idx.md")
    with open(doc) as f:
        code = "\n".join(re.findall(r"```python\n(.*?)```", f.read(), re.S))
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/convert-idx.md", "exec"), {})
    assert (tmp_path / "run" / "time_0020" / "0000.bin").exists()


# -- errors -------------------------------------------------------------------------------------

def test_usage_errors(tmp_path):
    a = motes.Field(np.zeros((3, 4), np.float32))
    p = tmp_path / "u.idx"
    bad = [
        dict(steps=[(0, {"a": a})], compression="zfp"),
        dict(steps=[(0, {"a": a})], layout="columns"),
        dict(steps=[(0, {"a": a})], bits_per_block=0),
        dict(steps=[(0, {"a": a})], blocks_per_file=0),
        dict(steps=[(0, {"a b": a})]),
        dict(steps=[(0, {"a": a}), (0, {"a": a})]),
        dict(steps=[(-1, {"a": a})]),
        dict(steps=[(0, {"a": a}), (1, {"a": motes.Field(np.zeros((3, 5), np.float32))})]),
        dict(steps=[(0, {"a": a}), (1, {"a": motes.Field(np.zeros((3, 4), np.float64))})]),
        dict(steps=[(0, {"a": a}), (1, {"b": a})]),
        dict(steps=[(0, {"a": a, "b": motes.Field(np.zeros((3, 4), np.float32), spacing=(2, 2))})]),
        dict(steps=[]),
        dict(steps=[(0, {})]),
    ]
    for kw in bad:
        steps = kw.pop("steps")
        with pytest.raises(motes.UsageError):
            idx.write(p, steps, **kw)
        assert not p.exists() and not (tmp_path / "u").exists()
        assert [x for x in os.listdir(tmp_path) if x.startswith(".motes-convert-")] == []
    with pytest.raises(motes.UsageError, match="ends in .idx"):
        idx.write(tmp_path / "u.txt", [(0, {"a": a})])
    idx.write(p, [(0, {"a": a})])
    with pytest.raises(motes.UsageError, match="exists"):
        idx.write(p, [(0, {"a": a})])
    idx.write(p, [(1, {"a": a})], overwrite=True)
    (tmp_path / "other.idx").write_text("not idx")
    with pytest.raises(motes.UsageError, match="not an IDX header"):
        idx.write(tmp_path / "other.idx", [(0, {"a": a})], overwrite=True)
    ds = idx.read(p)
    assert ds.times == (1,)
    for kw in [dict(field="nope"), dict(time=0), dict(box=((0, 0), (5, 3))), dict(box=((1, 1), (1, 2))),
               dict(level=-1), dict(resolution=99), dict(box=(0, 1))]:
        with pytest.raises(motes.UsageError):
            ds.read(**{"field": "a", **kw})
    with pytest.raises(motes.NotFoundError):
        idx.read(tmp_path / "missing.idx")


def _dataset(tmp_path, **kw):
    rng = np.random.default_rng(1)
    steps = [(t, {"a": motes.Field(rng.standard_normal((5, 6, 7)).astype(np.float32)),
                  "b": motes.Field(rng.integers(0, 9, (5, 6, 7, 3)).astype(np.int32), components="xyz")})
             for t in (0, 1)]
    path = tmp_path / "d.idx"
    idx.write(path, steps, bits_per_block=4, blocks_per_file=8, overwrite=True, **kw)
    return path


def _read_all(path):
    with idx.read(path) as ds:
        for name in ds.fields:
            for t in ds.times[:3]:
                for k in (0, 1, 2):
                    ds.read(name, t, level=k)
                ds.to_field(name, t)


@pytest.mark.parametrize("text, where", [
    ("(version)\n5\n", r"line 1 \(version\)"),
    ("(bits)\nV01x\n", r"line \d+ \(bits\)"),
    ("(box)\n0 6 0 5 0 99\n", r"line \d+ \(box\)"),
    ("(box)\n0 6 0 five 0 4\n", r"\(box\)"),
    ("(fields)\na float33\n", r"\(fields\)"),
    ("(bitsperblock)\nsixteen\n", r"\(bitsperblock\)"),
    ("(time)\n0 x time_%04d/\n", r"\(time\)"),
    ("(time)\ntime_%s/ (0,1,1)\n", r"\(time\)"),
    ("(filename_template)\n./d/%4x.bin\n", r"\(filename_template\)"),
    ("(motes)\n{not json\n", r"\(motes\)"),
    ("(arco)\n1024\n", r"\(arco\)"),
])
def test_damaged_header_names_the_line(tmp_path, text, where):
    path = _dataset(tmp_path)
    good = path.read_text()
    key = text.split("\n")[0]
    lines = good.split("\n")
    if key in lines:
        i = lines.index(key)
        lines[i + 1] = text.split("\n")[1]
        damaged = "\n".join(lines)
    else:
        damaged = good + text
    path.write_text(damaged)
    with pytest.raises(motes.FormatError, match=where) as e:
        _read_all(path)
    assert str(path) in str(e.value)


def test_damaged_block_file_names_the_file_and_block(tmp_path):
    path = _dataset(tmp_path)
    name = tmp_path / "d" / "time_0001" / "0000.bin"
    raw = bytearray(name.read_bytes())
    table = np.frombuffer(bytes(raw[40:40 + 2 * 8 * 40]), dtype=">u4").reshape(2, 8, 10).copy()
    table[0, 3, 4] += 1000000  # size past the end of the file
    raw[40:40 + table.nbytes] = table.tobytes()
    name.write_bytes(bytes(raw))
    with pytest.raises(motes.FormatError, match=re.escape(str(name)) + ".*block 3 of field 'a' at time 1"):
        _read_all(path)
    name.write_bytes(bytes(raw[:100]))
    with pytest.raises(motes.FormatError, match="shorter than"):
        _read_all(path)
    name.unlink()
    with pytest.raises(motes.NotFoundError, match=re.escape(str(name))):
        _read_all(path)


# -- fuzz ---------------------------------------------------------------------------------------

_PRISTINE = {}


def _fresh(factory, compression, layout="row-major"):
    """A fresh copy of a small dataset (built once per compression and layout)."""
    key = (compression, layout)
    if key not in _PRISTINE:
        _PRISTINE[key] = _dataset(factory.mktemp("pristine"), compression=compression, layout=layout).parent
    d = factory.mktemp("fuzz")
    shutil.copytree(_PRISTINE[key], d, dirs_exist_ok=True)
    return d / "d.idx"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzz_damaged_header(tmp_path_factory, data):
    path = _fresh(tmp_path_factory, data.draw(st.sampled_from(["raw", "zip", "lz4"])))
    text = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(text) - 1))
        text[at] = data.draw(st.sampled_from(list(b"()+#%[]V0123456789 -.x\n\x00\xff")))
    if data.draw(st.booleans()):
        text = text[: data.draw(st.integers(0, len(text)))]
    path.write_bytes(bytes(text))
    try:
        _read_all(path)
    except ALLOWED:
        pass


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzz_damaged_block_file(tmp_path_factory, data):
    path = _fresh(tmp_path_factory, data.draw(st.sampled_from(["raw", "zip", "lz4"])),
                  data.draw(st.sampled_from(["row-major", "hzorder"])))
    files = sorted((path.parent / "d").rglob("*.bin"))
    name = files[data.draw(st.integers(0, len(files) - 1))]
    raw = bytearray(name.read_bytes())
    for _ in range(data.draw(st.integers(1, 10))):
        # mostly the header table, where offsets, sizes and flags are
        hi = len(raw) - 1 if data.draw(st.booleans()) else min(len(raw) - 1, 40 + 2 * 8 * 40)
        raw[data.draw(st.integers(0, hi))] = data.draw(st.integers(0, 255))
    if data.draw(st.integers(0, 4)) == 0:
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    name.write_bytes(bytes(raw))
    try:
        _read_all(path)
    except ALLOWED:
        pass


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("()+#%[]*V0123456789 -.xdfileatmpvrsionbxz_\n")), max_size=400))
def test_fuzz_header_parser(text):
    try:
        h = parse.parse("(version)\n6\n" + text, "h.idx")
    except ALLOWED:
        return
    assert h.ndim >= 1 and h.fields and h.bits_per_block >= 1 and h.blocks_per_file >= 1


# -- paths a header names: confined to the dataset's folder, regular files only -------------------

def _with_template(path, template):
    text = path.read_text()
    path.write_text(re.sub(r"\(filename_template\)\n[^\n]*\n", f"(filename_template)\n{template}\n", text))


def _outside_copy(tmp_path):
    """A dataset, and a second one of the same layout but other values in another folder
    (what a crafted header would read into the output)."""
    inside = tmp_path / "in"
    other = tmp_path / "other"
    inside.mkdir()
    other.mkdir()
    path = _dataset(inside)
    idx.write(other / "d.idx", [(t, {"a": motes.Field(np.full((5, 6, 7), 7.0, np.float32)),
                                     "b": motes.Field(np.full((5, 6, 7, 3), 7, np.int32), components="xyz")})
                                for t in (0, 1)], bits_per_block=4, blocks_per_file=8)
    return path, other


@pytest.mark.parametrize("how", ["absolute", "dotdot", "current-file-directory"])
def test_a_template_out_of_the_folder_is_refused(tmp_path, how):
    path, other = _outside_copy(tmp_path)
    template = {"absolute": f"{other}/d/%04x.bin", "dotdot": "./../other/d/%04x.bin",
                "current-file-directory": "$(CurrentFileDirectory)/../other/d/%04x.bin"}[how]
    _with_template(path, template)
    with pytest.raises(motes.FormatError, match=r"\(filename_template\).*outside the folder") as e:
        _read_all(path)
    assert str(path) in str(e.value)
    out = tmp_path / "out.motes"
    with pytest.raises(motes.FormatError, match="outside the folder"):
        motes.convert.convert(path, out)
    assert not out.exists()


@pytest.mark.parametrize("what", ["block file", "time folder", "data folder"])
def test_links_out_of_the_folder_are_refused(tmp_path, what):
    path, other = _outside_copy(tmp_path)
    data = path.parent / "d"
    target = {"block file": data / "time_0001" / "0000.bin", "time folder": data / "time_0001",
              "data folder": data}[what]
    source = other / target.relative_to(path.parent)
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    target.symlink_to(source)
    with pytest.raises(motes.FormatError, match=f"resolves to {re.escape(str(source))}.*outside the folder"):
        _read_all(path)
    with pytest.raises(motes.FormatError, match="outside the folder"):
        motes.convert.convert(path, tmp_path / "out.motes")


def test_links_within_the_folder_are_followed(tmp_path):
    path = _dataset(tmp_path)
    want = idx.read(path).read("a", 1)
    data = path.parent / "d"
    (data / "time_0001").rename(path.parent / "moved")
    (data / "time_0001").symlink_to(path.parent / "moved")  # still under the dataset's folder
    assert np.array_equal(idx.read(path).read("a", 1), want)


def _read_in_child(path, timeout=30):
    """Reads every field in a child process: a hang (opening a FIFO) must not take the run with it."""
    import subprocess
    import sys

    code = ("import sys, motes\nfrom motes.convert import idx\n"
            "try:\n"
            "    with idx.read(sys.argv[1]) as ds:\n"
            "        [ds.read(n, t) for n in ds.fields for t in ds.times]\n"
            "    print('read')\n"
            "except (motes.FormatError, motes.UsageError) as e:\n"
            "    print(type(e).__name__, e)\n")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_a_fifo_in_place_of_a_block_file_or_the_header_is_refused_without_hanging(tmp_path):
    path = _dataset(tmp_path)
    block = path.parent / "d" / "time_0001" / "0000.bin"
    block.unlink()
    os.mkfifo(block)
    out = _read_in_child(path)
    assert out.startswith("FormatError") and str(block) in out and "a FIFO" in out, out
    fifo = tmp_path / "fifo.idx"
    os.mkfifo(fifo)
    out = _read_in_child(fifo)
    assert out.startswith("FormatError") and str(fifo) in out and "a FIFO" in out, out
