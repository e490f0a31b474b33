"""The layers of docs/architecture.md. The C++ core's ("The layer table"): every
`#include "motes/<layer>/..."` under cpp/motes/ names the file's own layer or one below it,
and the build's layer libraries (MOTES_LAYERS in CMakeLists.txt) are the same list. The
Python package's ("The Python layer table"): every import inside python/motes, at a module's
top or in a function (not under `if TYPE_CHECKING:`), names a module of its own layer or one
below it, and the imports make no circle."""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path
from typing import Dict, List, Set, Tuple

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = re.compile(r'^\s*#\s*include\s+"motes/([a-z_]+)/', re.MULTILINE)


def layer_table() -> Dict[str, List[str]]:
    """cpp/motes/layers.txt: each layer, bottom up, and the layers it uses directly."""
    table: Dict[str, List[str]] = {}
    for line in (ROOT / "cpp" / "motes" / "layers.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, uses = line.split(":", 1)
            for used in uses.split():
                assert used in table, f"cpp/motes/layers.txt: '{name}' uses '{used}', which is not a layer before it"
            table[name.strip()] = uses.split()
    return table


def reachable(table: Dict[str, List[str]]) -> Dict[str, set]:
    """Per layer, itself and every layer it uses, directly or through another."""
    out: Dict[str, set] = {}
    for layer, uses in table.items():  # bottom up: those used are done
        out[layer] = {layer}.union(*(out[u] for u in uses))
    return out


def wrong_includes(sources: Dict[str, str], table: Dict[str, List[str]]) -> List[Tuple[str, str]]:
    """(file, included layer) for each include of a layer the file's own does not use (one
    above it, or a sibling). `sources` maps paths relative to cpp/motes/ ("query/plan.cpp")
    to their text."""
    may = reachable(table)
    bad = []
    for path, text in sources.items():
        own = path.split("/", 1)[0]
        if own == "layers.txt":
            continue
        assert own in may, f"cpp/motes/{path}: folder '{own}' is in no layer of cpp/motes/layers.txt"
        for layer in INCLUDE.findall(text):
            if layer not in may[own]:
                bad.append((path, layer))
    return bad


def sources() -> Dict[str, str]:
    base = ROOT / "cpp" / "motes"
    return {str(p.relative_to(base)): p.read_text(errors="replace")
            for p in sorted(base.rglob("*")) if p.suffix in (".cpp", ".hpp", ".h", ".in")}


def test_no_layer_includes_one_it_does_not_use():
    bad = wrong_includes(sources(), layer_table())
    assert not bad, "includes of a layer the file's own does not use (cpp/motes/layers.txt):\n" + \
        "\n".join(f"  cpp/motes/{path} includes motes/{layer}/" for path, layer in bad)


def test_the_check_catches_an_upward_or_sibling_include():
    table = layer_table()
    assert wrong_includes({"particles/reader.cpp": '#include "motes/query/engine.hpp"\n'}, table) == \
        [("particles/reader.cpp", "query")]
    assert wrong_includes({"fields/hz.cpp": '#include "motes/particles/spec.hpp"\n'}, table) == \
        [("fields/hz.cpp", "particles")]  # a sibling
    assert wrong_includes({"codec/packed.cpp": '#include "motes/io/files.hpp"\n'}, table) == [("codec/packed.cpp", "io")]
    assert wrong_includes({"query/plan.cpp": '#include "motes/particles/reader.hpp"\n'}, table) == []
    assert wrong_includes({"capi/motes.cpp": '#include "motes/codec/codec.hpp"\n'}, table) == []  # used through others
    assert wrong_includes({"core/x.hpp": '#  include "motes/nowhere/x.hpp"\n'}, table) == [("core/x.hpp", "nowhere")]


def test_the_build_reads_the_same_table():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert "file(STRINGS cpp/motes/layers.txt" in cmake, "CMakeLists.txt must read its layers from cpp/motes/layers.txt"
    for layer in layer_table():
        assert re.search(rf"^set\(MOTES_LAYER_{layer}\b", cmake, re.MULTILINE), f"CMakeLists.txt has no sources of '{layer}'"


def test_the_docs_name_the_same_layers():
    text = (ROOT / "docs" / "architecture.md").read_text()
    rows = [name for cell in re.findall(r"^\| (`[a-z_]+/`(?:, `[a-z_]+/`)*) \|", text, re.MULTILINE)
            for name in re.findall(r"`([a-z_]+)/`", cell)]
    assert rows == list(layer_table())[1:], "docs/architecture.md's table of what each layer owns must list cpp/motes/layers.txt's layers above core, in order"


# --- python/motes --------------------------------------------------------------------------

PACKAGE = ROOT / "python" / "motes"


def python_layers() -> List[List[str]]:
    """The ```python-layers block of docs/architecture.md: per layer, bottom first, its
    entries (a module relative to python/motes, "motes" the package itself, "name/" a
    package's every module)."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    found = re.findall(r"^```python-layers\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert len(found) == 1, "docs/architecture.md must hold one python-layers block"
    return [line.split(":", 1)[1].split() for line in found[0].splitlines() if line.strip()]


def layer_of(module: str, layers: List[List[str]]) -> int:
    """The layer of a module named relative to python/motes ("fields.file", "motes" for the
    package's __init__), or -1."""
    for k, entries in enumerate(layers):
        for e in entries:
            if module == e or (e.endswith("/") and (module == e[:-1] or module.startswith(e[:-1] + "."))):
                return k
    return -1


def python_modules() -> Dict[str, str]:
    """The package's modules (relative names; "motes" for its __init__) and their text."""
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = list(p.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts) or "motes"] = p.read_text()
    return out


def imports_of(module: str, text: str, known: Set[str]) -> List[str]:
    """The package's modules that `module` imports (known: every module's name, "_core"
    included), wherever the import is but under `if TYPE_CHECKING:`."""
    tree = ast.parse(text)
    hinted = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
              for n in ast.walk(node)}
    is_package = module == "motes" or f"{module}.__init__" in known or any(k.startswith(module + ".") for k in known)
    here = [] if module == "motes" else module.split(".")
    base = here if is_package else here[:-1]

    def named(dotted: str) -> str:  # the longest known prefix of a module path
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or "motes"

    found = []
    for node in ast.walk(tree):
        if id(node) in hinted:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                path = base[: len(base) - (node.level - 1)] + (node.module.split(".") if node.module else [])
            elif (node.module or "").split(".")[0] == "motes":
                path = node.module.split(".")[1:]
            else:
                continue  # another package
            mod = ".".join(path)
            for a in node.names:
                whole = f"{mod}.{a.name}" if mod else a.name
                found.append(whole if whole in known else named(mod))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "motes":
                    found.append(named(".".join(a.name.split(".")[1:])))
    return [f for f in found if f != module]


