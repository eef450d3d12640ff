"""What a request delivered through a tool records, on typed inputs and without a server: an attempt's start, end
and loss, and a reply's judgement (the records, the due work, the reply of each)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from auto_runtime.functions.interaction.conversations import READ_PREFIX, conversation_id
from auto_runtime.functions.interaction.decisions import SETTLE_KEY
from auto_runtime.functions.interaction.delivery_decisions import (
    LOST_AFTER,
    MAX_REFUSALS,
    MAX_TOLD,
    AttemptEnd,
    AttemptLoss,
    AttemptStart,
    ReplyJudgement,
    next_attempt_wait,
)
from auto_runtime.functions.workflow.outbox import answer_key
from auto_runtime.ledger import DueEntry, DueKey, NewRecord, Record
from auto_runtime.problems import Rejection
from auto_runtime.runs.facts import RUN_CANCEL_REQUESTED, RUN_REJECTED
from auto_runtime.runs.interaction_messages import (
    DeliveryOutcome,
    EndDelivery,
    JudgeReply,
    LoseDelivery,
    ReplyJudged,
    StartDelivery,
    Telling,
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

SECRET = "s3cr3t-token"
STARTED_DATA = {"number": 1, "server": "desk", "tool": "say", "arguments_bytes": 2, "content_kept": True}
SENT = {"message": {"room": "r-1", "key": "m-1"}}


def scrub(text: str) -> str:
    return text.replace(SECRET, "[redacted]")


def attempt(number: int) -> DueEntry:
    return DueEntry(SCOPE, RUN_ID, f"interaction:attempt:{number}", AT, {})


def start_attempt(history: History, number: int = 1, **message: Any) -> Any:
    asked = StartDelivery(attempt(number), number, FENCE, AT, **message)
    return AttemptStart().decide(history.loaded, asked)


def started(history: History, number: int = 1, at: Any = AT) -> Record:
    decision = start_attempt(history, number, started={**STARTED_DATA, "number": number})
    (record,) = history.add(decision.records, at)
    return record


def end_attempt(history: History, number: int, outcome: DeliveryOutcome, at: Any = None) -> Any:
    begun = next(r for r in history.records if r.type == "delivery_started" and r.data["number"] == number)
    message = EndDelivery(number, begun.id, outcome, 1500, FENCE, at or later(1))
    return AttemptEnd(scrub).decide(history.loaded, message)


# -- an attempt's start ------------------------------------------------------------------------------------------


def test_an_attempt_starts_with_its_lost_entry_armed_and_its_entry_fired() -> None:
    history = History()
    _, requested = opened(history, request(delivered=True))
    decision = start_attempt(history, started=STARTED_DATA)
    (begun,) = decision.records
    assert decision.reply == begun.id
    assert (begun.type, begun.data) == ("delivery_started", STARTED_DATA)
    assert begun.metadata == {**run_metadata(), "causation_id": requested.id, "by": "runtime"}
    assert decision.due_work.arm == [DueEntry(SCOPE, RUN_ID, "interaction:lost:1", AT + LOST_AFTER, {})]
    assert list(decision.due_work.fire) == [DueKey(SCOPE, RUN_ID, "interaction:attempt:1")]
    assert decision.fence == FENCE


@pytest.mark.parametrize("stop", ["answered", "cancelling", "ended", "started_before", "no_request"])
def test_no_attempt_starts_on_a_request_that_stopped(stop: str) -> None:
    history = History()
    if stop != "no_request":
        opened(history, request(delivered=True))
    if stop == "answered":
        history.add([NewRecord("request_answered", {"answer": {"decision": "go"}}, {})])
    if stop == "cancelling":
        history.add([NewRecord(RUN_CANCEL_REQUESTED, {"kind": "requested"}, {})])
    if stop == "ended":
        history.add([NewRecord(RUN_REJECTED, {"reason": "unanswered"}, {})])
    if stop == "started_before":
        started(history)
    decision = start_attempt(history, started=STARTED_DATA)
    assert (decision.reply, decision.writes) == (None, False)


def test_an_attempt_whose_arguments_cannot_be_made_is_refused_and_a_notification_ends_undelivered() -> None:
    history = History()
    called_by = {"run_id": CALLER_RUN_ID, "reference": "do/0/tell", "run": 1}
    _, requested = opened(history, request(takes_answer=False, delivered=True), called_by=called_by)
    decision = start_attempt(history, refusal=("too_large", "The arguments take more than 65,536 bytes as JSON."))
    refused, rejected = decision.records
    assert decision.reply is None
    assert (refused.type, refused.data) == (
        "delivery_refused",
        {"number": 1, "because": "too_large", "detail": "The arguments take more than 65,536 bytes as JSON."},
    )
    assert refused.metadata["causation_id"] == requested.id
    expected = Rejection(
        "unanswered", "The notification could not be delivered: its attempts are spent.", kind="undelivered"
    )
    assert rejected.data == expected.as_record()
    assert (rejected.metadata["causation_id"], rejected.metadata["by"]) == (refused.id, "playbook:desk")
    (caller,) = decision.due_work.arm
    assert (caller.run_id, caller.key, caller.payload["status"]) == (CALLER_RUN_ID, answer_key(RUN_ID), "rejected")
    assert list(decision.due_work.fire) == [DueKey(SCOPE, RUN_ID, "interaction:attempt:1")]


def test_a_refused_question_stays_open() -> None:
    history = History()
    opened(history, request(delivered=True))
    decision = start_attempt(history, refusal=("unworkable", "The arguments of deliver cannot be rendered: x"))
    assert [r.type for r in decision.records] == ["delivery_refused"]
    assert list(decision.due_work.arm) == []


# -- an attempt's end --------------------------------------------------------------------------------------------


def test_a_question_delivered_records_where_it_landed_and_wakes_its_conversation() -> None:
    history = History()
    opened(history, request(delivered=True))
    begun = started(history)
    outcome = DeliveryOutcome(None, f'{{"message": "{SECRET}"}}', 41, True, SENT)
    decision = end_attempt(history, 1, outcome)
    (succeeded,) = decision.records
    assert decision.reply is True
    assert succeeded.type == "delivery_succeeded"
    assert succeeded.data == {
        "number": 1,
        "result_bytes": len('{"message": "[redacted]"}'),
        "result_sha256": succeeded.data["result_sha256"],
        "content_kept": True,
        "duration_ms": 1500,
        "jsonrpc_id": 41,
        "delivered_as": {"conversation": "r-1", "id": "m-1"},
        "replies_in": {"server": "desk", "tool": "replies", "key": "r-1"},
    }
    assert succeeded.metadata == {**run_metadata(), "causation_id": begun.id, "by": "runtime"}
    assert list(decision.due_work.cancel) == [DueKey(SCOPE, RUN_ID, "interaction:lost:1")]
    (read,) = decision.due_work.arm
    assert (read.run_id, read.due_at) == (conversation_id("desk", "replies", "r-1"), later(1) + timedelta(seconds=5))
    assert read.key.startswith(READ_PREFIX)
    assert read.payload == {"server": "desk", "tool": "replies", "key": "r-1", "reads": 0}


def test_a_notification_delivered_ends_succeeded_with_the_tools_answer() -> None:
    history = History()
    opened(history, request(takes_answer=False, delivered=True))
    started(history)
    decision = end_attempt(history, 1, DeliveryOutcome(None, "{}", None, True, SENT), later(2))
    succeeded, ending = decision.records
    assert "jsonrpc_id" not in succeeded.data
    assert "replies_in" not in succeeded.data
    assert ending.type == "run_succeeded"
    assert ending.data == {
        "output": SENT,
        "record": {"delivered_at": "2025-03-01T09:02:00.000Z", "delivered_as": {"conversation": "r-1", "id": "m-1"}},
    }
    assert ending.metadata["causation_id"] == succeeded.id


def test_a_delivery_with_nothing_readable_where_it_landed_says_so() -> None:
    history = History()
    opened(history, request(delivered=True))
    started(history)
    (succeeded,) = end_attempt(history, 1, DeliveryOutcome(None, "ok", None, False, None)).records
    assert succeeded.data["detail"] == (
        "Nothing readable at /message/room: the message went out, but the request takes no reply."
    )
    assert "delivered_as" not in succeeded.data


def test_a_failed_attempt_arms_the_next_after_its_wait_or_the_servers_longer_retry_after() -> None:
    history = History()
    opened(history, request(delivered=True))
    started(history)
    failure = {"because": "server_failure", "detail": f"down ({SECRET})", "retry_after_ms": 150_000}
    decision = end_attempt(history, 1, DeliveryOutcome(failure))
    (failed,) = decision.records
    assert failed.data == {
        "number": 1,
        "duration_ms": 1500,
        "because": "server_failure",
        "retry_after_ms": 150_000,
        "detail": "down ([redacted])",
    }
    (following,) = decision.due_work.arm
    assert (following.key, following.due_at) == ("interaction:attempt:2", later(1) + next_attempt_wait(1, 150_000))
    assert next_attempt_wait(1, 150_000) == timedelta(milliseconds=150_000)


def test_the_fifth_failure_spends_the_attempts() -> None:
    history = History()
    opened(history, request(takes_answer=False, delivered=True))
    started(history, 5)
    decision = end_attempt(history, 5, DeliveryOutcome({"because": "timed_out", "detail": "No answer."}))
    assert [r.type for r in decision.records] == ["delivery_failed", RUN_REJECTED]
    assert list(decision.due_work.arm) == []


def test_an_attempt_that_ends_twice_or_after_its_run_ended_records_nothing() -> None:
    history = History()
    opened(history, request(delivered=True))
    started(history)
    history.add(end_attempt(history, 1, DeliveryOutcome({"because": "timed_out", "detail": "x"})).records)
    again = end_attempt(history, 1, DeliveryOutcome(None, "{}", None, True, SENT))
    assert (again.reply, again.writes) == (False, False)
    ended = History()
    opened(ended, request(delivered=True))
    started(ended)
    ended.add([NewRecord(RUN_REJECTED, {"reason": "cancelled"}, {})])
    assert end_attempt(ended, 1, DeliveryOutcome(None, "{}", None, True, SENT)).writes is False


def test_an_attempt_lost_fails_lost_fires_its_entry_and_arms_the_next() -> None:
    history = History()
    opened(history, request(delivered=True))
    begun = started(history, 2)
    lost = DueEntry(SCOPE, RUN_ID, "interaction:lost:2", later(1), {})
    decision = AttemptLoss(scrub).decide(history.loaded, LoseDelivery(lost, 2, FENCE, later(3)))
    (failed,) = decision.records
    assert failed.data == {
        "number": 2,
        "duration_ms": 180_000,
        "because": "lost",
        "detail": "The attempt did not finish within a minute; the server may have stopped.",
    }
    assert failed.metadata["causation_id"] == begun.id
    assert list(decision.due_work.fire) == [lost.due_key]
    assert list(decision.due_work.cancel) == []
    assert [(e.key, e.due_at) for e in decision.due_work.arm] == [
        ("interaction:attempt:3", later(3) + timedelta(minutes=2))
    ]
    history.add(decision.records)
    after = AttemptLoss(scrub).decide(history.loaded, LoseDelivery(lost, 2, FENCE, later(4)))
    assert (after.reply, after.writes) == (False, False)


# -- a reply read ------------------------------------------------------------------------------------------------


async def judge(history: History, text: str, *, sender: str = "ana", reply_id: str = "m-9", **extra: Any) -> Any:
    message = JudgeReply({"id": reply_id, "sender": sender, "text": text}, "desk", "replies", later(7), **extra)
    return await ReplyJudgement().decide(history.loaded, message)


def delivered_question(history: History) -> Record:
    _, requested = opened(history, request(delivered=True))
    started(history)
    history.add(end_attempt(history, 1, DeliveryOutcome(None, "{}", None, True, SENT)).records)
    return requested


async def test_a_reply_that_fits_is_the_answer_and_arms_the_settle_entry() -> None:
    history = History()
    requested = delivered_question(history)
    decision = await judge(history, "ship it tonight")
    (answered,) = decision.records
    assert decision.reply == ReplyJudged("taken")
    assert answered.type == "request_answered"
    assert answered.data == {
        "answer": {"decision": "go", "reason": "it tonight"},
        "answered_by": "playbook:desk",
        "reply": {"id": "m-9", "sender": "ana"},
        "server": "desk",
        "tool": "replies",
    }
    assert answered.metadata == {**run_metadata(), "causation_id": requested.id, "by": "playbook:desk"}
    assert decision.due_work.arm == [DueEntry(SCOPE, RUN_ID, SETTLE_KEY, later(7), {})]


async def test_a_reply_that_gives_no_answer_is_refused_and_told() -> None:
    history = History()
    delivered_question(history)
    decision = await judge(history, "perhaps")
    (refused,) = decision.records
    assert refused.data == {
        "server": "desk",
        "tool": "replies",
        "reply": {"id": "m-9", "sender": "ana"},
        "because": "not_an_answer",
        "told": True,
    }
    assert decision.reply == ReplyJudged(
        "refused",
        Telling("not_an_answer", [], refused.id, request(delivered=True), {"conversation": "r-1", "id": "m-1"}),
    )
    assert not decision.due_work


@pytest.mark.parametrize(
    ("text", "extra", "because"),
    [("go", {"ambiguous": True}, "ambiguous"), ("go " + "x" * 8200, {}, "too_long")],
)
async def test_an_ambiguous_or_too_long_reply_is_refused(text: str, extra: dict[str, Any], because: str) -> None:
    history = History()
    delivered_question(history)
    decision = await judge(history, text, **extra)
    assert decision.records[0].data["because"] == because


async def test_a_reply_whose_answer_does_not_fit_is_invalid_at_its_pointer() -> None:
    history = History()
    delivered_question(history)
    schema = {"type": "object", "properties": {"reason": {"type": "string", "maxLength": 3}}}
    history.records[1] = _with_schema(history.records[1], schema)
    decision = await judge(history, "ship far too long a reason")
    (refused,) = decision.records
    assert refused.data["because"] == "invalid"
    assert [issue["pointer"] for issue in refused.data["issues"]] == ["/answer/reason"]


def _with_schema(record: Record, schema: dict[str, Any]) -> Record:
    data = {**record.data, "answer_schema": {**record.data["answer_schema"], **schema}}
    return Record(
        record.id,
        record.stream,
        record.position,
        record.position,
        record.type,
        data,
        record.metadata,
        record.recorded_at,
    )


async def test_replies_from_another_sender_judged_already_or_past_the_caps_leave_no_trace() -> None:
    history = History()
    delivered_question(history)
    assert (await judge(history, "go", sender="bo")).writes is False
    for n in range(MAX_REFUSALS):
        decision = await judge(history, "perhaps", reply_id=f"r-{n}")
        assert decision.reply.outcome == "refused"
        assert decision.records[0].data["told"] is (n < MAX_TOLD)
        assert (decision.reply.telling is not None) is (n < MAX_TOLD)
        history.add(decision.records)
    assert (await judge(history, "perhaps", reply_id="r-0")).reply == ReplyJudged("nothing")
    assert (await judge(history, "perhaps", reply_id="r-new")).writes is False
    assert (await judge(history, "go", reply_id="r-1")).writes is False


async def test_a_reply_to_an_answered_or_ended_request_leaves_no_trace() -> None:
    history = History()
    delivered_question(history)
    history.add((await judge(history, "go")).records)
    assert (await judge(history, "hold", reply_id="m-10")).reply == ReplyJudged("nothing")
