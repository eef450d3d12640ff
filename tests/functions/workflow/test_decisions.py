"""A workflow run's decisions as data, on transitions of the real engine and sandbox, without a server: the
records of an input, its due work (timers, the outbox of calls, an answer to a caller, marks of what fired) and
the events it emits in the same append."""

from __future__ import annotations

from auto_runtime.functions.workflow.decisions import (
    DOCUMENT_DIGEST,
    RUN_DEFERRED,
    emitted_writes,
    input_records,
    transition_due_work,
)
from auto_runtime.functions.workflow.engine.model import ArmTimer, TimerFired
from auto_runtime.ledger import DueKey, PlaybookScope
from auto_runtime.sandbox.engine import SandboxEngine
from tests.functions.workflow.runner import RUN_ID, T0, Run

SCOPE = PlaybookScope("acme", "finance")
HEAD = "document: { dsl: '1.0.3', namespace: tests, name: flow, version: '1.0.0' }\n"
METADATA = {"correlation_id": RUN_ID, "by": "caller-1", "run_id": RUN_ID, "definition": {"type": "workflow"}}


def test_a_first_input_that_waits_records_its_steps_and_run_deferred_and_arms_its_timer(engine: SandboxEngine) -> None:
    run = Run(engine, HEAD + "do:\n  - pause: { wait: PT1H }\n  - done: { set: { ok: true } }\n")
    transition = run.start({})
    records = input_records(transition, METADATA, RUN_ID, "digest-1", first=True)
    applied, *steps, deferred = records
    assert applied.type == "workflow_input_applied" and applied.id == transition.facts[0].id
    assert applied.metadata["state"][DOCUMENT_DIGEST] == "digest-1", "the state names its document by digest"
    assert "document" not in applied.metadata["state"]
    assert all(step.metadata["causation_id"] for step in steps)
    assert (deferred.type, deferred.data, deferred.metadata["causation_id"]) == (
        RUN_DEFERRED,
        {"waits": True},
        applied.id,
    )
    due = transition_due_work(transition, SCOPE, RUN_ID, T0, METADATA)
    purposes = sorted(entry.payload["purpose"] for entry in due.arm)
    assert "wait" in purposes and not due.cancel and not due.fire


def test_an_input_that_ends_the_run_records_its_ending_cancels_its_timers_and_marks_what_fired(
    engine: SandboxEngine,
) -> None:
    run = Run(engine, HEAD + "do:\n  - pause: { wait: PT1H }\n  - done: { set: { ok: true } }\n")
    armed = [o for o in run.start({}).outputs if isinstance(o, ArmTimer)]
    (wait,) = [o for o in armed if o.purpose == "wait"]
    fired = (DueKey(SCOPE, RUN_ID, wait.timer_id),)
    transition = run.apply(TimerFired("I9", wait.due_at, wait.timer_id))
    records = input_records(transition, METADATA, RUN_ID, "digest-1")
    assert records[-1].type == "run_succeeded" and records[-1].data == {"output": {"ok": True}, "record": {}}
    assert RUN_DEFERRED not in [r.type for r in records], "only a first input records run_deferred"
    due = transition_due_work(transition, SCOPE, RUN_ID, wait.due_at, METADATA, fired=fired)
    assert due.fire == fired
    assert {key.key for key in due.cancel} >= {o.timer_id for o in armed if o.purpose == "deadline"}


def test_a_callee_s_ending_is_answered_to_its_caller_through_the_outbox(engine: SandboxEngine) -> None:
    run = Run(engine, HEAD + "do:\n  - done: { set: { ok: true } }\n")
    transition = run.start({})
    called_by = {"run_id": "caller-run", "reference": "/do/0/ask", "run": 1}
    due = transition_due_work(transition, SCOPE, RUN_ID, T0, {**METADATA, "called_by": called_by})
    (answer,) = [entry for entry in due.arm if entry.run_id == "caller-run"]
    assert answer.payload["status"] == "succeeded" and answer.payload["output"] == {"ok": True}


def test_an_emitted_event_is_written_to_its_own_stream_in_the_input_s_append(engine: SandboxEngine) -> None:
    source = HEAD + "do:\n  - tell: { emit: { event: { with: { source: '${ \"/flows\" }', type: com.acme.told } } } }\n"
    run = Run(engine, source)
    transition = run.start({})
    (write,) = emitted_writes(transition, SCOPE, {**METADATA, "depth": 1})
    assert write.expected_version == 0 and "events" in write.stream
    (published,) = write.records
    assert published.type == "event_published"
    assert published.metadata["causation_id"] == transition.facts[0].id and published.metadata["depth"] == 2
