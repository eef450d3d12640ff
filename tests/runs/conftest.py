"""The runs room's tests: decisions on typed inputs without a server, and the writer and actor on both ledgers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from auto_runtime.ledger import Ledger, PlaybookScope, Record, StreamName
from auto_runtime.runs import Loaded, RunHistory
from auto_runtime.runs.facts import run_stream
from auto_runtime.server import RUNTIME_PROJECTIONS
from tests.ledger.conftest import Target, postgres_database, postgres_url

__all__ = ["postgres_database", "postgres_url"]

SCOPE = PlaybookScope("acme", "finance")
MOMENT = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "postgres":
        return Target("postgres", None, request.getfixturevalue("postgres_url"))
    return Target("sqlite", tmp_path / "folder" / "ledger.db", None)


@pytest.fixture
async def ledger(target: Target) -> AsyncIterator[Ledger]:
    async with target.open(RUNTIME_PROJECTIONS) as opened:
        yield opened


def record(run_id: str, position: int, kind: str, data: Any, metadata: dict[str, Any] | None = None) -> Record:
    """A run's record as the ledger would hand it back (the decisions read nothing else)."""
    return Record(
        f"{run_id}-{position}",
        StreamName(run_stream(SCOPE, run_id)),
        position,
        position,
        kind,
        data,
        metadata if metadata is not None else {"run_id": run_id},
        MOMENT,
    )


def history(run_id: str, *records: Record) -> Loaded[RunHistory]:
    return Loaded(RunHistory(SCOPE, run_id, tuple(records)), len(records))
