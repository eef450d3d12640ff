"""Design §3, "The ledger is a set of ports": running SQL is private to `auto_runtime/ledger/`, kept by reading
the package's source.

Code above the ledger reads a projection through a query object (`ledger.queries.<name>`, see
`auto_runtime/ledger/queries/`), never with SQL of its own: the ledger's read of SQL is private (`Ledger._select`,
handed to the query objects), and no module outside `auto_runtime/ledger/` names an attribute `fetch` or `_select`
of anything (a ledger, a store, a name bound to one), whether it calls it or passes it on. The check walks every
module's syntax tree (nothing is imported or run), so a new one above the ledger fails here with its file and line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from auto_runtime.ledger import Ledger

PACKAGE = Path(__file__).resolve().parents[2] / "auto_runtime"
LEDGER = PACKAGE / "ledger"
SQL_READS = frozenset({"fetch", "_select"})
"""The attributes that run SQL: the public `fetch` of old (and asyncpg's), and the ledger's private read."""


def modules_above_the_ledger() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if not path.is_relative_to(LEDGER):
            yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def fetch_uses(tree: ast.Module) -> list[int]:
    """Lines that read an attribute that runs SQL (`SQL_READS`), whatever of (`ledger.fetch(...)`,
    `self.store.ledger._select` handed on uncalled)."""
    return sorted(
        {
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in SQL_READS and isinstance(node.ctx, ast.Load)
        }
    )


def test_no_module_above_the_ledger_runs_sql() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path, tree in modules_above_the_ledger()
        for line in fetch_uses(tree)
    ]
    where = ", ".join(found)
    assert found == [], f"read these projections through query objects (auto_runtime/ledger/queries/): {where}"


def test_the_check_sees_a_fetch_called_or_handed_on() -> None:
    """The check itself: it finds each `fetch` in a module written to break the rule, and nothing else."""
    source = (
        "async def f(ledger, store, scope):\n"
        "    rows = await ledger.fetch('SELECT * FROM runs WHERE org = ?', [scope.org])\n"
        "    more = await store.ledger.fetch(\n"
        "        'SELECT status FROM playbooks'\n"
        "    )\n"
        "    read = ledger.fetch\n"
        "    row = await ledger.queries.runs.status(scope.org, scope.playbook, 'r')\n"
        "    fetch = prefetch(ledger)\n"
        "    store.fetch_size = 10\n"
        "    private = await ledger._select('SELECT 1')\n"
        "    stored = store._select\n"
        "    return rows, more, read, row, fetch, private, stored\n"
    )
    assert fetch_uses(ast.parse(source)) == [2, 3, 6, 10, 11]


def test_the_ledger_shows_no_sql_read() -> None:
    """`fetch` left the ledger's public face: the query objects are the reads it offers."""
    assert not [name for name in dir(Ledger) if "fetch" in name and not name.startswith("_")]
