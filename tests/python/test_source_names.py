"""No Python file of the repository defines, at module level, a function or class under the
name of something it imports there: the definition silently replaces the import, and every
call meant for the import reaches the definition (bench/gen_pysco.py and gen_fbpic.py once
defined their own save_npz over benchlib's and failed only after a simulation's run). The
files that need a simulation code cannot run here; this reads them all."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parents[2]


def hidden_imports(source: str, name: str) -> List[str]:
    """'file:line: name hides the import at line k' for each module-level def or class whose
    name a module-level import binds."""
    tree = ast.parse(source, name)
    imported = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                imported[(alias.asname or alias.name).split(".")[0]] = node.lineno
    return [f"{name}:{node.lineno}: {node.name} hides the import at line {imported[node.name]}"
            for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in imported]


def python_files() -> List[Path]:
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode == 0 and listed.stdout.strip():
        return [ROOT / p for p in listed.stdout.split()]
    return [p for p in ROOT.rglob("*.py") if ".venv" not in p.parts and "node_modules" not in p.parts]


def test_the_check_finds_a_definition_over_an_import():
    src = "from benchlib import save_npz\n\ndef save_npz(a):\n    return save_npz(a, x=1)\n"
    assert hidden_imports(src, "gen.py") == ["gen.py:3: save_npz hides the import at line 1"]
    assert hidden_imports("import numpy as np\n\ndef numpy():\n    pass\n", "ok.py") == []


def test_no_module_level_definition_hides_an_import():
    files = python_files()
    assert len(files) > 100  # the repository's, not an empty listing
    bad = [line for f in files for line in hidden_imports(f.read_text(), str(f.relative_to(ROOT)))]
    assert bad == []
