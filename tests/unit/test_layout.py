"""The package layout: src/ddrl's packages stand on floors, and keeps at most eight flat modules.

Imports are read with ``ast`` (nothing is imported), every one of them: at module level,
inside functions and under ``if TYPE_CHECKING:``. An import inside a function is how a cycle
hides until it runs, and one under TYPE_CHECKING still says which package knows the other.

The rules:

- no import cycle between modules (a package's ``__init__`` importing its own submodules is
  how it exposes them, not a cycle);
- no import cycle between packages (``ddrl.<name>``; a flat module is a package of its own):
  the strongly connected components of the package graph are single packages, so every
  package stands on a floor above the packages it imports;
- no private name (a leading underscore) imported from another package: what one package
  offers another is public;
- no old path kept as an alias: every ddrl module the workflow (rules, Snakefile, scripts)
  and bench/ import is one in src, so a module that moves takes its callers with it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
PACKAGE = SRC / "ddrl"
MAX_FLAT_MODULES = 8
# Callers outside src: the workflow's rule files and scripts, and the benchmarks.
CALLERS = ["workflow/Snakefile", "workflow/rules/*.smk", "workflow/scripts/*.py", "bench/*.py"]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imported(node: ast.AST, module: str, is_package: bool) -> list[tuple[str, str | None]]:
    """``(full dotted target, imported name or None)`` of one import statement."""
    if isinstance(node, ast.Import):
        return [(alias.name, None) for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:  # relative import
        pkg = module.split(".")
        if not is_package:
            pkg = pkg[:-1]
        pkg = pkg[:len(pkg) - node.level + 1]
        base = ".".join(pkg + ([base] if base else []))
    return [(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base, alias.name)
            for alias in node.names]


def _target(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports_with_names(tree: ast.AST, module: str,
                        is_package: bool = False) -> list[tuple[str, str | None]]:
    """Every ddrl import of ``module``, anywhere in its tree: ``(target module, name)``."""
    found = []
    for node in ast.walk(tree):
        for name, imported in _imported(node, module, is_package):
            if name.split(".")[0] == "ddrl" and (hit := _target(name)) and hit != module:
                found.append((hit, imported))
    return found


def _imports(tree: ast.AST, module: str, is_package: bool = False) -> set[str]:
    """ddrl modules that ``module`` imports (resolved to the module, not the name)."""
    return {target for target, _ in _imports_with_names(tree, module, is_package)}


def _parse(module: str) -> ast.AST:
    return ast.parse(MODULES[module].read_text())


def _graph() -> dict[str, set[str]]:
    """Module -> the modules it imports."""
    return {m: _imports(_parse(m), m, MODULES[m].name == "__init__.py") for m in MODULES}


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


def _package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        here = _package(module)
        packages.setdefault(here, set()).update(
            _package(t) for t in targets if _package(t) not in (here, "ddrl"))
    return packages


def _floors(packages: dict[str, set[str]]) -> dict[str, int]:
    """Each package's floor: one above the highest package it imports (0: imports none)."""
    floor: dict[str, int] = {}

    def of(p: str) -> int:
        if p not in floor:
            floor[p] = 0  # a cycle stops here; the cycle test names it
            floor[p] = 1 + max((of(q) for q in packages.get(p, ())), default=-1)
        return floor[p]

    for p in packages:
        of(p)
    return floor


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_import_cycle_between_modules_counting_every_import():
    graph = _graph()
    # A package's __init__ importing its own submodules is how a package exposes them, not a cycle.
    graph = {m: {t for t in ts if t not in _parents(m)} for m, ts in graph.items()}
    assert _cycles(graph) == []


def test_no_import_cycle_between_packages_counting_every_import():
    packages = _package_graph(_graph())
    floors = _floors(packages)
    by_floor = sorted(packages, key=lambda p: (floors[p], p))
    assert _cycles(packages) == [], "floors: " + ", ".join(f"{p}={floors[p]}" for p in by_floor)


