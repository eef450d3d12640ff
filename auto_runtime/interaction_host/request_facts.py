"""What a request's run stream says about its request: the request as asked and the answer it took, if any.

Folded from the records of the run's latest attempt (after its last `run_started`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from auto_runtime.interaction_host.open_requests import INTERACTION_REQUESTED, REQUEST_ANSWERED
from auto_runtime.ledger import Record
from auto_runtime.playbooks.clock import iso_utc
from auto_runtime.playbooks.run_facts import RUN_CANCEL_REQUESTED, RUN_STARTED


@dataclass(frozen=True)
class RequestFacts:
    requested: Record | None
    answered: Record | None
    cancel: Record | None

    @property
    def request(self) -> dict[str, Any]:
        return dict(self.requested.data) if self.requested is not None else {}


def request_facts(history: Sequence[Record]) -> RequestFacts:
    requested = answered = cancel = None
    for record in history:
        if record.type == RUN_STARTED:
            requested = answered = cancel = None
        elif record.type == INTERACTION_REQUESTED:
            requested = record
        elif record.type == REQUEST_ANSWERED:
            answered = record
        elif record.type == RUN_CANCEL_REQUESTED:
            cancel = record
    return RequestFacts(requested, answered, cancel)


def answer_shown(run_id: str, answered: Record) -> dict[str, Any]:
    """`answer_interaction`'s answer: the `request_answered` fact as the seeds' table shows it."""
    data = answered.data
    shown: dict[str, Any] = {"run_id": run_id, "answer_id": answered.id, "answer": data.get("answer")}
    if data.get("claimed_for") is not None:
        shown["claimed_for"] = data["claimed_for"]
    shown["answered_by"] = data.get("answered_by")
    if data.get("reply") is not None:
        shown["reply"] = data["reply"]
    shown["answered_at"] = iso_utc(answered.recorded_at)
    return shown
