"""A prediction build's decisions on typed inputs, without a server: its first facts and slot claim, its candidates,
its answer and its endings (the records, due work, reply and refusals each decides)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import pytest

from auto_runtime.functions.prediction.build_facts import (
    BUILD_ASKED,
    BUILD_ENDED,
    CANDIDATE_REFUSED,
    CANDIDATE_UPLOADED,
    DATASET_ASSEMBLED,
    DISCARD_KEY,
    REQUEST_ANSWERED,
    SCORE_KEY,
    score_run_id,
)
from auto_runtime.functions.prediction.decisions import (
    StartState,
    build_slot,
    decide_answer,
    decide_candidate,
    decide_ending,
    decide_start,
)
from auto_runtime.ledger import DueEntry, DueWorkChanges, LeaseFence, NewRecord, PlaybookScope, Record
from auto_runtime.playbooks.run_slots import SLOT_CLAIMED, SlotReading
from auto_runtime.problems import Rejection
from auto_runtime.runs.facts import RUN_CANCEL_REQUESTED, RUN_REJECTED, RUN_STARTED, RUN_SUCCEEDED, run_stream
from auto_runtime.runs.prediction_messages import (
    AnswerBuild,
    EndBuildPastDeadline,
    EndCancelledBuild,
    ExpireBuild,
    RecordBuildStart,
    RefuseCandidate,
    ScoreBuild,
    UploadCandidate,
)

SCOPE = PlaybookScope("acme", "forecasts")
RUN_ID = "0190a6f0-0000-7000-8000-000000000001"
OTHER_RUN = "0190a6f0-0000-7000-8000-000000000002"
STREAM = run_stream(SCOPE, RUN_ID)
AT = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
FENCE = LeaseFence("workflow-host", "server-a", 7)
FIRED = DueEntry(SCOPE, RUN_ID, SCORE_KEY, AT, {"run_id": RUN_ID})
DISCARD = DueEntry(SCOPE, RUN_ID, DISCARD_KEY, AT, {"run_id": RUN_ID})
DIGEST = "a" * 64
METADATA: dict[str, Any] = {
    "correlation_id": RUN_ID,
    "causation_id": None,
    "by": "key:starter",
    "run_id": RUN_ID,
    "definition": {"type": "prediction", "name": "units", "version": 2},
}


def fact(kind: str, data: dict[str, Any], **metadata: Any) -> NewRecord:
    return NewRecord(kind, data, {**METADATA, **metadata})


def recorded(facts: Iterable[NewRecord]) -> list[Record]:
    """The facts as the ledger would hold them on the build's stream."""
    return [
        Record(new.id, STREAM, position, position, new.type, new.data, dict(new.metadata), AT)
        for position, new in enumerate(facts, start=1)
    ]


STARTED = fact(RUN_STARTED, {"input": {"build": {}}, "input_digest": "d", "waits": True})
ASKED = [
    STARTED,
    fact(DATASET_ASSEMBLED, {"dataset": "b" * 64}),
    fact("baseline_scored", {"mase": 1}),
    fact(BUILD_ASKED, {"to": "units-trainers", "delivery": None}),
]
UPLOADED = fact(CANDIDATE_UPLOADED, {"candidate": DIGEST, "bytes": 10, "opset": 17, "accepted": 1}, by="key:t")
ANSWERED = fact(REQUEST_ANSWERED, {"answer": {"candidates": [DIGEST]}}, by="key:t")


def refusal(call: Any) -> Rejection:
    with pytest.raises(Rejection) as raised:
        call()
    return raised.value


# -- the start ---------------------------------------------------------------------------------------------------


def start_message(*, claims_slot: bool = True) -> RecordBuildStart:
    due = DueWorkChanges(arm=[DueEntry(SCOPE, RUN_ID, "prediction-build/expire", AT, {"run_id": RUN_ID})])
    return RecordBuildStart("units", tuple(ASKED), due, claims_slot, "key:starter")


