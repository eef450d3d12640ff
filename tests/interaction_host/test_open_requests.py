"""The `open_requests` projection: rows opened by request sources, changed by their facts, closed by answers
and endings; another type adds its requests with a source of its own (settled point 16). And the schedules of
delivery attempts and reply reads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from auto_runtime.functions.interaction.conversations import cadence
from auto_runtime.functions.interaction.delivery_decisions import next_attempt_wait
from auto_runtime.functions.interaction.request_sources import RequestSource
from auto_runtime.interaction_host.open_requests import INTERACTION_SOURCE, listed, open_requests_projection
from auto_runtime.ledger import Record, Row, StreamName

STREAM = StreamName("playbook/acme/desk/runs/r-1")
MOMENT = datetime(2026, 12, 5, tzinfo=UTC)
DEFINITION = {"type": "interaction", "name": "deploy", "version": 2}


def record(kind: str, data: Any, stream: str = STREAM, definition: dict[str, Any] = DEFINITION) -> Record:
    return Record("id", StreamName(stream), 1, 1, kind, data, {"definition": definition}, MOMENT)


def requested(**extra: Any) -> Record:
    data = {
        "to": "ana",
        "message": "May it go out?",
        "takes_answer": True,
        "answer_schema": {"type": "object"},
        "answerer": "ana",
        "reply": {"decision": "word"},
        "requested_at": "2026-12-05T00:00:00.000Z",
        "expires_at": "2026-12-05T01:00:00.000Z",
        **extra,
    }
    return record("interaction_requested", data)


def test_a_request_opens_a_row_its_facts_change_and_its_answer_closes() -> None:
    projection = open_requests_projection()
    assert projection.keys(requested()) == [("acme", "desk", "r-1")]
    row = projection.row_after(None, requested(deliver={"server": "chat", "tool": "send"}))
    assert row is not None
    assert row["standing"] == "to_deliver" and row["delivery"] == {"server": "chat", "tool": "send"}
    row = projection.row_after(row, record("delivery_started", {"number": 1}))
    assert row is not None and (row["standing"], row["attempts"]) == ("delivering", 1)
    row = projection.row_after(row, record("delivery_failed", {"number": 1}))
    assert row is not None and row["standing"] == "retrying"
    row = projection.row_after(row, record("delivery_failed", {"number": 5}))
    assert row is not None and row["standing"] == "undelivered"
    row = projection.row_after(row, record("run_cancel_requested", {}))
    assert row is not None and row["standing"] == "cancelling"
    after_cancel = projection.row_after(row, record("delivery_started", {"number": 6}))
    assert after_cancel is not None and after_cancel["standing"] == "cancelling"
    assert projection.row_after(row, record("request_answered", {"answer": {}})) is None
    assert projection.row_after(row, record("run_rejected", {"reason": "unanswered"})) is None
    assert projection.keys(record("interaction_requested", {}, stream="playbook/acme/desk/events/x")) == []
    assert projection.keys(record("step_started", {})) == []


def test_an_inbox_question_is_listed_with_every_field() -> None:
    row = open_requests_projection().row_after(None, requested())
    assert row is not None
    stored = {**row, "org": "acme", "playbook": "desk", "run_id": "r-1"}
    stored["delivery"] = None
    stored["answer_schema"] = '{"type":"object"}'
    stored["message"] = '"May it go out?"'
    assert listed(stored) == {
        "run_id": "r-1",
        "type": "interaction",
        "function": "deploy",
        "version": 2,
        "to": "ana",
        "delivery": None,
        "message": "May it go out?",
        "takes_answer": True,
        "answer_schema": {"type": "object"},
        "requested_at": "2026-12-05T00:00:00.000Z",
        "expires_at": "2026-12-05T01:00:00.000Z",
        "attempts": 0,
        "conversation": None,
        "answerer": "ana",
        "reply_refusals": 0,
        "standing": "in_inbox",
    }


def test_another_type_adds_its_requests_with_a_source_of_its_own() -> None:
    def build_row(fact: Record) -> Row:
        return {"type": "prediction", "function": "forecast", "standing": "in_inbox", "to_party": fact.data["to"]}

    builds = RequestSource("build_asked", build_row)
    projection = open_requests_projection((INTERACTION_SOURCE, builds))
    asked = record("build_asked", {"to": "trainer"}, definition={"type": "prediction", "name": "forecast"})
    assert projection.keys(asked) == [("acme", "desk", "r-1")]
    row = projection.row_after(None, asked)
    assert row is not None and row["type"] == "prediction" and row["to_party"] == "trainer"
    assert projection.row_after(row, record("run_succeeded", {})) is None
    assert open_requests_projection().keys(asked) == []


def test_the_schedules_of_attempts_and_reads() -> None:
    assert [next_attempt_wait(n, None) for n in (1, 2, 3, 4)] == [timedelta(minutes=m) for m in (1, 2, 4, 8)]
    assert next_attempt_wait(1, 30_000) == timedelta(minutes=1)
    assert next_attempt_wait(1, 180_000) == timedelta(minutes=3)
    assert next_attempt_wait(2, 3_600_000) == timedelta(minutes=8)
    assert [cadence(n).total_seconds() for n in (0, 1, 2, 3, 4, 17, 18, 40)] == [5, 10, 20, 40, 60, 60, 300, 300]
