"""The summaries of a workflow's events say in words what happened: the input and its steps, each step's
outcome, a called run's rejection kind and `because`, a deferral and a refused reaction."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from auto_runtime.ledger import Record, StreamName
from auto_runtime.playbooks.event_view import summary_of

WORKFLOW = {"type": "workflow", "name": "digest", "version": 2}


def record(event_type: str, data: dict[str, Any]) -> Record:
    return Record(
        id="01a22bab-0000-7000-8000-000000000001",
        stream=StreamName("playbook/acme/finance/runs/01a22bab-0000-7000-8000-000000000002"),
        position=2,
        global_position=9,
        type=event_type,
        data=data,
        metadata={"definition": WORKFLOW},
        recorded_at=datetime.now(UTC),
    )


@pytest.mark.parametrize(
    ("event_type", "data", "words"),
    [
        (
            "workflow_input_applied",
            {"input": {"kind": "timer_fired", "key": "k"}, "step_count": 1},
            "The run took a timer fired input and moved 1 step.",
        ),
        (
            "workflow_input_applied",
            {
                "input": {"kind": "call_answered", "status": "rejected", "rejection": {"kind": "tools_called"}},
                "step_count": 2,
            },
            "The run took a call answered input and moved 2 steps; the called run was rejected as tools_called.",
        ),
        (
            "workflow_input_applied",
            {"input": {"kind": "call_answered", "rejection": {"kind": "tools_called", "because": "only_read"}}},
            "The run took a call answered input and moved 0 steps; the called run was rejected as tools_called, "
            "because only_read.",
        ),
        ("step_started", {"name": "loop"}, "The step loop started and runs the steps inside it."),
        ("step_waiting", {"name": "ask", "waits_for": "call"}, "The step ask waits for the run it called."),
        ("step_waiting", {"name": "hear", "waits_for": "event"}, "The step hear waits for an event."),
        ("step_finished", {"name": "set"}, "The step set finished."),
        ("step_failed", {"name": "ask", "outcome": "timed_out"}, "The step ask ran out of time."),
        ("step_failed", {"name": "ask", "outcome": "cancelled"}, "The step ask was cancelled."),
        ("step_skipped", {"name": "maybe"}, "The step maybe was skipped, as its if did not hold."),
        ("run_deferred", {"waits": True}, "The run of the workflow definition digest waits; later inputs move it on."),
    ],
)
def test_a_workflow_event_says_what_happened(event_type: str, data: dict[str, Any], words: str) -> None:
    assert summary_of(record(event_type, data)) == words


def test_a_refused_reaction_says_how_often_and_why() -> None:
    words = summary_of(record("reaction_refused", {"count": 3, "minute": "2026-11-30T08:00Z", "reason": "Too deep."}))
    assert words.startswith("A trigger of the workflow definition digest did not start it 3 time(s) in the minute")
    assert words.endswith(": Too deep.")
