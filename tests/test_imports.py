"""The package's import graph: no cycles, and every core module imports on its own.

The graph is read from the source (every ``import`` statement, at module level and inside
functions alike; ``if TYPE_CHECKING:`` blocks left out, since they never run), so an import
hidden inside a function to dodge a cycle is still an edge of that cycle.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import gpulite

ROOT = Path(gpulite.__file__).parent
CORE = ("gpulite.runtime", "gpulite.tensor", "gpulite.engine", "gpulite.instrument", "gpulite.interpreter",
        "gpulite.measure", "gpulite.environment", "gpulite.errors", "gpulite.backends.base",
        "gpulite.backends.registry", "gpulite.backends.kernels", "gpulite.ops", "gpulite.graph", "gpulite.model")


# Cycles outside the core that other work removes (issue 10): the CLI's split into commands/,
# and the quantized conv kernels sharing the float ones' geometry helpers both ways. The test
# fails on any other cycle, and on one of these once it is gone (then delete it here).
KNOWN: list[list[str]] = []


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The gpulite modules ``name`` imports anywhere in its body (``TYPE_CHECKING`` blocks aside)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in modules:
                    out.add(sub)
                elif target in modules:
                    out.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    out.discard(name)
    return out


def import_graph() -> dict[str, set[str]]:
    """gpulite module -> the gpulite modules it imports."""
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def _is_core(name: str) -> bool:
    return any(name == c or name.startswith(c + ".") for c in CORE)


def test_the_graph_reader_sees_imports_inside_functions_and_relative_ones():
    graph = import_graph()
    assert "gpulite.backends.cpu" in graph["gpulite.backends.registry"]  # inside a factory function
    assert "gpulite.backends.cpu.context" in graph["gpulite.backends.cpu.eager"]  # relative
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_in_the_package():
    found = cycles(import_graph())
    core = [c for c in found if any(_is_core(m) for m in c)]
    assert not core, f"import cycles through the runtime core: {core}"
    assert [c for c in found if c not in KNOWN] == [], "new import cycles"
    assert [c for c in KNOWN if c not in found] == [], "a known cycle is gone: delete it from KNOWN"


def test_tensor_is_a_leaf():
    """tensor.py imports nothing of gpulite but errors (TF.js: tensor.ts knows no engine)."""
    assert import_graph()["gpulite.tensor"] <= {"gpulite.errors"}


def test_the_registry_calls_nothing_above_it():
    above = {"gpulite.runtime", "gpulite.engine", "gpulite.interpreter", "gpulite.instrument", "gpulite.tensor"}
    graph = import_graph()
    reach, todo = set(), ["gpulite.backends.registry"]
    while todo:
        for m in graph[todo.pop()]:
            if m not in reach:
                reach.add(m)
                todo.append(m)
    assert not reach & above and not any(m.startswith("gpulite.ops") for m in reach), sorted(reach & above)


def _alone() -> list[str]:
    """Every core module and every package: each is imported first in its own interpreter."""
    return sorted(m for m, p in _modules().items() if _is_core(m) or p.name == "__init__.py")


@pytest.mark.parametrize("module", _alone())
def test_module_imports_alone(module):
    code = f"import importlib, sys; importlib.import_module({module!r}); print('ok')"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", f"import {module} alone failed:\n{r.stderr[-2000:]}"
