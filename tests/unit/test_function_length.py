"""Size limits in src/ddrl (issue 36): no function over 60 lines, no module over 400.

A function's length is counted with ``ast``: from its ``def`` line (decorators excluded) to
its last line, docstring, comments and blank lines included. Methods and nested functions
are functions of their own, named by where they sit (``ddrl.x.Class.method``,
``ddrl.x.outer.inner``); a nested function's lines also count toward the one around it.
A module's length is its number of lines.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Collection

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
PACKAGE = SRC / "ddrl"
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400
EXEMPT = {
    # The CLI's argument table: one add_parser/add_argument call after another, every
    # subcommand and option of `ddrl` in one place, read top to bottom like its --help.
    # Split into helpers it would only be harder to read, so it may be longer.
    "ddrl.cli.build_parser",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def function_lengths(source: str, module: str) -> dict[str, int]:
    """``{qualified name: lines}`` of every function in ``source``, nested ones included."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}.{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lengths[name] = child.end_lineno - child.lineno + 1
                visit(child, name)
            else:  # functions under if/try/with blocks keep the enclosing name
                visit(child, prefix)

    visit(ast.parse(source), module)
    return lengths


def long_functions(source: str, module: str, limit: int = MAX_FUNCTION_LINES,
                   exempt: Collection[str] = ()) -> list[str]:
    """``"<name>: <n> lines"`` for every function of ``source`` over ``limit`` lines."""
    return [f"{name}: {n} lines" for name, n in function_lengths(source, module).items()
            if n > limit and name not in exempt]


def _sources() -> dict[str, str]:
    return {_module_name(p): p.read_text() for p in sorted(PACKAGE.rglob("*.py"))}


def test_no_function_is_over_60_lines():
    too_long = [hit for module, source in _sources().items()
                for hit in long_functions(source, module, exempt=EXEMPT)]
    assert too_long == [], (
        f"functions over {MAX_FUNCTION_LINES} lines (split them into named helpers):\n"
        + "\n".join(too_long))


def test_no_module_is_over_400_lines():
    too_long = [f"{module}: {len(source.splitlines())} lines"
                for module, source in _sources().items()
                if len(source.splitlines()) > MAX_MODULE_LINES]
    assert too_long == [], (
        f"modules over {MAX_MODULE_LINES} lines (move a coherent part into a module of its "
        "own):\n" + "\n".join(too_long))


def test_every_exempt_function_exists():
    # An exemption outliving its function would silently exempt whatever takes the name next.
    found = {name for module, source in _sources().items()
             for name in function_lengths(source, module)}
    assert EXEMPT <= found, sorted(EXEMPT - found)


def _function(name: str, lines: int, indent: str = "") -> str:
    """Source of a function ``lines`` long: the def line, then ``lines - 1`` statements."""
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(lines - 1))
    return f"{indent}def {name}():\n{body}"


@pytest.mark.parametrize("lines, found", [(60, False), (61, True)])
def test_the_checker_counts_from_the_def_line_to_the_last(lines, found):
    # Guards the checker itself: 60 lines pass, 61 fail, decorators do not count.
    source = "import functools\n\n\n@functools.cache\n" + _function("f", lines)
    assert function_lengths(source, "m") == {"m.f": lines}
    assert long_functions(source, "m") == ([f"m.f: {lines} lines"] if found else [])


def test_the_checker_finds_methods_nested_async_and_guarded_functions():
    source = (
        "class A:\n" + _function("method", 61, "    ")
        + "def outer():\n" + _function("inner", 61, "    ")
        + "if True:\n" + _function("guarded", 61, "    ")
        + "async " + _function("coro", 61)
        + _function("short", 3)
    )
    assert long_functions(source, "m") == [
        "m.A.method: 61 lines", "m.outer: 62 lines", "m.outer.inner: 61 lines",
        "m.guarded: 61 lines", "m.coro: 61 lines"]
    assert long_functions(source, "m", exempt={"m.outer", "m.coro"}) == [
        "m.A.method: 61 lines", "m.outer.inner: 61 lines", "m.guarded: 61 lines"]
