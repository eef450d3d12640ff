"""The recall host tests run a keeper in the test's process, on each ledger store (SQLite, and the real
PostgreSQL), with the real sandbox and the real definition registry: what they observe is the keeper's own log
of its passes and the `recall_views` rows, never a clock."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import trio

from auto_runtime.functions.computation.computation_type import ComputationType
from auto_runtime.functions.recall.recall_type import RecallType
from auto_runtime.functions.registry import function_types
from auto_runtime.ledger import Ledger, PlaybookScope
from auto_runtime.ledger.recall_views import ViewRow
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.event_publishing import EventPublishing
from auto_runtime.recall_host.keeper import ViewKeeper
from auto_runtime.sandbox.checker import Checkers
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.pool import SandboxPool
from auto_runtime.server import RUNTIME_PROJECTIONS
from auto_runtime.workflow_host.partition_leases import PartitionLeases
from tests.ledger.conftest import Target, postgres_database, postgres_url
from tests.postgres_support import admin
from tests.sandbox_engine import engine

__all__ = ["engine", "postgres_database", "postgres_url"]

WAIT_BOUND_SECONDS = 120.0
"""How long a test waits for a row to reach a state before it fails: far beyond what folding takes."""
HOLDER = "recall-host-test"
COUNTING = """---
language: python
source:
  events:
    - type: com.acme.tick
view:
  initial: {count: 0, seen: []}
---
def fold(view, event):
    view["count"] += 1
    view["seen"] = view["seen"] + [event["id"]]
    return view
"""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "postgres":
        return Target("postgres", None, request.getfixturevalue("postgres_url"))
    return Target("sqlite", tmp_path / "folder" / "ledger.db", None)


@pytest.fixture
async def ledger(target: Target) -> AsyncIterator[Ledger]:
    async with target.open(RUNTIME_PROJECTIONS) as opened:
        yield opened


@dataclass
class Passes:
    """The keeper's `recall_pass_started` / `recall_pass_ended` lines, in the order they were logged."""

    lines: list[tuple[str, tuple[str, str]]]

    def started(self, scope: PlaybookScope) -> int:
        return self.lines.count(("recall_pass_started", (scope.org, scope.playbook)))


class _PassLog(logging.Handler):
    def __init__(self, lines: list[tuple[str, tuple[str, str]]]) -> None:
        super().__init__(logging.DEBUG)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message in ("recall_pass_started", "recall_pass_ended"):
            extra: Any = record.__dict__
            self.lines.append((message, (str(extra["org"]), str(extra["playbook"]))))


@pytest.fixture
def passes() -> Iterator[Passes]:
    lines: list[tuple[str, tuple[str, str]]] = []
    handler = _PassLog(lines)
    logger = logging.getLogger("auto_runtime.recall_host")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield Passes(lines)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@dataclass
class Host:
    """A ledger, its definitions and a way to run a keeper over them."""

    ledger: Ledger
    pool: SandboxPool
    definitions: DefinitionRegistry
    publishing: EventPublishing

    async def define(self, scope: PlaybookScope, name: str, source: str = COUNTING) -> None:
        await self.definitions.create(scope, "recall", name, source, "tester")

    async def tick(self, scope: PlaybookScope, event_id: str) -> None:
        await self.publishing.publish(
            scope, {"specversion": "1.0", "id": event_id, "type": "com.acme.tick", "source": "/tests"}, "tester"
        )

    @asynccontextmanager
    async def keeping(self, *, playbooks_at_once: int = 4, max_rebuilds: int = 4) -> AsyncIterator[ViewKeeper]:
        """A keeper following the ledger with every partition held, sweeping only when it starts (the next
        sweep is a day away), so every later pass is one an append woke."""
        partitions = PartitionLeases(self.ledger, HOLDER, timedelta(days=1))
        assert await partitions.renew() and partitions.holds_all()
        keeper = ViewKeeper(
            self.ledger,
            self.pool,
            max_rebuilds=max_rebuilds,
            playbooks_at_once=playbooks_at_once,
            sweep=timedelta(days=1),
        )
        async with keeper.actors.serving(), trio.open_nursery() as nursery:
            nursery.start_soon(keeper.follow, partitions)
            yield keeper
            nursery.cancel_scope.cancel()

    async def until(self, holds: Callable[[], bool]) -> None:
        """Return once `holds()` is true (checked again after each short pause; bounded, not timed)."""
        with trio.fail_after(WAIT_BOUND_SECONDS):
            while True:
                if holds():
                    return
                await trio.sleep(0.01)

    async def row_until(self, scope: PlaybookScope, name: str, holds: Callable[[ViewRow], bool]) -> ViewRow:
        """The view's row once `holds` is true of it (read again after each check point; bounded, not timed)."""
        with trio.fail_after(WAIT_BOUND_SECONDS):
            while True:
                row = await self.ledger.recall_views.one(scope.org, scope.playbook, name)
                if row is not None and holds(row):
                    return row
                await trio.sleep(0.01)


FAULT_SQLITE = (
    "CREATE TRIGGER recall_view_fault BEFORE UPDATE ON recall_views WHEN NEW.name = '{name}' "
    "BEGIN SELECT RAISE(ABORT, 'injected fault'); END",
)
HEAL_SQLITE = ("DROP TRIGGER recall_view_fault",)
FAULT_POSTGRES = (
    "CREATE FUNCTION recall_view_fault() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected fault'; END $$ "
    "LANGUAGE plpgsql",
    "CREATE TRIGGER recall_view_fault BEFORE UPDATE ON recall_views FOR EACH ROW WHEN (NEW.name = '{name}') "
    "EXECUTE FUNCTION recall_view_fault()",
)
HEAL_POSTGRES = ("DROP TRIGGER recall_view_fault ON recall_views", "DROP FUNCTION recall_view_fault()")


@dataclass
class Faults:
    """A fault of the real store, made from outside the server: every write of one view's row fails (a trigger
    raises), so the actor that writes it crashes, until `heal`."""

    target: Target

    async def fail_writes_of(self, name: str) -> None:
        statements = FAULT_POSTGRES if self.target.kind == "postgres" else FAULT_SQLITE
        await self._execute(tuple(statement.format(name=name) for statement in statements))

    async def heal(self) -> None:
        await self._execute(HEAL_POSTGRES if self.target.kind == "postgres" else HEAL_SQLITE)

    async def _execute(self, statements: tuple[str, ...]) -> None:
        if self.target.database_url is not None:
            url = self.target.database_url
            await trio.to_thread.run_sync(lambda: asyncio.run(admin(url, *statements)))
            return
        assert self.target.ledger_file is not None
        path = self.target.ledger_file

        def execute() -> None:
            conn = sqlite3.connect(path)
            try:
                for statement in statements:
                    conn.execute(statement)
                conn.commit()
            finally:
                conn.close()

        await trio.to_thread.run_sync(execute)


@pytest.fixture
def faults(target: Target) -> Faults:
    return Faults(target)


@pytest.fixture
async def host(ledger: Ledger, engine: SandboxEngine) -> AsyncIterator[Host]:
    pool = SandboxPool(engine, 2)
    checkers: Checkers[object] = Checkers()
    try:
        types = function_types(ComputationType(engine, pool, checkers), RecallType(engine, pool, checkers, ledger))
        definitions = DefinitionRegistry(ledger, types)
        async with definitions.actors.serving():
            yield Host(ledger, pool, definitions, EventPublishing(ledger))
    finally:
        pool.close()
        checkers.close()
