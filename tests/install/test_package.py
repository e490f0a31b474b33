"""The Python package as users build and install it, viewer app included
(cmake/motes_viewer.cmake). Slow: the install compiles the extension (about 3 minutes on
2 cores); scripts/test.sh runs this file as a stage of its own:
    .venv/bin/python -m pytest -q tests/install

From a clean copy of this tree (its files but the ignored ones: no built app, no
node_modules, no build/), as a fresh clone has:
  - with no Node on PATH, `pip wheel .` and `python -m build --sdist` fail at once, saying
    what to install and how to do without the app;
  - with Node, `python -m build --sdist` builds the app and the sdist carries it;
  - with no Node on PATH, the sdist builds a wheel that holds the app once, and the server
    installed from it into a fresh virtual environment serves the app at /. (`pip install
    motes-<version>.tar.gz` is these two steps: the wheel is built here separately to look
    into it.)
Builds use the running environment's scikit-build-core and nanobind (--no-build-isolation,
as the test extra installs them) and nothing from the network but npm's packages.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import urllib.request
import zipfile
from pathlib import Path

import pytest

from needs import missing, need

ROOT = Path(__file__).resolve().parents[2]
APP_INDEX = "python/motes/server/app/index.html"
NODE_NAMES = {"node", "nodejs", "npm", "npx", "corepack"}
NO_NODE_MESSAGE = "needs Node.js >= 18 and npm on PATH"


def run(cmd, *, env, cwd=None, timeout=1800, check=True):
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} exited with {r.returncode}:\n{r.stdout[-6000:]}\n{r.stderr[-6000:]}")
    return r


def base_env() -> dict:
    """The environment without anything that would import this tree's python/ instead."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


@pytest.fixture(scope="module")
def tools():
    need("build", "pip install build (the test extra has it)")
    need("scikit_build_core", "pip install scikit-build-core (the test extra has it)")
    need("nanobind", "pip install nanobind (the test extra has it)")
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        missing("the package tests copy a git checkout (git ls-files)")
    if shutil.which("node") is None or shutil.which("npm") is None:
        missing("Node.js and npm are not on PATH (scripts/setup.sh installs them)")


@pytest.fixture(scope="module")
def no_node_env(tools, tmp_path_factory):
    """PATH with every program of today's PATH but Node's (symbolic links in one folder:
    node lives in /usr/bin with the compilers on Debian)."""
    shim = tmp_path_factory.mktemp("bin-without-node")
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            exe = os.path.join(folder, name)
            link = shim / name
            if name in NODE_NAMES or link.is_symlink() or not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
                continue
            link.symlink_to(exe)
    env = dict(base_env(), PATH=str(shim))
    assert shutil.which("node", path=env["PATH"]) is None and shutil.which("cmake", path=env["PATH"])
    return env


@pytest.fixture(scope="module")
def clean_copy(tools, tmp_path_factory):
    """This tree's files as a clone has them: tracked and untracked but not ignored ones."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    dest = tmp_path_factory.mktemp("clone") / "motes"
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():  # (a file deleted but not yet committed is listed too)
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    assert not (dest / APP_INDEX).exists() and not (dest / "viewer" / "node_modules").exists()
    return dest


def test_without_node_a_build_without_the_app_fails_saying_what_to_install(clean_copy, no_node_env, tmp_path):
    for cmd in ([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                 "-w", tmp_path / "wheels", clean_copy],
                [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", tmp_path / "dist", clean_copy]):
        r = run(cmd, env=no_node_env, timeout=600, check=False)
        out = r.stdout + r.stderr
        assert r.returncode != 0, out[-3000:]
        text = " ".join(out.split())  # CMake wraps its messages
        assert "the viewer app (python/motes/server/app/index.html) is not built" in text, out[-3000:]
        assert NO_NODE_MESSAGE in text and "apt-get install nodejs npm" in text, out[-3000:]
        assert "MOTES_VIEWER=OFF" in text and "sdist" in text, out[-3000:]
        assert "Building CXX object" not in out  # it failed before compiling anything
    assert not (tmp_path / "wheels").exists() or not list((tmp_path / "wheels").iterdir())
    assert not (tmp_path / "dist").exists() or not list((tmp_path / "dist").iterdir())


# --- the rule of cmake/motes_viewer.cmake, on its own: a configuration for an sdist stops after it

@pytest.fixture
def viewer_tree(clean_copy, tmp_path):
    """What the rule reads (CMakeLists.txt, cmake/, viewer/) and an app older than every file
    of viewer/ (a test may make it newer)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for part in ("CMakeLists.txt", "cmake", "viewer"):
        (shutil.copytree if (clean_copy / part).is_dir() else shutil.copy2)(clean_copy / part, tree / part)
    index = tree / APP_INDEX
    index.parent.mkdir(parents=True)
    index.write_text("<!doctype html><title>an older build</title>")
    oldest = min(f.stat().st_mtime for f in (tree / "viewer").rglob("*") if f.is_file())
    os.utime(index, (oldest - 60, oldest - 60))
    return tree


def configure(tree, env, *defines):
    r = run(["cmake", "-S", tree, "-B", tree / "build", "-DMOTES_BUILD_PYTHON=ON", "-DSKBUILD_STATE=sdist",
             *defines], env=env, timeout=300, check=False)
    return r.returncode, " ".join((r.stdout + r.stderr).split())


