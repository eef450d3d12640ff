"""An interaction request's decisions on typed inputs, without a server: its start, an answer and its ending (the
records, the due work, the reply and the refusals each decides)."""

from __future__ import annotations

from typing import Any

import pytest

from auto_runtime.functions.function_type import Rejected, Succeeded
from auto_runtime.functions.interaction.decisions import (
    CANCEL_KEY,
    EXPIRE_KEY,
    SETTLE_KEY,
    RequestAnswer,
    RequestEnding,
    RequestStart,
)
from auto_runtime.functions.workflow.outbox import answer_key
from auto_runtime.ledger import DueEntry, DueKey, NewRecord
from auto_runtime.problems import Rejection, conflict, unavailable
from auto_runtime.runs.facts import RUN_CANCEL_REQUESTED, RUN_REJECTED, RUN_STARTED
from auto_runtime.runs.interaction_messages import (
    AnsweredElsewhere,
    AnswerRequest,
    EndRequest,
    StartInteractionRun,
)
from tests.functions.interaction.decided import (
    AT,
    CALLER_RUN_ID,
    FENCE,
    RUN_ID,
    SCOPE,
    History,
    later,
    opened,
    request,
    run_metadata,
)

STARTED = {"input": {"lead": "ana"}, "input_digest": "digest"}


def start(first: Any, history: History | None = None) -> Any:
    message = StartInteractionRun(STARTED, run_metadata(), first, AT)
    return RequestStart().decide((history or History()).loaded, message)


def ending(history: History, key: str, at: Any = AT, payload: Any = None) -> Any:
    entry = DueEntry(SCOPE, RUN_ID, key, at, payload if payload is not None else {})
    return RequestEnding().decide(history.loaded, EndRequest(entry, FENCE, at))


# -- the start ---------------------------------------------------------------------------------------------------


def test_a_request_starts_waiting_with_its_expiry_and_first_attempt_armed() -> None:
    data = request(delivered=True)
    decision = start(data)
    started, requested = decision.records
    assert decision.reply is None
    assert (started.type, started.data) == (RUN_STARTED, {**STARTED, "waits": True, "finishes_later": True})
    assert started.metadata == run_metadata()
    assert (requested.type, requested.data) == ("interaction_requested", data)
    assert requested.metadata == {**run_metadata(), "causation_id": started.id}
    assert [(e.key, e.due_at, e.payload) for e in decision.due_work.arm] == [
        (EXPIRE_KEY, later(60), {}),
        ("interaction:attempt:1", AT, {}),
    ]
    assert decision.fence is None


def test_a_request_not_delivered_arms_only_its_expiry() -> None:
    decision = start(request())
    assert [e.key for e in decision.due_work.arm] == [EXPIRE_KEY]


def test_a_start_rejected_within_its_request_records_the_rejection_and_answers_it() -> None:
    rejection = conflict("The function's message renders empty text.", kind="unworkable")
    decision = start(Rejected(rejection, {"pointer": ""}))
    started, rejected = decision.records
    assert decision.reply is rejection
    assert started.data == STARTED
    assert rejected.type == RUN_REJECTED
    assert rejected.data == {**rejection.as_record(), "record": {"pointer": ""}}
    assert rejected.metadata == {**run_metadata(), "causation_id": started.id}
    assert not decision.due_work


def test_a_notification_not_delivered_succeeds_within_its_request() -> None:
    record = {"to": "ana", "message": "It went out.", "expires_at": "x", "requested_at": "y"}
    decision = start(Succeeded({}, record))
    started, succeeded = decision.records
    assert decision.reply is None
    assert (succeeded.type, succeeded.data) == ("run_succeeded", {"output": {}, "record": record})
    assert succeeded.metadata["causation_id"] == started.id


def test_a_start_that_meets_a_run_another_writer_started_is_stale() -> None:
    history = History()
    opened(history, request())
    decision = start(request(), history)
    assert (decision.reply, list(decision.records), decision.writes) == (None, [], False)


def test_a_run_that_ended_without_a_final_result_starts_again_on_top() -> None:
    history = History()
    full = unavailable("The playbook has 10 open requests.", kind="requests_full", retry_after=5)
    history.add(start(Rejected(full)).records)
    decision = start(request(), history)
    assert [r.type for r in decision.records] == [RUN_STARTED, "interaction_requested"]


