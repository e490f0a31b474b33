"""Readers of user files take any bytes: a damaged .npz, manifest or particle file is a
FormatError or UsageError naming it, never another exception or a crash (the C++ readers
have libFuzzer targets in tests/fuzz; these cover the Python readers and the bindings)."""

import io
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import motes
from motes.convert import npz

ALLOWED = (motes.FormatError, motes.UsageError)


def _valid_npz() -> bytes:
    buf = io.BytesIO()
    x = np.arange(50, dtype=np.float64)
    np.savez(buf, x=x, y=x, z=x, e=x.astype(np.float32), time=np.float64(1.5), iteration=np.int64(3))
    return buf.getvalue()


VALID = _valid_npz()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_damaged_npz(tmp_path, data):
    raw = bytearray(VALID)
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    path = tmp_path / "f.npz"
    path.write_bytes(bytes(raw))
    try:
        c = npz.contents(str(path))
        npz.step_metadata(c)
        for step in npz.read(str(path), chunk_rows=16):
            for sp in step.species.values():
                for _ in sp.chunks():
                    pass
    except ALLOWED:
        pass


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_damaged_manifest(tmp_path_factory, data):
    p = tmp_path_factory.mktemp("m") / "d.motes"
    x = np.arange(100, dtype=np.float64)
    motes.write(p, {"x": x, "y": x, "z": x}, attributes={"a": [1, {"b": "c"}]}, sync=False)
    text = bytearray((p / "manifest.json").read_bytes())
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(text) - 1))
        text[at] = data.draw(st.sampled_from(list(b'{}[],:"0123456789-.eE \\x\xff\x00')))
    (p / "manifest.json").write_bytes(bytes(text))
    try:
        ds = motes.open(p)
        ds.count()
        ds.verify()
        json.dumps(ds.attributes)
    except ALLOWED:
        pass


def _npz_with_shapes(path, shapes):
    """An .npz whose members declare these shapes over 4 float64 values each (as a damaged or
    crafted archive can: numpy's header reader accepts any integers)."""
    import zipfile

    with zipfile.ZipFile(path, "w") as zf:
        for name, shape in shapes.items():
            b = io.BytesIO()
            np.lib.format.write_array_header_1_0(b, {"descr": "<f8", "fortran_order": False, "shape": shape})
            b.write(np.arange(4.0).tobytes())
            zf.writestr(name + ".npy", b.getvalue())


@pytest.mark.parametrize("shapes", [
    {"x": (-4,), "y": (-4,), "z": (-4,)},
    {"x": (4,), "y": (4,), "z": (4,), "pos": (-4, 3)},
    {"pos": (-4, 3)},
    {"x": (4,), "y": (4,), "z": (4,), "w": (4, -1)},
    {"x": (4,), "y": (4,), "z": (4,), "__motes__": (-3,)},
])
@pytest.mark.parametrize("how", ["convert", "write"])
def test_npz_member_with_a_negative_shape_is_a_format_error(tmp_path, shapes, how):
    from motes.cli import main

    src = tmp_path / "neg.npz"
    _npz_with_shapes(src, shapes)
    member = next(n for n, s in shapes.items() if min(s) < 0)
    with pytest.raises(motes.FormatError, match=f"{member}.npy.*negative length"):
        npz.contents(str(src))
    out = tmp_path / "out.motes"
    args = ["convert", str(src), str(out)] if how == "convert" else ["write", str(out), str(src)]
    assert main(args + ["--no-progress"]) == motes.FormatError.exit_code
    assert not out.exists()
