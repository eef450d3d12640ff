"""The playbook actors' tests run against each ledger store (SQLite, and the real PostgreSQL) with real
workflow definitions (the workflow type's own check)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from auto_runtime.functions.registry import function_types
from auto_runtime.functions.workflow.workflow_type import WorkflowType
from auto_runtime.ledger import Ledger, PlaybookScope
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.sandbox.checker import Checkers
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.server import RUNTIME_PROJECTIONS
from tests.ledger.conftest import Target, postgres_database, postgres_url
from tests.postgres_support import admin
from tests.sandbox_engine import engine

__all__ = ["engine", "postgres_database", "postgres_url"]

SCOPE = PlaybookScope("acme", "finance")
OTHER = PlaybookScope("acme", "payroll")
HEAD = "document: { dsl: '1.0.3', namespace: tests, name: flow, version: '1.0.0' }\n"


def workflow(n: int) -> str:
    """A valid workflow whose source differs for each `n` (so each save makes a version)."""
    return HEAD + f"do:\n  - first: {{ set: {{ n: {n} }} }}\n"


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
async def types(engine: SandboxEngine) -> AsyncIterator[dict[str, Any]]:
    """The checkers' pool runs its workers as a system task of the test's Trio run, so it is made inside it."""
    checkers: Checkers[Any] = Checkers()
    try:
        yield dict(function_types(WorkflowType(engine, checkers)))
    finally:
        checkers.close()


@pytest.fixture
async def definitions(ledger: Ledger, types: dict[str, Any]) -> AsyncIterator[DefinitionRegistry]:
    registry = DefinitionRegistry(ledger, types)
    async with registry.actors.serving():
        yield registry


async def run_sql(target: Target, statement: str) -> None:
    """Run one statement on the store from outside the ledger, as an operator's session would."""
    url, ledger_file = target.database_url, target.ledger_file

    def run() -> None:
        if url is not None:
            asyncio.run(admin(url, statement))
            return
        assert ledger_file is not None
        connection = sqlite3.connect(ledger_file, timeout=30)
        try:
            connection.execute(statement)
            connection.commit()
        finally:
            connection.close()

    await trio.to_thread.run_sync(run)
