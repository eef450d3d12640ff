"""Design §4, "A run actor is the one writer of its run", kept by reading the package's source:

- no module outside `auto_runtime/runs/` builds a write to a run's stream (a `StreamWrite` whose stream is
  `run_stream(...)`, directly or through a name the module binds to it), and
- no module outside `auto_runtime/runs/` and the ledger's own conflict handling (`auto_runtime/ledger/`) catches
  `VersionConflict`: the run's writer is the one place that retries a version clash on a run's stream.

The checks walk every module's syntax tree (nothing is imported or run), so a new module that appends to a run's
stream itself, or retries a clash itself, fails here with its file and line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "auto_runtime"
RUNS = PACKAGE / "runs"
LEDGER = PACKAGE / "ledger"


def modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _called(node: ast.AST, name: str) -> bool:
    if not isinstance(node, ast.Call):
        return False
    function = node.func
    return (isinstance(function, ast.Name) and function.id == name) or (
        isinstance(function, ast.Attribute) and function.attr == name
    )


def run_stream_writes(tree: ast.Module) -> list[int]:
    """Lines of `StreamWrite(...)` calls whose stream is a run's stream: a `run_stream(...)` call, or a name the
    module binds to one."""
    nodes = list(ast.walk(tree))
    bound = {
        target.id
        for node in nodes
        if isinstance(node, ast.Assign) and _called(node.value, "run_stream")
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    lines: list[int] = []
    for node in nodes:
        if not isinstance(node, ast.Call) or not _called(node, "StreamWrite"):
            continue
        stream = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "stream"), None)
        if stream is not None and (
            _called(stream, "run_stream") or (isinstance(stream, ast.Name) and stream.id in bound)
        ):
            lines.append(node.lineno)
    return sorted(set(lines))


def version_conflict_handlers(tree: ast.Module) -> list[int]:
    """Lines of `except` clauses that name `VersionConflict` (alone or in a tuple)."""
    lines: list[int] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ExceptHandler) or node.type is None:
            continue
        caught = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
        if any(
            (isinstance(c, ast.Name) and c.id == "VersionConflict")
            or (isinstance(c, ast.Attribute) and c.attr == "VersionConflict")
            for c in caught
        ):
            lines.append(node.lineno)
    return lines


def test_no_module_outside_the_runs_room_writes_to_a_run_stream() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path, tree in modules()
        if not path.is_relative_to(RUNS)
        for line in run_stream_writes(tree)
    ]
    assert found == [], "send the run's actor a message instead (auto_runtime/runs/)"


def test_no_module_outside_the_runs_room_and_the_ledger_retries_a_version_clash() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path, tree in modules()
        if not (path.is_relative_to(RUNS) or path.is_relative_to(LEDGER))
        for line in version_conflict_handlers(tree)
    ]
    assert found == [], "a run's writer (auto_runtime/runs/writer.py) or the ledger's command loop retries clashes"


def test_the_checks_see_a_write_to_a_run_stream_and_a_retried_clash() -> None:
    """The checks themselves: each finds what it looks for in a module written to break the rule."""
    source = (
        "async def f(ledger, scope, run_id):\n"
        "    stream = run_stream(scope, run_id)\n"
        "    try:\n"
        "        await ledger.append([StreamWrite(stream, 0, [])])\n"
        "        await ledger.append([StreamWrite(run_stream(scope, run_id), 1, [])])\n"
        "        await ledger.append([StreamWrite(other_stream(scope), 0, [])])\n"
        "    except (KeyError, VersionConflict):\n"
        "        pass\n"
    )
    tree = ast.parse(source)
    assert run_stream_writes(tree) == [4, 5]
    assert version_conflict_handlers(tree) == [7]
