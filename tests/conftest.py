"""Every test under tests/: a skip fails under MOTES_REQUIRE_ALL=1 unless the test is marked
allow_skip (the hooks and the helpers ``need``/``missing`` are in tests/needs.py)."""

from needs import pytest_configure, pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401