def test_no_private_name_is_imported_from_another_package():
    crossing = []
    for module in MODULES:
        for target, name in _imports_with_names(_parse(module), module,
                                                MODULES[module].name == "__init__.py"):
            if _package(target) == _package(module):
                continue
            path = target.split(".") + ([name] if name else [])
            if any(_private(part) for part in path[1:]):
                crossing.append(f"{module} imports {'.'.join(path)}")
    assert crossing == []


# `from ddrl.x import y` / `import ddrl.x` at the start of a line, in Python or Snakemake
# files (a .smk file is not Python, so its imports are read by pattern, not by ``ast``).
CALLER_IMPORT = re.compile(r"^\s*(?:from\s+(ddrl(?:\.\w+)*)\s+import\b|import\s+(ddrl(?:\.\w+)*))",
                           re.M)


def _caller_imports(text: str) -> list[str]:
    return [m.group(1) or m.group(2) for m in CALLER_IMPORT.finditer(text)]


def test_callers_outside_src_import_only_modules_in_src():
    # No shim: a module that moved is imported from where it lives now, by every caller.
    files = sorted({p for pattern in CALLERS for p in REPO.glob(pattern)})
    assert any(p.suffix == ".smk" for p in files) and any(p.parent.name == "bench" for p in files)
    missing = [f"{p.relative_to(REPO)} imports {name}" for p in files
               for name in _caller_imports(p.read_text()) if name not in MODULES]
    assert missing == []
    # Guards the pattern itself.
    assert _caller_imports("    from ddrl.study.study import Study\nimport ddrl.search.tune as t\n"
                           "x = 'from ddrl.nothing import y'\n") == ["ddrl.study.study",
                                                                     "ddrl.search.tune"]


def test_at_most_eight_flat_modules():
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(flat) <= MAX_FLAT_MODULES, flat


def test_the_graph_reader_sees_imports_in_functions_and_under_type_checking():
    # Guards the test itself: a cycle hidden in a function or under TYPE_CHECKING must be found.
    tree = ast.parse("def f():\n    from ddrl.study.study import Study\n")
    assert _imports(tree, "ddrl.search.grid") == {"ddrl.study.study"}
    tree = ast.parse("from typing import TYPE_CHECKING\n"
                     "if TYPE_CHECKING:\n    from ddrl.study.search_space import Search\n")
    assert _imports(tree, "ddrl.cluster.slurm") == {"ddrl.study.search_space"}
    tree = ast.parse("def f():\n    from ddrl.training.train import _budget_done, train_run\n")
    assert _imports_with_names(tree, "ddrl.search.tune") == [
        ("ddrl.training.train", "_budget_done"), ("ddrl.training.train", "train_run")]
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _package_graph({"ddrl.x.a": {"ddrl.y.b", "ddrl.x.c"}, "ddrl.y.b": {"ddrl.errors"}}) == {
        "ddrl.x": {"ddrl.y"}, "ddrl.y": {"ddrl.errors"}}
    assert _floors({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"c"}}) == {
        "a": 2, "b": 1, "c": 0, "d": 1}
    assert _private("_merge") and not _private("__version__") and not _private("merge_section")


def test_what_the_workflow_imports_to_parse_stays_light():
    # Every `snakemake` call imports these (rules/*.smk); pandas and matplotlib would add a
    # fixed 2-3 s to each (bench/dag.py).
    import subprocess
    import sys

    modules = ["ddrl.cluster.slurm", "ddrl.config.eval_config", "ddrl.study.study",
               "ddrl.study.search_space", "ddrl.study.preflight", "ddrl.search.tune",
               "ddrl.figures.catalog", "ddrl.runs"]
    code = (f"import sys, {', '.join(modules)}; "
            "print(sorted(m for m in ('pandas', 'matplotlib', 'torch', 'ray') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
