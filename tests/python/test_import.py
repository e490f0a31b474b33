"""`import motes` stays light: numpy and the core only. The synthetic generators
(motes.synth) load on first use; plotting, table, HDF5 and openPMD libraries only in the
commands and converters that need them."""

import os
import subprocess
import sys

HEAVY = ("motes.synth", "matplotlib", "pandas", "pyarrow", "h5py", "openpmd_api", "tqdm", "motes.server", "starlette",
         "uvicorn", "zstandard", "anyio")


def run(code):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_import_motes_loads_no_heavy_module():
    out = run(f"import sys, motes; print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    assert out.strip() == "[]"


def test_the_cli_loads_the_server_only_to_serve():
    """`motes --help` reads the server's limits (its options) without Starlette or uvicorn."""
    out = run("import sys, motes.cli\n"
              "motes.cli.main(['--help'])\n"
              "print(sorted(m for m in ('starlette', 'uvicorn', 'zstandard', 'motes.server.application')"
              " if m in sys.modules))")
    assert out.strip().splitlines()[-1] == "[]"


def test_synth_is_there_when_asked_for():
    out = run("import sys, motes\n"
              "g = motes.synth.generate('uniform', 10, seed=1)\n"
              "print(len(g['x']), 'motes.synth' in sys.modules, 'synth' in dir(motes))\n"
              "from motes import synth\n"
              "print(synth is motes.synth)")
    assert out.split() == ["10", "True", "True", "True"]
    out = run("from motes import synth; print(sorted(synth.GENERATORS)[:1])")
    assert out.startswith("[")
    out = run("import motes\n"
              "try:\n"
              "    motes.nothing_here\n"
              "except AttributeError as e:\n"
              "    print(e)")
    assert out.strip() == "module 'motes' has no attribute 'nothing_here'"
