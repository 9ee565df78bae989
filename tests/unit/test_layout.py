"""The package layout: src/ddrl has no import cycle and keeps at most eight flat modules.

Imports are read with ``ast`` (nothing is imported), at module level and inside functions,
because an import inside a function is how a cycle hides until it runs. Imports under
``if TYPE_CHECKING:`` are annotations only and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "ddrl"
MAX_FLAT_MODULES = 8


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, top_level_only: bool) -> set[str]:
    """ddrl modules that ``module`` imports (resolved to the module, not the name)."""
    found: set[str] = set()

    def target(name: str) -> str | None:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        return name or None

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child, in_function)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if top_level_only:
                return
            in_function = True
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                pkg = module.split(".")
                if not MODULES[module].name == "__init__.py":
                    pkg = pkg[:-1]
                pkg = pkg[:len(pkg) - node.level + 1]
                base = ".".join(pkg + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                     for alias in node.names]
        else:
            names = []
        for name in names:
            if name.split(".")[0] == "ddrl" and (hit := target(name)) and hit != module:
                found.add(hit)
        for child in ast.iter_child_nodes(node):
            visit(child, in_function)

    visit(tree, False)
    return found


def _graph(top_level_only: bool) -> dict[str, set[str]]:
    return {m: _imports(ast.parse(p.read_text()), m, top_level_only) for m, p in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return out


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def _parents(module: str) -> set[str]:
    """Packages whose __init__ an import of ``module`` runs first."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_no_import_cycle_between_modules_counting_imports_inside_functions():
    graph = _graph(top_level_only=False)
    # A package's __init__ importing its own submodules is how a package exposes them, not a cycle.
    graph = {m: {t for t in ts if t not in _parents(m)} for m, ts in graph.items()}
    assert _cycles(graph) == []


def test_no_import_cycle_between_packages_at_module_level():
    graph: dict[str, set[str]] = {}
    for module, targets in _graph(top_level_only=True).items():
        here = _package(module)
        graph.setdefault(here, set()).update(
            _package(t) for t in targets if _package(t) != here and _package(t) != "ddrl")
    assert _cycles(graph) == []


def test_at_most_eight_flat_modules():
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(flat) <= MAX_FLAT_MODULES, flat


def test_the_graph_reader_sees_imports_inside_functions():
    # Guards the test itself: a cycle hidden in a function must be found.
    tree = ast.parse("def f():\n    from ddrl.config.study import Study\n")
    assert _imports(tree, "ddrl.search.grid", top_level_only=False) == {"ddrl.config.study"}
    assert _imports(tree, "ddrl.search.grid", top_level_only=True) == set()
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_what_the_workflow_imports_to_parse_stays_light():
    # Every `snakemake` call imports these (rules/*.smk); pandas and matplotlib would add a
    # fixed 2-3 s to each (bench/dag.py).
    import subprocess
    import sys

    modules = ["ddrl.cluster.slurm", "ddrl.config.eval_config", "ddrl.config.search_space",
               "ddrl.config.study", "ddrl.config.preflight", "ddrl.search.tune",
               "ddrl.figures.catalog", "ddrl.runs"]
    code = (f"import sys, {', '.join(modules)}; "
            "print(sorted(m for m in ('pandas', 'matplotlib', 'torch', 'ray') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