def test_a_waiting_build_records_its_first_facts_and_claims_the_slot_in_the_same_append() -> None:
    message = start_message()
    decision = decide_start(StartState(SCOPE, RUN_ID, (), SlotReading(3, OTHER_RUN, going_on=False)), message)
    assert decision.reply is True
    assert list(decision.records) == list(ASKED)
    assert decision.due_work == message.due_work
    (claim,) = decision.other_writes
    assert claim.stream == "org/acme/run-slots/forecasts/prediction-build/units"
    assert claim.stream == build_slot("units").stream(SCOPE)
    assert claim.expected_version == 3
    (record,) = claim.records
    assert (record.type, record.data, record.metadata) == (SLOT_CLAIMED, {"run_id": RUN_ID}, {"by": "key:starter"})


def test_the_first_build_of_a_function_claims_the_slot_at_version_zero() -> None:
    decision = decide_start(StartState(SCOPE, RUN_ID, (), SlotReading(0)), start_message())
    assert [write.expected_version for write in decision.other_writes] == [0]


def test_a_build_going_on_holds_the_slot_against_another_start() -> None:
    state = StartState(SCOPE, RUN_ID, (), SlotReading(4, OTHER_RUN, going_on=True))
    refused = refusal(lambda: decide_start(state, start_message()))
    assert (refused.reason, refused.kind) == ("conflict", "build_in_progress")
    assert refused.detail == "A build of the prediction function units has not ended; wait for it or cancel it."


def test_the_slot_claimed_by_the_same_run_does_not_refuse_it() -> None:
    state = StartState(SCOPE, RUN_ID, (), SlotReading(4, RUN_ID, going_on=True))
    assert decide_start(state, start_message()).reply is True


def test_a_build_that_ended_within_its_start_claims_nothing() -> None:
    state = StartState(SCOPE, RUN_ID, (), None)
    decision = decide_start(state, start_message(claims_slot=False))
    assert decision.reply is True and list(decision.records) == list(ASKED) and not decision.other_writes


def test_a_run_another_request_recorded_meanwhile_records_nothing() -> None:
    state = StartState(SCOPE, RUN_ID, tuple(recorded([STARTED])), SlotReading(0))
    decision = decide_start(state, start_message())
    assert decision.reply is False and not decision.writes


# -- candidates --------------------------------------------------------------------------------------------------


def test_an_accepted_candidate_is_recorded_by_its_uploader_with_the_count_accepted() -> None:
    decision = decide_candidate(RUN_ID, recorded([*ASKED, UPLOADED]), UploadCandidate("c" * 64, 20, 18, "key:u"))
    (record,) = decision.records
    assert record.type == CANDIDATE_UPLOADED
    assert record.data == {"candidate": "c" * 64, "bytes": 20, "opset": 18, "accepted": 2}
    assert record.metadata == {**METADATA, "by": "key:u", "causation_id": None}


def test_the_same_accepted_candidate_again_records_nothing() -> None:
    decision = decide_candidate(RUN_ID, recorded([*ASKED, UPLOADED]), UploadCandidate(DIGEST, 10, 17, "key:u"))
    assert not decision.writes and decision.fresh_only


def test_a_refused_candidate_records_why() -> None:
    decision = decide_candidate(RUN_ID, recorded(ASKED), RefuseCandidate(DIGEST, 10, "opset", "key:u"))
    (record,) = decision.records
    assert (record.type, record.data) == (CANDIDATE_REFUSED, {"candidate": DIGEST, "bytes": 10, "because": "opset"})


@pytest.mark.parametrize(
    "after",
    [
        ANSWERED,
        fact(RUN_CANCEL_REQUESTED, {"kind": "requested"}),
        fact(BUILD_ENDED, {"outcome": "expired"}),
    ],
)
def test_a_build_that_took_its_answer_or_ended_takes_no_candidate(after: NewRecord) -> None:
    history = recorded([*ASKED, UPLOADED, after])
    refused = refusal(lambda: decide_candidate(RUN_ID, history, UploadCandidate("c" * 64, 1, 17, "key:u")))
    assert (refused.reason, refused.kind) == ("conflict", "build_ended")
    assert refused.detail == f"The build {RUN_ID} took its answer or ended."


