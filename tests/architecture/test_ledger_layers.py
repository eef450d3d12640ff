"""Design §3, "The ledger is a set of ports", and the rooms of `docs/architecture.md`, kept by reading the source:

- the ledger knows nothing above it: a module in `auto_runtime/ledger/` imports from the ledger itself and from
  the few rooms below it (`LEDGER_MAY_IMPORT`: the actors, supervision, metrics, telemetry and the AWS signing
  the models use too), never from `models/`, `playbooks/`, `functions/`, `runs/` or any other room;
- `auto_runtime/tools/` imports nothing from `playbooks/`;
- inside the ledger no module reaches into another's privates: no `something._name` on an object whose `_name`
  the module does not define itself (so not `self.ledger._append`), and no `from .other import _name`; and
- the ledger's modules import one another without a circle (imports under `TYPE_CHECKING` and inside functions
  count: a circle typed "for the checker only" is still a circle).

The checks walk the syntax trees (nothing is imported or run), so a new import, private call or circle fails here
with its file and line, or with the circle's modules in order.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "auto_runtime"
LEDGER = PACKAGE / "ledger"
TOOLS = PACKAGE / "tools"
LEDGER_MAY_IMPORT = frozenset({"ledger", "actors", "supervision", "metrics", "telemetry", "aws"})
"""The rooms of `auto_runtime` a ledger module may import from (by their first name under the package)."""


@dataclass(frozen=True, slots=True)
class Import:
    line: int
    module: str
    """The absolute dotted name of what is imported: a module, or `package.name` for `from package import name`."""
    names: tuple[str, ...] = ()
    """The names a `from ... import` binds (empty for a plain `import`)."""


def module_name(path: Path) -> str:
    """The dotted name of a module file under the package (`auto_runtime.ledger.sqlite.store`; a package's
    `__init__.py` is the package's own name)."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(tree: ast.Module, name: str, is_package: bool = False) -> list[Import]:
    """Every import anywhere in the module `name` (under `TYPE_CHECKING`, inside functions), made absolute."""
    package = name if is_package else name.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(Import(node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            found.append(Import(node.lineno, source, tuple(alias.name for alias in node.names)))
    return found


def imported_modules(found: Import, known: Mapping[str, object]) -> list[str]:
    """The modules an import loads among `known`: `from package import module` loads `package.module`; a name
    that is no module of its own loads the module it comes from."""
    submodules = [f"{found.module}.{name}" for name in found.names if f"{found.module}.{name}" in known]
    if submodules and len(submodules) == len(found.names):
        return submodules
    return [*submodules, found.module]


def room_of(module: str) -> str | None:
    """The room (first name under `auto_runtime`) an absolute module name is in, or None outside the package."""
    parts = module.split(".")
    return parts[1] if parts[0] == "auto_runtime" and len(parts) > 1 else None


def room_imports(found: list[Import]) -> list[tuple[str, str]]:
    """`(line: module, room)` for each import of a module of the package."""
    return [
        (f"{each.line}: {module}", room)
        for each in found
        for module in (
            [f"auto_runtime.{name}" for name in each.names] if each.module == "auto_runtime" else [each.module]
        )
        if (room := room_of(module)) is not None
    ]


def private_reaches(tree: ast.Module, found: list[Import], own: str) -> list[int]:
    """Lines where the module uses a private name it does not define: `obj._name` (on anything but `self` or
    `cls`) whose `_name` no function, class or attribute of this module defines, or `from .x import _name` from
    another module of `own` (the package whose privates are checked)."""
    defined: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            defined.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
    lines = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and _private(node.attr)
        and node.attr not in defined
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ]
    lines.extend(
        each.line
        for each in found
        if (each.module == own or each.module.startswith(own + ".")) and any(map(_private, each.names))
    )
    return sorted(set(lines))


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def find_cycle(graph: Mapping[str, set[str]]) -> list[str]:
    """One circle of the graph as its modules in order (the first repeated at the end), or [] when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for following in sorted(graph.get(node, ())):
            if state.get(following) == 1:
                return [*path[path.index(following) :], following]
            if following not in state and (cycle := visit(following)):
                return cycle
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def import_graph(trees: Mapping[str, tuple[ast.Module, bool]]) -> dict[str, set[str]]:
    """The modules each module of `trees` imports among them, by explicit import. A package's `__init__`, loaded
    before any of its modules, is no edge of its own: only a name imported from the package itself is."""
    graph: dict[str, set[str]] = {name: set() for name in trees}
    for name, (tree, is_package) in trees.items():
        for found in imports(tree, name, is_package):
            for module in imported_modules(found, trees):
                if module in trees and module != name:
                    graph[name].add(module)
    return graph


def parsed(folder: Path) -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(folder.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _where(path: Path, line: int | str) -> str:
    return f"{path.relative_to(PACKAGE.parent)}:{line}"


def test_the_ledger_imports_nothing_from_the_rooms_above_it() -> None:
    found = [
        _where(path, line)
        for path, tree in parsed(LEDGER)
        for line, room in room_imports(imports(tree, module_name(path), path.name == "__init__.py"))
        if room not in LEDGER_MAY_IMPORT
    ]
    assert found == [], f"the ledger imports only from {sorted(LEDGER_MAY_IMPORT)} (design §3, docs/architecture.md)"


def test_the_tools_import_nothing_from_the_playbooks() -> None:
    found = [
        _where(path, line)
        for path, tree in parsed(TOOLS)
        for line, room in room_imports(imports(tree, module_name(path), path.name == "__init__.py"))
        if room == "playbooks"
    ]
    assert found == [], "what tools need from below lives below them (auto_runtime/clock_text.py, ...)"


def test_no_ledger_module_reaches_into_another_modules_privates() -> None:
    found = [
        _where(path, line)
        for path, tree in parsed(LEDGER)
        for line in private_reaches(
            tree, imports(tree, module_name(path), path.name == "__init__.py"), "auto_runtime.ledger"
        )
    ]
    assert found == [], "go through the other module's public face (a port), not its private methods"


def test_the_ledger_modules_import_one_another_without_a_circle() -> None:
    trees = {module_name(path): (tree, path.name == "__init__.py") for path, tree in parsed(LEDGER)}
    assert find_cycle(import_graph(trees)) == []


def test_the_checks_see_an_import_from_above_a_private_reach_and_a_circle() -> None:
    """The checks themselves: each finds what it looks for in modules written to break the rule."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from auto_runtime.metrics import appended\n"
        "from auto_runtime.models.auth import sigv4_signature\n"
        "from auto_runtime import playbooks\n"
        "from .records import Record, _private_helper\n"
        "if TYPE_CHECKING:\n"
        "    from .ledger import Ledger\n"
        "class Rows:\n"
        "    def __init__(self, ledger):\n"
        "        self._own = ledger\n"
        "    async def get(self):\n"
        "        self._check()\n"
        "        self._own.fetch()\n"
        "        return await self.ledger._get_secret()\n"
        "    def _check(self):\n"
        "        return self.__class__, other._own\n"
    )
    tree = ast.parse(source)
    found = imports(tree, "auto_runtime.ledger.secret_rows")
    assert [line for line, room in room_imports(found) if room not in LEDGER_MAY_IMPORT] == [
        "3: auto_runtime.models.auth",
        "4: auto_runtime.playbooks",
    ]
    assert private_reaches(tree, found, "auto_runtime.ledger") == [5, 14]
    ledger = ast.parse("from .secret_rows import Rows\nfrom . import json_text\n")
    trees = {
        "auto_runtime.ledger.secret_rows": (tree, False),
        "auto_runtime.ledger.ledger": (ledger, False),
        "auto_runtime.ledger.records": (ast.parse("from . import json_text\n"), False),
        "auto_runtime.ledger.json_text": (ast.parse("import json\n"), False),
    }
    assert find_cycle(import_graph(trees)) == [
        "auto_runtime.ledger.ledger",
        "auto_runtime.ledger.secret_rows",
        "auto_runtime.ledger.ledger",
    ]
    del trees["auto_runtime.ledger.secret_rows"]
    assert find_cycle(import_graph(trees)) == []
