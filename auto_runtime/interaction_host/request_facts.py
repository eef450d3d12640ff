"""What a request's run stream says about its request: the request as asked and the answer it took, if any.

Folded from the records of the run's latest attempt (after its last `run_started`). The request is opened by the
fact of one of the request sources given (an interaction function's `interaction_requested` when none are), and
read as that source reads it (`RequestSource.request_of`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from auto_runtime.clock_text import iso_utc
from auto_runtime.functions.interaction.request_sources import RequestSource
from auto_runtime.interaction_host.open_requests import INTERACTION_REQUESTED, INTERACTION_SOURCE, REQUEST_ANSWERED
from auto_runtime.ledger import Record
from auto_runtime.runs.facts import RUN_CANCEL_REQUESTED, RUN_STARTED

INTERACTION_SOURCES: Final[Mapping[str, RequestSource]] = {INTERACTION_REQUESTED: INTERACTION_SOURCE}


@dataclass(frozen=True)
class RequestFacts:
    requested: Record | None
    answered: Record | None
    cancel: Record | None
    request: dict[str, Any] = field(default_factory=dict)
    """The request as its source reads it from `requested` (empty without one)."""


def request_facts(
    history: Sequence[Record], sources: Mapping[str, RequestSource] = INTERACTION_SOURCES
) -> RequestFacts:
    """The request facts of the latest attempt; `sources` maps each opening fact's type to its source."""
    requested = answered = cancel = None
    for record in history:
        if record.type == RUN_STARTED:
            requested = answered = cancel = None
        elif record.type in sources:
            requested = record
        elif record.type == REQUEST_ANSWERED:
            answered = record
        elif record.type == RUN_CANCEL_REQUESTED:
            cancel = record
    request = sources[requested.type].request_of(requested) if requested is not None else {}
    return RequestFacts(requested, answered, cancel, request)


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