# -- the answer --------------------------------------------------------------------------------------------------


def answer(candidates: Any, claimed_for: str | None = None) -> AnswerBuild:
    return AnswerBuild({"candidates": candidates}, claimed_for, "key:trainer", AT)


def test_an_answer_records_request_answered_and_arms_the_scoring() -> None:
    decision = decide_answer(SCOPE, RUN_ID, recorded([*ASKED, UPLOADED]), answer([DIGEST], "ana"))
    assert decision.reply is None
    (record,) = decision.records
    assert record.type == REQUEST_ANSWERED
    assert record.data == {"answer": {"candidates": [DIGEST]}, "claimed_for": "ana"}
    assert record.metadata == {**METADATA, "by": "key:trainer", "causation_id": None}
    assert decision.due_work == DueWorkChanges(
        arm=[DueEntry(SCOPE, score_run_id(RUN_ID), SCORE_KEY, AT, {"run_id": RUN_ID})]
    )


def test_the_same_answer_again_answers_the_recorded_fact_and_another_is_refused() -> None:
    history = recorded([*ASKED, UPLOADED, ANSWERED])
    again = decide_answer(SCOPE, RUN_ID, history, answer([DIGEST]))
    assert not again.writes
    assert again.reply == {
        "run_id": RUN_ID,
        "answer_id": ANSWERED.id,
        "answer": {"candidates": [DIGEST]},
        "answered_by": "key:t",
        "answered_at": "2025-03-01T09:00:00.000Z",
    }
    refused = refusal(lambda: decide_answer(SCOPE, RUN_ID, history, answer([])))
    assert refused.detail == f"The build {RUN_ID} took another answer already."


def test_an_answer_is_checked_in_order() -> None:
    assert refusal(lambda: decide_answer(SCOPE, RUN_ID, [], answer([]))).reason == "not_found"
    question = recorded([fact(RUN_STARTED, {"input": {"series": "a"}, "input_digest": "d"})])
    assert "takes no answer" in refusal(lambda: decide_answer(SCOPE, RUN_ID, question, answer([]))).detail
    cancelled = recorded([*ASKED, fact(RUN_CANCEL_REQUESTED, {"kind": "requested"})])
    refused = refusal(lambda: decide_answer(SCOPE, RUN_ID, cancelled, answer([DIGEST])))
    assert refused.detail == f"The build {RUN_ID} has ended or was asked to cancel, so it takes no answer."
    history = recorded([*ASKED, UPLOADED])
    wrong = refusal(lambda: decide_answer(SCOPE, RUN_ID, history, AnswerBuild({"picks": 1}, None, "k", AT)))
    assert wrong.reason == "invalid_input"
    assert [issue.pointer for issue in wrong.errors] == ["/answer/picks", "/answer"]
    unknown = refusal(lambda: decide_answer(SCOPE, RUN_ID, history, answer([DIGEST, "c" * 64])))
    assert [issue.pointer for issue in unknown.errors] == ["/answer/candidates/1"]


# -- endings -----------------------------------------------------------------------------------------------------

ANSWERED_BUILD = [*ASKED, UPLOADED, ANSWERED]


def test_a_scored_build_records_its_facts_arms_its_work_and_marks_its_entry_in_one_append() -> None:
    scored = (
        fact(BUILD_ENDED, {"outcome": "built", "version": 1, "state": "shadowing"}, by="playbook:forecasts"),
        fact(RUN_SUCCEEDED, {"output": {"version": 1}}, by="playbook:forecasts"),
    )
    shadow = DueEntry(SCOPE, "models", "prediction-shadow/units/x", AT, {"function": "units"})
    decision = decide_ending(SCOPE, RUN_ID, recorded(ANSWERED_BUILD), ScoreBuild(scored, (shadow,), FIRED, FENCE))
    assert decision.reply is True
    assert list(decision.records) == list(scored)
    assert decision.due_work == DueWorkChanges(fire=[FIRED.due_key], arm=[shadow, DISCARD])
    assert decision.fence == FENCE