def test_an_up_to_date_app_is_used_as_it_is_without_node(viewer_tree, no_node_env):
    index = viewer_tree / APP_INDEX
    os.utime(index)  # now: newer than every file of viewer/
    before = index.read_bytes()
    status, out = configure(viewer_tree, no_node_env)
    assert status == 0 and "motes: the viewer app is up to date" in out, out
    assert index.read_bytes() == before


def test_an_older_app_without_node_is_kept_with_a_warning(viewer_tree, no_node_env):
    status, out = configure(viewer_tree, no_node_env)
    assert status == 0, out
    assert "the viewer app in python/motes/server/app is older than" in out and "no node on PATH" in out, out
    assert "an older build" in (viewer_tree / APP_INDEX).read_text()


def test_an_unpacked_sdist_uses_the_app_it_carries(viewer_tree, no_node_env):
    (viewer_tree / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: motes\n")
    status, out = configure(viewer_tree, no_node_env)
    assert status == 0 and "motes: the viewer app as the sdist carries it" in out and "older" not in out, out


def test_motes_viewer_off_builds_no_app_and_needs_no_node(viewer_tree, no_node_env):
    (viewer_tree / APP_INDEX).unlink()
    status, out = configure(viewer_tree, no_node_env, "-DMOTES_VIEWER=OFF")
    assert status == 0 and "MOTES_VIEWER=OFF: no viewer app" in out, out
    assert not (viewer_tree / APP_INDEX).exists()
    status, out = configure(viewer_tree, no_node_env, "-DMOTES_VIEWER=ON")
    assert status != 0 and NO_NODE_MESSAGE in out, out


# --- the sdist, built with Node from the clean copy, installed without Node

@pytest.fixture(scope="module")
def sdist(clean_copy, tmp_path_factory):
    """`python -m build --sdist` of the clean copy, with Node: the build hook builds the app."""
    out = tmp_path_factory.mktemp("dist")
    r = run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", out, clean_copy], env=base_env())
    assert "motes: building the viewer app (not built)" in r.stdout, r.stdout[-3000:]
    (path,) = out.glob("motes-*.tar.gz")
    return path


def test_the_sdist_carries_the_built_app(sdist, clean_copy):
    built = (clean_copy / APP_INDEX).read_bytes()  # what the hook built in the copy
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
        top = names[0].split("/")[0]
        assert names.count(f"{top}/{APP_INDEX}") == 1
        assert tar.extractfile(f"{top}/{APP_INDEX}").read() == built
        assets = re.findall(r'(?:src|href)="\./(assets/[^"]+)"', built.decode())
        assert assets and all(f"{top}/python/motes/server/app/{a}" in names for a in assets), assets
        assert f"{top}/PKG-INFO" in names
        assert not [n for n in names if "/node_modules/" in n or n.endswith(".so")]


def test_the_sdist_installs_without_node_and_serves_the_app(sdist, no_node_env, tmp_path):
    # A fresh virtual environment whose dependencies (numpy, starlette, ...: --no-index) and
    # build tools come from this one through a .pth file, after its own site-packages.
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], env=base_env(), timeout=300)
    vpy = venv / "bin" / "python"
    site = Path(run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    env=base_env()).stdout.strip())
    here = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "_motes_test_deps.pth").write_text("\n".join(sorted(here)) + "\n")

    wheels = tmp_path / "wheels"
    # Compiled without optimisation (a build type of no flags) and without MPI: this checks
    # what the package carries and that it serves, not its speed (2m49 s instead of 4m10 s).
    run([vpy, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", wheels,
         "--config-settings=cmake.build-type=PackageTest", "--config-settings=cmake.define.MOTES_WITH_MPI=OFF",
         sdist], env=no_node_env)
    (wheel,) = wheels.glob("motes-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert names.count("motes/server/app/index.html") == 1, "the app must be in the wheel once"
        assert len(names) == len(set(names))
        with tarfile.open(sdist) as tar:
            top = tar.getnames()[0].split("/")[0]
            assert z.read("motes/server/app/index.html") == tar.extractfile(f"{top}/{APP_INDEX}").read()
    # --ignore-installed: this environment may have motes installed (visible through the .pth)
    run([vpy, "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed", wheel], env=no_node_env)

    r = run([vpy, "-c", "import motes, motes.server.config as c; print(motes.__file__); print(c.APP_DIR)"],
            env=no_node_env, cwd=tmp_path)
    module, app_dir = r.stdout.split()
    assert Path(module).is_relative_to(venv) and Path(app_dir).is_relative_to(venv), r.stdout
    assert (Path(app_dir) / "index.html").is_file()

    data = tmp_path / "tiny.motes"
    run([vpy, "-c", "import sys, motes, motes.synth as s; motes.write(sys.argv[1], s.vpic(2000, seed=1), sync=False)",
         data], env=no_node_env, cwd=tmp_path)
    server = subprocess.Popen([venv / "bin" / "motes", "serve", data, "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=dict(no_node_env, PYTHONUNBUFFERED="1"))
    try:
        url = None
        for line in server.stdout:
            if line.startswith("open "):
                url = line.split()[1].split("?")[0].rstrip("/")
                break
        assert url, f"motes serve did not start: {server.stderr.read()}"
        page = urllib.request.urlopen(url + "/", timeout=30).read()
        assert page == (Path(app_dir) / "index.html").read_bytes()
        asset = re.search(r'src="\./(assets/[^"]+\.js)"', page.decode()).group(1)
        with urllib.request.urlopen(f"{url}/{asset}", timeout=30) as response:
            assert response.status == 200 and response.read() == (Path(app_dir) / asset).read_bytes()
    finally:
        server.terminate()
        server.wait(timeout=30)