def python_violations(modules: Dict[str, str], layers: List[List[str]]):
    """(module, imported) for each import of a layer above the module's own, the modules in
    no layer (imported None), and the import graph."""
    known = set(modules) | {"_core"}
    bad, graph = [], {}
    for module, text in modules.items():
        own = layer_of(module, layers)
        if own < 0:
            bad.append((module, None))
            continue
        graph[module] = set(imports_of(module, text, known))
        for target in sorted(graph[module]):
            if layer_of(target, layers) > own or layer_of(target, layers) < 0:
                bad.append((module, target))
    return bad, graph


def test_no_python_module_imports_a_layer_above_its_own():
    bad, _ = python_violations(python_modules(), python_layers())
    assert not bad, "python/motes imports against docs/architecture.md's python-layers block:\n" + "\n".join(
        f"  {m} is in no layer" if t is None else f"  {m} imports {t}, a layer above its own" for m, t in bad)


def test_python_imports_make_no_circle():
    _, graph = python_violations(python_modules(), python_layers())
    graphlib.TopologicalSorter(graph).prepare()  # CycleError names the circle


def test_the_python_check_catches_an_upward_import():
    layers = python_layers()
    modules = {
        "table": "def to_x(self):\n    from .dataset import Dataset\n",  # a lazy import, upward
        "steps": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .dataset import Dataset\n",
        "fields.file": "from ..errors import UsageError\nfrom .model import Field\n",
        "fields.model": "import motes.dataset\n",
        "dataset": "", "errors": "", "brand_new": "",
    }
    bad, _ = python_violations(modules, layers)
    assert sorted(bad, key=str) == sorted([("table", "dataset"), ("fields.model", "dataset"), ("brand_new", None)], key=str)
    circle = {"live": "from . import plan\n", "plan": "from .live import wait_until\n"}
    _, graph = python_violations(circle, layers)
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError:
        pass
    else:
        raise AssertionError("a circle within one layer passed")
