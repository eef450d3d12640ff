"""The runs room's tests: decisions on typed inputs without a server, and the writer and actor on both ledgers."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from auto_runtime.ledger import PlaybookScope, Record, StreamName
from auto_runtime.runs import Loaded, RunHistory
from auto_runtime.runs.facts import run_stream
from tests.ledger.conftest import postgres_database, postgres_url
from tests.playbooks.conftest import ledger, target

__all__ = ["ledger", "postgres_database", "postgres_url", "target"]

SCOPE = PlaybookScope("acme", "finance")
MOMENT = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


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
