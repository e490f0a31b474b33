"""MOTES_REQUIRE_ALL=1 (tests/needs.py): no test skips for a missing dependency. A pytest run
of its own, on small test files written here, with the hooks of tests/needs.py: without the
switch every kind of skip skips; with it each one fails (need(), a plain importorskip, a
skipif, a skipped module) except a test marked allow_skip, and xfail stays xfail."""

import os
import re
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

TESTS_BODY = '''
import pytest
from needs import missing, need

def test_need():
    need("motes_no_such_module")

def test_missing():
    missing("the frobnicator is not installed")

def test_importorskip():
    pytest.importorskip("motes_no_such_module")

@pytest.fixture
def absent():
    pytest.skip("a fixture skips")

def test_fixture_skip(absent):
    pass

@pytest.mark.skipif(True, reason="a skipif")
def test_skipif():
    pass

@pytest.mark.allow_skip("about the platform")
def test_allowed():
    pytest.skip("not on this platform")

@pytest.mark.xfail(reason="known", strict=True)
def test_xfail():
    assert False

def test_passes():
    pass
'''

MODULE_BODY = '''
from needs import need
need("motes_no_such_module")

def test_never_collected():
    pass
'''


def _run(tmp_path, name, body, require):
    (tmp_path / name).write_text(body)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = {k: v for k, v in os.environ.items() if k not in ("MOTES_REQUIRE_ALL", "MOTES_REQUIRE_BROWSER")}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    if require:
        env["MOTES_REQUIRE_ALL"] = "1"
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "needs", "-p", "no:cacheprovider", "-v", "-rA",
                        "-c", str(tmp_path / "pytest.ini"), str(tmp_path / name)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    outcomes = dict(re.findall(r"^\S+::(\w+) (PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)", r.stdout, re.M))
    return r, outcomes


def test_without_the_switch_skips_skip(tmp_path):
    r, got = _run(tmp_path, "test_kinds.py", TESTS_BODY, require=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert got == {"test_need": "SKIPPED", "test_missing": "SKIPPED", "test_importorskip": "SKIPPED",
                   "test_fixture_skip": "SKIPPED", "test_skipif": "SKIPPED", "test_allowed": "SKIPPED",
                   "test_xfail": "XFAIL", "test_passes": "PASSED"}, r.stdout
    assert "motes_no_such_module cannot be imported" in r.stdout


def test_with_the_switch_every_skip_fails_unless_allowed(tmp_path):
    r, got = _run(tmp_path, "test_kinds.py", TESTS_BODY, require=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert got == {"test_need": "FAILED", "test_missing": "FAILED", "test_importorskip": "FAILED",
                   "test_fixture_skip": "ERROR", "test_skipif": "ERROR", "test_allowed": "SKIPPED",
                   "test_xfail": "XFAIL", "test_passes": "PASSED"}, r.stdout
    assert "MOTES_REQUIRE_ALL=1 but motes_no_such_module cannot be imported" in r.stdout
    assert "MOTES_REQUIRE_ALL=1 but the frobnicator is not installed" in r.stdout
    assert "MOTES_REQUIRE_ALL=1 but this test skipped: could not import 'motes_no_such_module'" in r.stdout
    assert "MOTES_REQUIRE_ALL=1 but this test skipped: a skipif" in r.stdout


def test_a_skipped_module_skips_or_fails_the_run(tmp_path):
    r, got = _run(tmp_path, "test_module.py", MODULE_BODY, require=False)
    assert r.returncode == 5 and "1 skipped" in r.stdout, r.stdout + r.stderr  # 5: no test ran
    r, got = _run(tmp_path, "test_module.py", MODULE_BODY, require=True)
    assert r.returncode == 2 and "1 error" in r.stdout, r.stdout + r.stderr  # 2: collection failed
    assert "MOTES_REQUIRE_ALL=1 but motes_no_such_module cannot be imported" in r.stdout
    # a plain importorskip at module level is caught by the collection hook
    r, got = _run(tmp_path, "test_module.py", 'import pytest\npytest.importorskip("motes_no_such_module")\n', require=True)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "MOTES_REQUIRE_ALL=1 but test_module.py (all its tests) skipped: could not import" in r.stdout


def test_the_hooks_are_installed_for_every_test_under_tests(request):
    """tests/conftest.py gives the hooks to these tests (and tests/browser, tests/install)."""
    import needs

    plugins = [p for p in request.config.pluginmanager.get_plugins()
               if getattr(p, "__file__", None) and Path(p.__file__) == TESTS / "conftest.py"]
    assert len(plugins) == 1
    for hook in ("pytest_configure", "pytest_runtest_makereport", "pytest_make_collect_report"):
        assert getattr(plugins[0], hook) is getattr(needs, hook)