def test_every_ending_arms_the_discard_of_the_staged_candidates_due_when_its_entry_was() -> None:
    """§13: staged until the build ends. The discard is due work armed in the ending's own append, so a discard
    that fails, or a server that stops between the two, leaves it armed for a later sweep."""
    cancel = fact(RUN_CANCEL_REQUESTED, {"kind": "requested"})
    endings = [
        (recorded([*ANSWERED_BUILD, cancel]), EndCancelledBuild(FIRED, FENCE)),
        (recorded(ASKED), ExpireBuild(FIRED, FENCE)),
        (recorded(ANSWERED_BUILD), EndBuildPastDeadline(FIRED, FENCE)),
    ]
    for history, message in endings:
        decision = decide_ending(SCOPE, RUN_ID, history, message)
        assert decision.reply is True
        assert decision.due_work == DueWorkChanges(fire=[FIRED.due_key], arm=[DISCARD])


def test_a_cancel_ends_the_build_by_its_caller_caused_by_it() -> None:
    cancel = fact(RUN_CANCEL_REQUESTED, {"kind": "requested", "reason": "Not now."}, by="key:boss")
    decision = decide_ending(SCOPE, RUN_ID, recorded([*ANSWERED_BUILD, cancel]), EndCancelledBuild(FIRED, FENCE))
    ended, rejected = decision.records
    assert (ended.type, ended.data) == (BUILD_ENDED, {"outcome": "cancelled", "because": "requested"})
    assert rejected.type == RUN_REJECTED
    assert (rejected.data["reason"], rejected.data["kind"], rejected.data["detail"]) == (
        "cancelled",
        "requested",
        "Not now.",
    )
    by_the_canceller = {**METADATA, "by": "key:boss", "causation_id": cancel.id}
    assert ended.metadata == rejected.metadata == by_the_canceller


def test_a_build_asked_to_cancel_is_not_scored_expired_or_timed_out() -> None:
    cancel = fact(RUN_CANCEL_REQUESTED, {"kind": "requested"})
    history = recorded([*ANSWERED_BUILD, cancel])
    for message in (ScoreBuild((), (), FIRED, FENCE), ExpireBuild(FIRED, FENCE), EndBuildPastDeadline(FIRED, FENCE)):
        decision = decide_ending(SCOPE, RUN_ID, history, message)
        assert decision.reply is False and not decision.writes and decision.fresh_only


def test_an_unanswered_build_expires_and_an_answered_one_does_not() -> None:
    expired = decide_ending(SCOPE, RUN_ID, recorded(ASKED), ExpireBuild(FIRED, FENCE))
    ended, rejected = expired.records
    assert ended.data == {"outcome": "expired"}
    assert (rejected.data["reason"], rejected.data["kind"]) == ("unanswered", "expired")
    assert ended.metadata == {**METADATA, "by": "playbook:forecasts", "causation_id": None}
    assert not decide_ending(SCOPE, RUN_ID, recorded(ANSWERED_BUILD), ExpireBuild(FIRED, FENCE)).writes


def test_an_answered_build_past_its_deadline_is_not_built() -> None:
    decision = decide_ending(SCOPE, RUN_ID, recorded(ANSWERED_BUILD), EndBuildPastDeadline(FIRED, FENCE))
    ended, rejected = decision.records
    assert ended.data == {"outcome": "not_built", "because": "timed_out"}
    assert (rejected.data["kind"], rejected.data["because"]) == ("not_built", "timed_out")
    assert not decide_ending(SCOPE, RUN_ID, recorded(ASKED), EndBuildPastDeadline(FIRED, FENCE)).writes


def test_an_ended_build_records_no_second_ending() -> None:
    history = recorded([*ASKED, fact(BUILD_ENDED, {"outcome": "expired"}), fact(RUN_REJECTED, {"reason": "x"})])
    for message in (EndCancelledBuild(FIRED, FENCE), ExpireBuild(FIRED, FENCE)):
        assert not decide_ending(SCOPE, RUN_ID, history, message).writes
