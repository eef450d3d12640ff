"""The host tests run against each ledger store (SQLite, and the real PostgreSQL) with the real sandbox."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from auto_runtime.functions.computation.computation_type import ComputationType
from auto_runtime.functions.registry import function_types
from auto_runtime.functions.workflow.document import WorkflowDocument, check_document
from auto_runtime.ledger import LeaseFence, Ledger, PlaybookScope
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.sandbox.checker import Checkers
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.pool import SandboxPool
from auto_runtime.server import RUNTIME_PROJECTIONS
from auto_runtime.workflow_host.calls import CallDispatcher
from auto_runtime.workflow_host.run_store import Definition, RunStore
from tests.ledger.conftest import Target, postgres_database, postgres_url
from tests.sandbox_engine import engine

__all__ = ["engine", "postgres_database", "postgres_url"]

MAX_DURATION_MS = 30 * 86_400_000
SCOPE = PlaybookScope("acme", "finance")
DOUBLE = "---\nlanguage: python\n---\ndef main(input):\n    return {'n': input['n'] * 2}\n"
RAISING = "---\nlanguage: python\n---\ndef main(input):\n    raise ValueError('no')\n"
HEAD = "document: { dsl: '1.0.3', namespace: tests, name: host, version: '1.0.0' }\n"


class OneFence:
    """`Fences` that hold every partition under one lease's fence (a follower working under one lease)."""

    def __init__(self, fence: LeaseFence, partitions: int) -> None:
        self.fence = fence
        self.partitions = frozenset(range(partitions))

    def __call__(self) -> LeaseFence | None:
        return self.fence

    def of_key(self, key: str) -> LeaseFence | None:
        return self.fence

    def fence_of(self, partition: int) -> LeaseFence | None:
        return self.fence if partition in self.partitions else None

    def held(self) -> frozenset[int]:
        return self.partitions


def definition(source: str, name: str = "flow", version: int = 1) -> Definition:
    document = check_document(HEAD + source, MAX_DURATION_MS)
    assert isinstance(document, WorkflowDocument), document
    return Definition(name, version, document.value)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "postgres":
        return Target("postgres", None, request.getfixturevalue("postgres_url"))
    return Target("sqlite", tmp_path / "folder" / "ledger.db", None)


@pytest.fixture
async def ledger(target: Target) -> AsyncIterator[Ledger]:
    async with target.open(RUNTIME_PROJECTIONS) as opened:
        yield opened


@pytest.fixture
async def store(ledger: Ledger, engine: SandboxEngine) -> AsyncIterator[RunStore]:
    """A run store whose run actors are served for the test's length."""
    served = RunStore(ledger, engine, runtime_version="0.1.0", max_duration_ms=MAX_DURATION_MS)
    async with served.playbooks.serving():
        yield served


@pytest.fixture
async def dispatcher(ledger: Ledger, store: RunStore, engine: SandboxEngine) -> AsyncIterator[CallDispatcher]:
    pool = SandboxPool(engine, 1)
    checkers: Checkers[object] = Checkers()
    try:
        types = function_types(ComputationType(engine, pool, checkers))
        definitions = DefinitionRegistry(ledger, types)
        async with definitions.actors.serving():
            await definitions.create(SCOPE, "computation", "double", DOUBLE, "tester")
            await definitions.create(SCOPE, "computation", "raising", RAISING, "tester")
            runs = RunService(ledger, definitions, types)
            yield CallDispatcher(store, runs)
    finally:
        pool.close()
        checkers.close()
