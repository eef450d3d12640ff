"""Dispatching calls to functions that finish within their request: the callee runs once under its run id,
with the caller's tree in its metadata, and its ending answers the caller."""

from __future__ import annotations

from auto_runtime.functions.workflow.engine.model import StartCall
from auto_runtime.functions.workflow.outbox import call_of
from auto_runtime.ledger import Ledger, Record, uuid7
from auto_runtime.runs.facts import run_stream
from auto_runtime.workflow_host.calls import CallDispatcher
from auto_runtime.workflow_host.run_store import RunStore
from tests.workflow_host.conftest import SCOPE, definition

CALLING = "do:\n  - double: { call: run_definition, with: { type: computation, name: double, input: { n: 2 } } }\n"


async def outbox_of(ledger: Ledger, run_id: str) -> dict[str, tuple[str, object]]:
    rows = await ledger.due_work.entries_of_run(SCOPE, run_id)
    return {row.key: (row.state, row.payload) for row in rows if row.key.startswith("call:")}


async def history(ledger: Ledger, run_id: str) -> list[Record]:
    return await ledger.read_stream(run_stream(SCOPE, run_id))


async def test_a_call_runs_its_callee_once_and_its_answer_ends_the_caller(
    ledger: Ledger, store: RunStore, dispatcher: CallDispatcher
) -> None:
    run_id = str(uuid7())
    started = await store.start_run(SCOPE, run_id, definition(CALLING), {}, "caller-1")
    (call,) = [o for o in started.outputs if isinstance(o, StartCall)]
    outbox = await outbox_of(ledger, run_id)
    assert list(outbox) == [f"call:{call.run_id}"]
    assert outbox[f"call:{call.run_id}"][0] == "armed"
    assert call_of(outbox[f"call:{call.run_id}"][1]) == call
    answered = await dispatcher.dispatch(SCOPE, run_id, call)
    assert (await outbox_of(ledger, run_id))[f"call:{call.run_id}"][0] == "fired"
    assert answered.status == "succeeded"

    callee = await history(ledger, call.run_id)
    assert [r.type for r in callee] == ["run_started", "run_succeeded"]
    waiting = next(r for r in await history(ledger, run_id) if r.type == "step_waiting")
    assert waiting.data["run_id"] == call.run_id
    assert callee[0].metadata["causation_id"] == waiting.id
    assert callee[0].metadata["correlation_id"] == run_id
    assert callee[0].metadata["called_by"] == {"run_id": run_id, "reference": "/do/0/double", "run": 1}
    assert callee[0].metadata["call_depth"] == 1
    assert callee[0].metadata["by"] == "caller-1"
    caller = await history(ledger, run_id)
    assert caller[-1].type == "run_succeeded"
    assert caller[-1].data["output"] == {"n": 4}

    again = await dispatcher.dispatch(SCOPE, run_id, call)
    assert again.stale
    assert len(await history(ledger, call.run_id)) == 2
    assert len(await history(ledger, run_id)) == len(caller)


async def test_a_rejected_callee_raises_in_the_caller(
    ledger: Ledger, store: RunStore, dispatcher: CallDispatcher
) -> None:
    run_id = str(uuid7())
    started = await store.start_run(SCOPE, run_id, definition(CALLING.replace("double", "raising")), {}, "c")
    (call,) = [o for o in started.outputs if isinstance(o, StartCall)]
    answered = await dispatcher.dispatch(SCOPE, run_id, call)
    assert answered.status == "rejected"
    assert [r.type for r in await history(ledger, call.run_id)] == ["run_started", "run_rejected"]
    caller = await history(ledger, run_id)
    failed = next(r for r in caller if r.type == "step_failed")
    assert failed.data["error"]["title"] == "The computation function raising rejected the run with conflict"
    assert caller[-1].type == "run_rejected"


async def test_a_call_at_depth_nine_is_refused_without_starting_its_callee(
    ledger: Ledger, store: RunStore, dispatcher: CallDispatcher
) -> None:
    top, run_id = str(uuid7()), str(uuid7())
    tree = {"correlation_id": top, "call_depth": 8, "called_by": {"run_id": top, "reference": "/do/0/x", "run": 1}}
    started = await store.start_run(SCOPE, run_id, definition(CALLING), {}, "c", extra_metadata=tree)
    (call,) = [o for o in started.outputs if isinstance(o, StartCall)]
    answered = await dispatcher.dispatch(SCOPE, run_id, call)
    assert answered.status == "rejected"
    assert await history(ledger, call.run_id) == []
    caller = await history(ledger, run_id)
    assert {r.metadata["correlation_id"] for r in caller} == {top}
    assert {r.metadata["call_depth"] for r in caller} == {8}
    failed = next(r for r in caller if r.type == "step_failed")
    assert failed.data["error"]["title"] == "The computation function double rejected the run with conflict"


FORKED_CALLS = "do:\n  - both:\n      fork:\n        branches:\n" + "".join(
    f"          - c{i}: {{ call: run_definition, with: {{ type: computation, name: double, input: {{ n: 1 }} }} }}\n"
    for i in range(3)
)


async def test_calls_past_the_open_call_bound_of_a_tree_are_refused_as_conflict(
    ledger: Ledger, store: RunStore, dispatcher: CallDispatcher
) -> None:
    bounded = CallDispatcher(store, dispatcher.runs, max_open_calls=2)
    run_id = str(uuid7())
    started = await store.start_run(SCOPE, run_id, definition(FORKED_CALLS), {}, "c")
    calls = sorted((o for o in started.outputs if isinstance(o, StartCall)), key=lambda c: c.key)
    assert len(calls) == 3
    third = await bounded.dispatch(SCOPE, run_id, calls[2])
    assert third is not None and third.status == "rejected"
    assert await history(ledger, calls[2].run_id) == []
    failed = next(r for r in await history(ledger, run_id) if r.type == "step_failed")
    assert failed.data["error"]["title"] == "The computation function double rejected the run with conflict"

    other = str(uuid7())
    started = await store.start_run(SCOPE, other, definition(FORKED_CALLS), {}, "c")
    first = min((o for o in started.outputs if isinstance(o, StartCall)), key=lambda c: c.key)
    answered = await bounded.dispatch(SCOPE, other, first)
    assert answered is not None and not answered.stale and answered.status is None
    assert [r.type for r in await history(ledger, first.run_id)] == ["run_started", "run_succeeded"]
