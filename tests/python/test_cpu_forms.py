"""The loops the writer compiles twice (core/cpu.hpp: the node bitmaps' bins, the predictors'
words), portable and with AVX2, write the same bytes: the same steps written in two processes,
one with MOTES_NO_AVX2 set, give identical particle files."""
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import motes
    from motes import synth
    cols = synth.vpic(120_000, seed=3, with_id=True)
    rng = np.random.default_rng(4)
    cols["w"] = rng.normal(size=120_000)                        # float64, crossing zero
    cols["k"] = rng.integers(-50, 50, 120_000).astype(np.int32)  # integers
    cols["t"] = np.where(rng.random(120_000) < 0.01, np.nan, cols["energy"]).astype(np.float32)  # NaN
    motes.write(sys.argv[1], cols, sync=False)
    motes.write(sys.argv[1] + "_bounded", {a: cols[a] for a in ("x", "y", "z", "ux")}, sync=False,
                error_bounds={"ux": 1e-3})                     # the grid predictors
""")


def files(root):
    out = {}
    for base, _, names in os.walk(root):
        for name in names:
            if name.endswith(".mpf"):
                path = os.path.join(base, name)
                out[os.path.relpath(path, root)] = open(path, "rb").read()
    return out


def test_portable_and_avx2_forms_write_the_same_bytes(tmp_path):
    written = {}
    for form, extra in (("avx2", {}), ("portable", {"MOTES_NO_AVX2": "1"})):
        env = {k: v for k, v in os.environ.items() if k != "MOTES_NO_AVX2"}
        env.update(extra)
        root = tmp_path / form
        root.mkdir()
        subprocess.run([sys.executable, "-c", SCRIPT, str(root / "d.motes")], check=True, env=env)
        written[form] = files(root)
    assert len(written["avx2"]) == 2
    assert written["avx2"] == written["portable"]