# -- an answer ---------------------------------------------------------------------------------------------------


async def answer(history: History, value: Any, *, claimed_for: str | None = None, caller: str = "key:ops") -> Any:
    decider = RequestAnswer(frozenset({"prediction"}))
    return await decider.decide(history.loaded, AnswerRequest(value, claimed_for, caller, later(5)))


async def test_an_answer_records_request_answered_and_arms_the_settle_entry() -> None:
    history = History()
    _, requested = opened(history, request())
    decision = await answer(history, {"decision": "go"}, claimed_for="ana")
    (answered,) = decision.records
    assert decision.reply is None
    assert answered.type == "request_answered"
    assert answered.data == {"answer": {"decision": "go"}, "claimed_for": "ana", "answered_by": "key:ops"}
    assert answered.metadata == {**run_metadata(), "causation_id": requested.id, "by": "key:ops"}
    assert decision.due_work.arm == [DueEntry(SCOPE, RUN_ID, SETTLE_KEY, later(5), {})]


async def test_the_same_answer_again_answers_what_was_recorded_and_another_is_refused() -> None:
    history = History()
    opened(history, request())
    (recorded,) = history.add((await answer(history, {"decision": "go"})).records)
    again = await answer(history, {"decision": "go"}, caller="key:other")
    assert (again.reply, again.writes) == (recorded, False)
    with pytest.raises(Rejection) as refused:
        await answer(history, {"decision": "hold"})
    assert refused.value.detail == f"The request of the run {RUN_ID} took another answer already."


async def test_an_answer_to_no_run_is_not_found() -> None:
    with pytest.raises(Rejection) as refused:
        await answer(History(), {"decision": "go"})
    assert (refused.value.reason, refused.value.detail) == ("not_found", f"The playbook desk has no run {RUN_ID}.")


async def test_an_answer_to_a_run_of_a_type_that_answers_itself_is_handed_back() -> None:
    history = History()
    opened(history, request(), "prediction")
    decision = await answer(history, {"anything": True})
    assert (decision.reply, decision.writes) == (AnsweredElsewhere("prediction"), False)


@pytest.mark.parametrize(
    ("case", "detail"),
    [
        ("notification", f"The run {RUN_ID} sent a notification, which takes no answer."),
        ("ended", f"The request of the run {RUN_ID} has ended (rejected), so it takes no answer."),
        ("cancelling", f"The run {RUN_ID} was asked to cancel, so its request takes no answer."),
    ],
)
async def test_an_answer_to_a_request_that_takes_none_is_refused(case: str, detail: str) -> None:
    history = History()
    opened(history, request(takes_answer=case != "notification"))
    if case == "ended":
        history.add([NewRecord(RUN_REJECTED, {"reason": "unanswered", "kind": "expired"}, {})])
    if case == "cancelling":
        history.add([NewRecord(RUN_CANCEL_REQUESTED, {"kind": "requested"}, {"by": "key:ops"})])
    with pytest.raises(Rejection) as refused:
        await answer(history, {"decision": "go"})
    assert (refused.value.reason, refused.value.detail) == ("conflict", detail)


async def test_an_answer_that_does_not_fit_the_schema_is_invalid_input() -> None:
    history = History()
    opened(history, request())
    with pytest.raises(Rejection) as refused:
        await answer(history, {"decision": "maybe"})
    assert refused.value.reason == "invalid_input"
    assert [issue.pointer for issue in refused.value.errors] == ["/answer/decision"]


async def test_an_answer_past_its_bounds_is_invalid_input() -> None:
    history = History()
    opened(history, request())
    with pytest.raises(Rejection) as refused:
        await answer(history, {"decision": "go", "reason": "x" * 70_000})
    assert refused.value.reason == "invalid_input"
    assert refused.value.errors[0].detail == "answer: expected at most 65,536 bytes as JSON, not 70,029."


# -- the ending --------------------------------------------------------------------------------------------------


