"""What the tests need beyond motes itself, and the switch that makes it required.

A test that needs an optional dependency (a pip extra, an OS tool, a feature of a library)
asks for it here: ``h5py = need("h5py")`` returns the module, ``missing("why")`` reports
anything else that is absent. Normally that skips the test, saying what is missing. With
MOTES_REQUIRE_ALL=1 (.ci/run sets it; scripts/setup.sh installs every dependency) it fails
the test instead, and the hooks below fail every other skip too (a plain
``pytest.importorskip``, a ``skipif``, a skipped module) unless the test is marked
``@pytest.mark.allow_skip("why")``, for skips about the platform or an opt-in rather than
a missing dependency. So CI cannot go green with tests skipped. MOTES_REQUIRE_BROWSER=1 is
the older name of the switch (the browser tests had it first).

tests/conftest.py installs the hooks for every test under tests/; they are plain pytest
hooks, so ``pytest -p needs`` (with tests/ on the path) installs them elsewhere.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest

SWITCH = "MOTES_REQUIRE_ALL"
REQUIRE_ALL = os.environ.get(SWITCH) == "1" or os.environ.get("MOTES_REQUIRE_BROWSER") == "1"


def missing(reason: str) -> NoReturn:
    """Something the test needs is absent: skip, saying ``reason``; fail under the switch.
    Works in a test, a fixture or at module level (which skips or fails the module)."""
    if REQUIRE_ALL:
        pytest.fail(f"{SWITCH}=1 but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def need(module: str, install: str = "") -> ModuleType:
    """Imports ``module`` (a dotted name) and returns it; when it cannot be imported,
    ``missing`` says so, with ``install`` (what provides it) when given."""
    try:
        found = importlib.import_module(module)
        if getattr(found, "__file__", None) is None and hasattr(found, "__path__"):
            # A namespace package: a folder of the tests named like the package
            # (tests/python/yt/), found because the package itself is not installed.
            raise ImportError(f"only folders named {module} are on the path: {list(found.__path__)}")
        return found
    except ImportError as e:
        error = e
    hint = install or "scripts/setup.sh installs every test dependency"
    missing(f"{module} cannot be imported ({error}); {hint}")


# --- the hooks: under the switch, no skip passes unless the test allows it --------------------

def pytest_configure(config):
    config.addinivalue_line(
        "markers", "allow_skip(reason): this test may skip even under MOTES_REQUIRE_ALL=1 "
                   "(its skip is about the platform or an opt-in, not a missing dependency)")


def _reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _forbid(report, what: str) -> None:
    report.outcome = "failed"
    report.longrepr = (f"{SWITCH}=1 but {what} skipped: {_reason(report)}\n"
                       f"(install what it needs, or mark the test allow_skip('why') if the skip "
                       f"is about the platform or an opt-in)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if (REQUIRE_ALL and report.skipped and not hasattr(report, "wasxfail")
            and item.get_closest_marker("allow_skip") is None):
        _forbid(report, "this test")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_ALL and report.skipped:
        _forbid(report, f"{collector.nodeid or 'the collection'} (all its tests)")
