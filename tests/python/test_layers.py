"""The C++ core's layers (docs/architecture.md, "The layer table"): every
`#include "motes/<layer>/..."` under cpp/motes/ names the file's own layer or one below it,
and the build's layer libraries (MOTES_LAYERS in CMakeLists.txt) are the same list."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = re.compile(r'^\s*#\s*include\s+"motes/([a-z_]+)/', re.MULTILINE)


def layer_order() -> List[str]:
    """The line `core < io < ...` of docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    found = re.findall(r"^`([a-z_]+(?: < [a-z_]+)+)`$", text, re.MULTILINE)
    assert len(found) == 1, f"docs/architecture.md must hold one layer line, found {found}"
    return found[0].split(" < ")


def upward_includes(sources: Dict[str, str], order: List[str]) -> List[Tuple[str, str]]:
    """(file, included layer) for each include of a layer above the file's own.
    `sources` maps paths relative to cpp/motes/ ("query/plan.cpp") to their text."""
    rank = {layer: k for k, layer in enumerate(order)}
    bad = []
    for path, text in sources.items():
        own = path.split("/", 1)[0]
        assert own in rank, f"cpp/motes/{path}: folder '{own}' is in no layer of docs/architecture.md"
        for layer in INCLUDE.findall(text):
            if layer not in rank:
                bad.append((path, layer))  # no such layer
            elif rank[layer] > rank[own]:
                bad.append((path, layer))
    return bad


def sources() -> Dict[str, str]:
    base = ROOT / "cpp" / "motes"
    return {str(p.relative_to(base)): p.read_text(errors="replace")
            for p in sorted(base.rglob("*")) if p.suffix in (".cpp", ".hpp", ".h", ".in")}


def test_no_layer_includes_one_above_it():
    bad = upward_includes(sources(), layer_order())
    assert not bad, "includes of a layer above the file's own (docs/architecture.md, the layer table):\n" + \
        "\n".join(f"  cpp/motes/{path} includes motes/{layer}/" for path, layer in bad)


def test_the_check_catches_an_upward_include():
    order = layer_order()
    assert upward_includes({"particles/reader.cpp": '#include "motes/query/engine.hpp"\n'}, order) == \
        [("particles/reader.cpp", "query")]
    assert upward_includes({"query/plan.cpp": '#include "motes/particles/reader.hpp"\n'}, order) == []
    assert upward_includes({"core/x.hpp": '#  include "motes/nowhere/x.hpp"\n'}, order) == [("core/x.hpp", "nowhere")]


def test_the_build_has_the_same_layers():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    m = re.search(r"set\(MOTES_LAYERS([^)]*)\)", cmake)
    assert m, "CMakeLists.txt must set MOTES_LAYERS (one library per layer)"
    assert m.group(1).split() == layer_order()