def test_an_answered_request_ends_succeeded_with_its_answer_whichever_entry_came() -> None:
    history = History()
    opened(history, request())
    data = {"answer": {"decision": "go"}, "claimed_for": "ana", "answered_by": "key:ops"}
    (answered,) = history.add([NewRecord("request_answered", data, {**run_metadata(), "by": "key:ops"})], later(5))
    decision = ending(history, EXPIRE_KEY, later(6))
    (succeeded,) = decision.records
    assert decision.reply is True
    assert succeeded.type == "run_succeeded"
    assert succeeded.data == {
        "output": {"decision": "go"},
        "record": {"answered_by": "key:ops", "answered_at": "2025-03-01T09:05:00.000Z", "claimed_for": "ana"},
    }
    assert succeeded.metadata == {**run_metadata(), "causation_id": answered.id, "by": "key:ops"}
    assert decision.fence == FENCE
    assert list(decision.due_work.fire) == [DueKey(SCOPE, RUN_ID, EXPIRE_KEY)]
    assert list(decision.due_work.cancel) == [DueKey(SCOPE, RUN_ID, SETTLE_KEY), DueKey(SCOPE, RUN_ID, CANCEL_KEY)]
    assert list(decision.due_work.arm) == []


def test_a_cancel_entry_alone_records_the_request_and_the_rejection() -> None:
    history = History()
    opened(history, request())
    payload = {"kind": "deadline", "reason": "The workflow that waited for this run ran out of time.", "by": "wf"}
    decision = ending(history, CANCEL_KEY, later(1), payload)
    asked, rejected = decision.records
    assert (asked.type, asked.data) == (RUN_CANCEL_REQUESTED, {"kind": "deadline", "reason": payload["reason"]})
    assert asked.metadata == {**run_metadata(), "causation_id": None, "by": "wf"}
    assert rejected.data == Rejection("cancelled", payload["reason"], kind="deadline").as_record()
    assert rejected.metadata == {**run_metadata(), "causation_id": asked.id, "by": "wf"}


def test_a_recorded_cancel_ends_the_run_rejected_by_whoever_asked() -> None:
    history = History()
    opened(history, request())
    (asked,) = history.add([NewRecord(RUN_CANCEL_REQUESTED, {"kind": "requested"}, {"by": "key:ops"})])
    (rejected,) = ending(history, CANCEL_KEY).records
    assert rejected.data == Rejection("cancelled", "The run was cancelled by key:ops.", kind="requested").as_record()
    assert (rejected.metadata["causation_id"], rejected.metadata["by"]) == (asked.id, "key:ops")


def test_the_expiry_ends_an_unanswered_request_only_once_its_moment_came() -> None:
    history = History()
    _, requested = opened(history, request())
    early = ending(history, EXPIRE_KEY, later(59))
    assert (early.reply, early.writes) == (False, False)
    decision = ending(history, EXPIRE_KEY, later(60))
    (rejected,) = decision.records
    expected = Rejection(
        "unanswered", "Nobody answered the request before it expired at 2025-03-01T10:00:00.000Z.", kind="expired"
    )
    assert rejected.data == expected.as_record()
    assert rejected.metadata == {**run_metadata(), "causation_id": requested.id, "by": "playbook:desk"}


def test_the_ending_of_a_workflows_callee_arms_its_callers_answer() -> None:
    history = History()
    called_by = {"run_id": CALLER_RUN_ID, "reference": "do/0/ask", "run": 1}
    opened(history, request(), called_by=called_by)
    decision = ending(history, EXPIRE_KEY, later(61))
    (answer_entry,) = decision.due_work.arm
    assert (answer_entry.run_id, answer_entry.key, answer_entry.due_at) == (
        CALLER_RUN_ID,
        answer_key(RUN_ID),
        later(61),
    )
    assert answer_entry.payload["status"] == "rejected"


@pytest.mark.parametrize("entry_key", [SETTLE_KEY, EXPIRE_KEY, CANCEL_KEY])
def test_an_ended_run_or_a_run_with_no_request_ends_nothing(entry_key: str) -> None:
    assert ending(History(), entry_key).writes is False
    history = History()
    opened(history, request())
    history.add([NewRecord(RUN_REJECTED, {"reason": "unanswered", "kind": "expired"}, {})])
    decision = ending(history, entry_key, later(90))
    assert (decision.reply, decision.writes) == (False, False)
