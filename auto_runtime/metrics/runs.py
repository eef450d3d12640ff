"""Runs and ledger appends, read from what each append committed (`Ledger.append` calls `appended`).

Every run fact goes through the ledger whoever records it (a request's run, a workflow's input, a build), so
this is where runs started and ended are counted: `run_started` by the definition's type, each ending by type
and outcome (`succeeded`, `rejected`, `failed`), and `workflow_input_applied`. A run's duration is its ending's
time less its start's, both as recorded; the start is kept for at most `STARTS_KEPT` runs in flight (the
oldest forgotten first; a run whose start was forgotten, or recorded before this process started, has no
duration here). Called on the Trio thread only.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Protocol

from cachetools import LRUCache

from auto_runtime.metrics.state import METERING

STARTS_KEPT = 100_000
RUN_STARTED = "run_started"
OUTCOMES = {"run_succeeded": "succeeded", "run_rejected": "rejected", "run_failed": "failed"}
INPUT_APPLIED = "workflow_input_applied"
TYPE = "auto_runtime.definition.type"
OUTCOME = "auto_runtime.run.outcome"


class RecordLike(Protocol):
    @property
    def stream(self) -> str: ...

    @property
    def type(self) -> str: ...

    @property
    def metadata(self) -> dict[str, Any]: ...

    @property
    def recorded_at(self) -> datetime: ...


_starts: LRUCache[str, datetime] = LRUCache(STARTS_KEPT)
"""When each run still going started, for its duration; the least recently started go first."""


def _definition_type(record: RecordLike) -> str:
    definition = record.metadata.get("definition")
    kind = definition.get("type") if isinstance(definition, dict) else None
    return kind if isinstance(kind, str) else "unknown"


def appended(records: Iterable[RecordLike]) -> None:
    """Count one committed append and the run facts among its records."""
    if not METERING.on:
        return
    instruments = METERING.instruments
    instruments.ledger_appends.add(1)
    count = 0
    for record in records:
        count += 1
        kind = record.type
        if kind == RUN_STARTED:
            instruments.runs_started.add(1, {TYPE: _definition_type(record)})
            _starts[record.stream] = record.recorded_at
        elif kind in OUTCOMES:
            definition_type = _definition_type(record)
            instruments.runs_ended.add(1, {TYPE: definition_type, OUTCOME: OUTCOMES[kind]})
            started = _starts.pop(record.stream, None)
            if started is not None:
                seconds = max((record.recorded_at - started).total_seconds(), 0.0)
                instruments.run_duration.record(seconds, {TYPE: definition_type})
        elif kind == INPUT_APPLIED:
            instruments.workflow_inputs.add(1)
    instruments.ledger_records.add(count)


def forget_starts() -> None:
    """Drop the starts kept (metrics stopped)."""
    _starts.clear()
