"""Hostile but valid input: a decimal-comma locale, expressions and attributes nested or
chained far beyond what anyone writes. Each must give the right answer or a clear error,
never a hang, a crash or a stack overflow."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import motes
from format_util import reseal

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)
LOCALE = "de_DE.UTF-8"  # decimal comma; scripts/setup.sh generates it


def _run(code, timeout=60, env=None):
    """Python code in a child process (a hang or a crash must not take the test run with it)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def test_decimal_comma_locale_does_not_change_parsing_or_printing(tmp_path):
    p = tmp_path / "loc.motes"
    code = f"""
        import locale, json, numpy as np, motes
        from motes.cli import main
        locale.setlocale(locale.LC_ALL, {LOCALE!r})
        assert locale.localeconv()["decimal_point"] == ","
        x = np.linspace(0, 1, 1001)
        motes.write({str(p)!r}, {{"x": x, "y": x, "z": x}}, attributes={{"dt": 0.25}}, sync=False)
        ds = motes.open({str(p)!r})
        print(json.dumps({{
            "expr": motes.parse_expression("x > 0.5 and y <= 1.5e-1"),
            "count": ds.count("x > 0.5"),
            "box": ds.count(box=(0.25, 0, 0, 0.75, 1, 1)),
            "attrs": ds.step().attributes,
            "time": ds.times[0],
        }}))
        assert main(["query", {str(p)!r}, "--where", "x > 0.995", "--columns", "x", "--limit", "2"]) == 0
        try:
            ds.count(box=(1, 0, 0, 0.5, 1, 1))
        except motes.UsageError as e:
            print(e)
        """
    r = _run(code, env={"LC_ALL": LOCALE})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    out = json.loads(lines[0])
    assert out["expr"] == "((x > 0.5) and (y <= 0.15))"
    x = np.linspace(0, 1, 1001)
    assert out["count"] == int(np.sum(x > 0.5))
    assert out["box"] == int(np.sum((x >= 0.25) & (x <= 0.75)))
    assert out["attrs"] == {"dt": 0.25} and out["time"] == 0.0
    assert "0.996" in r.stdout and "0,996" not in r.stdout  # the CLI prints with a decimal point
    assert "[1, 0.5]" in lines[-1]  # numbers in messages too
    # What was written under the comma locale reads back the same in the C locale.
    assert motes.open(p).step().attributes == {"dt": 0.25}


def test_long_left_deep_expression_is_a_clear_error():
    # Within the 64 KiB limit, 32,000 terms: a tree 32,000 deep overflowed the stack.
    r = _run("""
        import motes
        for text in ["x" + "+x" * 32000 + " > 1", " and ".join(["x > 1"] * 6000), "-" * 30000 + "x > 1"]:
            try:
                motes.parse_expression(text)
                print("accepted")
            except motes.UsageError as e:
                print("UsageError", str(e)[-120:])
        """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("UsageError") for line in lines), r.stdout
    assert "too deep" in lines[0] and "too deep" in lines[1] and "nested too deeply" in lines[2]


def test_expressions_up_to_the_limit_still_work(tmp_path):
    x = np.arange(100, dtype=np.float64)
    motes.write(tmp_path / "d.motes", {"x": x, "y": x, "z": x}, **SMALL)
    ds = motes.open(tmp_path / "d.motes")
    terms = 400
    assert ds.count(" + ".join(["x"] * terms) + f" > {terms * 49.5}") == 50
    assert ds.count("(" * 40 + "x > 49.5" + ")" * 40) == 50


def test_hex_and_malformed_numbers_are_refused():
    for text, needle in [("x > 0x10", "malformed number"), ("x > 1.5.2", "malformed number"),
                         ("x > 1e", "malformed number"), ("x > 1e999", "out of range")]:
        with pytest.raises(motes.UsageError, match=needle):
            motes.parse_expression(text)


def test_attributes_nested_too_deeply_are_refused_on_write(tmp_path):
    deep = {}
    node = deep
    for _ in range(100):
        node["a"] = {}
        node = node["a"]
    x = np.zeros(10)
    with pytest.raises(motes.UsageError, match="nested"):
        motes.write(tmp_path / "d.motes", {"x": x, "y": x, "z": x}, attributes=deep, **SMALL)
    very_deep = [[]]
    for _ in range(100_000):
        very_deep = [very_deep]
    with pytest.raises(motes.UsageError, match="nested"):
        motes.write(tmp_path / "d.motes", {"x": x, "y": x, "z": x}, attributes={"v": very_deep}, **SMALL)
    motes.write(tmp_path / "d.motes", {"x": x, "y": x, "z": x}, attributes={"ok": [[[[1]]]]}, **SMALL)


def test_manifest_nested_100000_levels_is_a_format_error(tmp_path):
    p = tmp_path / "d.motes"
    x = np.zeros(10)
    motes.write(p, {"x": x, "y": x, "z": x}, **SMALL)
    text = (p / "manifest.json").read_text()
    deep = "[" * 100_000 + "]" * 100_000
    edited = text.replace('"attributes": {}', '"attributes": {"deep": ' + deep + "}", 1)
    (p / "manifest.json").write_bytes(reseal(edited.encode()))  # its checksum right: the nesting is refused
    r = _run(f"""
        import motes
        from motes.cli import main
        try:
            motes.open({str(p)!r})
        except motes.FormatError as e:
            print("FormatError", e)
        print(main(["info", {str(p)!r}]), main(["verify", {str(p)!r}]))
        """)
    assert r.returncode == 0, r.stderr  # no crash (a stack overflow kills the process)
    assert "FormatError" in r.stdout and "nested more than" in r.stdout
    assert r.stdout.strip().endswith("1 1")
    assert "nested more than" in r.stderr and "Traceback" not in r.stderr
