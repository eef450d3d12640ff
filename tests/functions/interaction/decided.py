"""Typed inputs for the interaction type's decisions, without a server: a run's records built here (positions and
times as a ledger would give them), and the requests an interaction function records."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from auto_runtime.ledger import LeaseFence, NewRecord, PlaybookScope, Record
from auto_runtime.runs import Loaded, RunHistory
from auto_runtime.runs.facts import RUN_STARTED, run_stream

SCOPE = PlaybookScope("acme", "desk")
RUN_ID = "0190a6f0-0000-7000-8000-000000000001"
CALLER_RUN_ID = "0190a6f0-0000-7000-8000-000000000002"
STREAM = run_stream(SCOPE, RUN_ID)
AT = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
FENCE = LeaseFence("workflow-host", "server-a", 7)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["decision"],
    "properties": {"decision": {"type": "string", "enum": ["go", "hold"]}, "reason": {"type": "string"}},
}
RULE: dict[str, Any] = {"decision": {"from": "word", "words": {"go": ["ship"]}}, "reason": "rest"}


class History:
    """A run's records as the ledger would hold them; `add` records new ones `at` a moment."""

    def __init__(self) -> None:
        self.records: list[Record] = []

    def add(self, facts: Iterable[NewRecord], at: datetime = AT) -> list[Record]:
        added = []
        for fact in facts:
            position = len(self.records) + 1
            record = Record(fact.id, STREAM, position, position, fact.type, fact.data, dict(fact.metadata), at)
            self.records.append(record)
            added.append(record)
        return added

    @property
    def loaded(self) -> Loaded[RunHistory]:
        return loaded(self.records)


def loaded(records: Sequence[Record]) -> Loaded[RunHistory]:
    return Loaded(RunHistory(SCOPE, RUN_ID, tuple(records)), len(records))


def run_metadata(definition_type: str = "interaction", **extra: Any) -> dict[str, Any]:
    return {
        "correlation_id": RUN_ID,
        "causation_id": None,
        **extra,
        "by": "tester",
        "run_id": RUN_ID,
        "definition": {"type": definition_type, "name": "deploy", "version": 1},
    }


def request(*, takes_answer: bool = True, delivered: bool = False, **extra: Any) -> dict[str, Any]:
    """An `interaction_requested`'s data: a question (or a notification), delivered through `desk` or not."""
    data: dict[str, Any] = {
        "to": "ana",
        "message": "May it go out?",
        "message_bytes": 14,
        "takes_answer": takes_answer,
        "answer_schema": SCHEMA if takes_answer else None,
        "delivery": {"server": "desk", "tool": "say"} if delivered else None,
        "requested_at": "2025-03-01T09:00:00.000Z",
        "expires_at": "2025-03-01T10:00:00.000Z",
    }
    if takes_answer:
        data["answerer"] = "ana"
    if delivered:
        data["deliver"] = {
            "server": "desk",
            "tool": "say",
            "with": {"text": "{{ message }}"},
            "sent": {"conversation": "/message/room", "id": "/message/key"},
        }
        if takes_answer:
            data["replies"] = {
                "tool": "replies",
                "with": {"since": "{{ since }}"},
                "read": {"list": "/items", "each": {"id": "/key", "sender": "/author", "text": "/body"}},
                "tell": {"tool": "say", "with": {"text": "{{ message }}"}},
            }
    if takes_answer:
        data["reply"] = RULE
    return {**data, **extra}


def opened(
    history: History, data: dict[str, Any], definition_type: str = "interaction", **metadata: Any
) -> tuple[Record, Record]:
    """Record a request's start as `RequestStart` does: `run_started` (waiting) and `interaction_requested`."""
    meta = run_metadata(definition_type, **metadata)
    started = NewRecord(RUN_STARTED, {"input": {}, "input_digest": "d", "waits": True, "finishes_later": True}, meta)
    requested = NewRecord("interaction_requested", data, {**meta, "causation_id": started.id})
    first, second = history.add([started, requested], AT)
    return first, second


def later(minutes: float) -> datetime:
    return AT + timedelta(minutes=minutes)
