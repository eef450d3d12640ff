"""The runs room's own decisions on typed inputs, without a server: a request under a run id (`Opening`), a
fact of a running attempt (`AttemptFact`), and a request to cancel (`CancelRequest`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from auto_runtime.ledger import DueEntry, NewRecord
from auto_runtime.problems import Rejection
from auto_runtime.runs.attempts import (
    ATTEMPT_FACT,
    AnsweredAgain,
    AttemptStarted,
    Fact,
    HandedOver,
    Opening,
    StartRun,
)
from auto_runtime.runs.cancels import CancelRequest, CancelRun
from auto_runtime.runs.view import RunState
from auto_runtime.telemetry.spans import RunSpan
from tests.runs.conftest import MOMENT, SCOPE, history, record

RUN = "0193e0a0-0000-7000-8000-000000000001"
DEFINITION = {"type": "computation", "name": "double", "version": 3}


@dataclass(frozen=True)
class Version:
    """The definition version a start names (its number and its checked document)."""

    version: int
    document: dict[str, Any]


def start(value: Any = 2, *, digest: str = "d-2", calls_tools: bool = False, minted: bool = False) -> StartRun:
    document = {"calls_tools": True} if calls_tools else {}
    return StartRun(
        "computation", "double", value, digest, "caller-1", Version(3, document), None, minted, RunSpan(None, "output")
    )


def started(digest: str = "d-2", **data: Any) -> Any:
    return record(
        RUN, 1, "run_started", {"input": 2, "input_digest": digest, **data}, {"definition": DEFINITION, "by": "c"}
    )


def opening(*, waits: bool = False, again: dict[str, Any] | None = None) -> Opening:
    def answer_again(state: RunState) -> dict[str, Any] | None:
        return again

    return Opening(answer_again, lambda message: waits)


def test_a_new_run_records_its_start_with_the_request_s_metadata() -> None:
    decision = opening().decide(history(RUN), start())
    assert isinstance(decision.reply, AttemptStarted)
    (recorded,) = decision.records
    assert recorded.type == "run_started"
    assert recorded.data == {"input": 2, "input_digest": "d-2"}
    assert recorded.metadata == {
        "correlation_id": RUN,
        "causation_id": None,
        "by": "caller-1",
        "run_id": RUN,
        "definition": DEFINITION,
    }
    assert decision.reply.metadata["causation_id"] == recorded.id, "the attempt's facts are caused by its start"


def test_a_definition_that_calls_tools_says_so_in_its_start() -> None:
    decision = opening().decide(history(RUN), start(calls_tools=True))
    assert decision.records[0].data["calls_tools"] is True


def test_a_run_that_waits_is_handed_to_its_type_and_records_nothing_here() -> None:
    decision = opening(waits=True).decide(history(RUN), start())
    assert isinstance(decision.reply, HandedOver) and not decision.writes


def test_an_earlier_run_under_the_id_answers_again_and_records_nothing() -> None:
    answered = {"run_id": RUN, "status": "succeeded"}
    decision = opening(again=answered).decide(history(RUN, started()), start())
    assert decision.reply == AnsweredAgain(answered) and not decision.writes


def test_an_earlier_run_without_an_answer_runs_again_on_top_of_its_history() -> None:
    decision = opening(again=None).decide(history(RUN, started()), start())
    assert isinstance(decision.reply, AttemptStarted) and len(decision.records) == 1


@pytest.mark.parametrize(
    "other",
    [
        start(digest="d-other"),
        StartRun("computation", "triple", 2, "d-2", "c", Version(1, {}), None, False, RunSpan(None, "output")),
    ],
)
def test_the_id_of_a_run_of_another_definition_or_input_is_refused(other: StartRun) -> None:
    with pytest.raises(Rejection) as refused:
        opening().decide(history(RUN, started()), other)
    assert refused.value.reason == "conflict"
    assert refused.value.detail == (
        f"The run id {RUN} is already used for another definition or another input; use a new run id."
    )


def test_a_fact_is_recorded_as_the_attempt_reports_it() -> None:
    decision = ATTEMPT_FACT.decide(history(RUN, started()), Fact("tool_called", {"n": 1}, {"run_id": RUN}))
    assert [(r.type, r.data, r.metadata) for r in decision.records] == [("tool_called", {"n": 1}, {"run_id": RUN})]


def entry_of(recorded: NewRecord) -> DueEntry:
    return DueEntry(SCOPE, RUN, "cancel:" + RUN, MOMENT, {"cause": recorded.id})


def test_a_cancel_records_the_request_and_arms_its_entry_in_the_same_append() -> None:
    waiting = started(waits=True)
    decision = CancelRequest(entry_of).decide(history(RUN, waiting), CancelRun("Not needed.", "caller-2"))
    assert decision.reply is True
    (recorded,) = decision.records
    assert (recorded.type, recorded.data) == ("run_cancel_requested", {"kind": "requested", "reason": "Not needed."})
    assert recorded.metadata["by"] == "caller-2" and recorded.metadata["causation_id"] is None
    (armed,) = decision.due_work.arm
    assert armed.payload == {"cause": recorded.id}


def test_a_second_cancel_records_nothing() -> None:
    asked = record(RUN, 2, "run_cancel_requested", {"kind": "requested"})
    decision = CancelRequest(entry_of).decide(history(RUN, started(waits=True), asked), CancelRun(None, "caller-3"))
    assert decision.reply is False and not decision.writes


def test_a_cancel_of_an_ended_run_is_refused_with_the_one_text() -> None:
    ended = record(RUN, 2, "run_succeeded", {"output": 4, "record": {}})
    with pytest.raises(Rejection) as refused:
        CancelRequest(entry_of).decide(history(RUN, started(waits=True), ended), CancelRun(None, "caller-3"))
    assert (refused.value.reason, refused.value.kind) == ("conflict", None)
    assert refused.value.detail == f"The run {RUN} has ended (succeeded), so there is nothing to cancel."
