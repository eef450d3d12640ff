"""Dispatching `StartCall` outputs: running the callee functions and starting the callee workflows.

A `StartCall` is dispatched after the input that made it was appended. `CallDispatcher.dispatch` runs the
callee through `RunService.run_definition` under the callee's run id (`StartCall.run_id`, a uuid5 of the
call), as the caller who started the workflow, with the metadata spec 12.2 asks of a callee: the tree's
top run as `correlation_id`, the caller's `step_waiting` as `causation_id`, `called_by` and `call_depth`.
It turns the ending into a `CallAnswered` input applied to the caller through `RunStore.apply_input`.

Idempotent by the callee's run id: dispatching the same call again (after a crash between the caller's
append and the answer, or by two dispatchers) runs nothing twice — `run_definition` answers a run that
ended under that id again ("Retrying under a run id") — and the caller's state, which took the first
answer, makes any later one stale.

The timer loop dispatches the calls kept in the outbox (`outbox`). A call to a workflow starts the child
run the same way (`run_definition` hands workflows to the workflow runtime); the child's ending answers the
caller through the `answer:` entry its ending append arms, and a start the runtime refuses (no such
workflow, an input its schema refuses, too deep) is answered at once. A dispatch that raises anything but a
`Rejection` leaves the call waiting; the call's wait bound (a timer) then ends the wait.
"""

from __future__ import annotations

from auto_runtime.functions.workflow.engine.model import CallAnswered, StartCall
from auto_runtime.functions.workflow.outbox import answered_later, call_key
from auto_runtime.ledger import DueKey, LeaseFence, PlaybookScope, uuid7
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.problems import Rejection
from auto_runtime.workflow_host.run_store import Applied, LoadedRun, RunStore, UnknownRun

MAX_CALL_DEPTH = 8
"""The deepest `call_depth` a call may start (top run 0); a start at depth 9 is refused as `conflict`."""
TOO_DEEP = "The call would start a run at depth {depth}; calls nest at most 8 deep."
TOO_MANY_OPEN = (
    "The call would make {count} calls wait under the run {top}, more than the {limit} WORKFLOW_MAX_OPEN_CALLS allows."
)


class CallDispatcher:
    """Starts the callees of a workflow's calls: a function that finishes within its request is run and its
    ending applied to the caller at once; a workflow is started, and its own ending answers the caller later
    (the `answer:` entry its ending arms, see `outbox`)."""

    def __init__(self, store: RunStore, runs: RunService, max_open_calls: int = 1000) -> None:
        self.store = store
        self.runs = runs
        self.max_open_calls = max_open_calls

    async def open_calls(self, scope: PlaybookScope, top: str, caller: LoadedRun, run_id: str, key: str) -> int:
        """Where this call stands among the calls waiting in the tree under the top run `top`: the other runs'
        waiting calls, plus its rank among its caller's (by key, so every dispatch counts alike), from 1."""
        others = await self.store.ledger.queries.workflow_runs.open_calls(scope.org, scope.playbook, top, run_id)
        own = sorted(caller.state.calls)
        return others + (own.index(key) + 1 if key in own else len(own) + 1)

    async def dispatch(
        self, scope: PlaybookScope, run_id: str, call: StartCall, fence: LeaseFence | None = None
    ) -> Applied | None:
        """Start the callee of `call` (made by the run `run_id`); apply its ending to the caller when it is known
        now. None when a callee workflow started and answers later. `UnknownRun` when `run_id` is no workflow
        run of the playbook."""
        caller = await self.store.load(scope, run_id)
        if caller is None:
            raise UnknownRun(f"the playbook {scope.playbook} has no workflow run {run_id}")
        depth = caller.call_depth + 1
        top = str(caller.metadata.get("correlation_id", run_id))
        refusal: str | None = None
        if depth > MAX_CALL_DEPTH:
            refusal = TOO_DEEP.format(depth=depth)
        else:
            count = await self.open_calls(scope, top, caller, run_id, call.key)
            if count > self.max_open_calls:
                refusal = TOO_MANY_OPEN.format(count=count, top=top, limit=self.max_open_calls)
        answer: CallAnswered
        if refusal is not None:
            rejection = {"reason": "conflict", "detail": refusal}
            answer = CallAnswered(str(uuid7()), self.store.clock(), call.key, "rejected", rejection=rejection)
            return await self._answer(scope, run_id, call, answer, fence)
        metadata = {
            "correlation_id": top,
            "causation_id": call.cause_id,
            "called_by": {"run_id": run_id, "reference": call.reference, "run": call.run},
            "call_depth": depth,
        }
        caller_id = str(caller.metadata.get("by", ""))
        try:
            shown = await self.runs.run_definition(
                scope, call.definition_type, call.name, call.input, call.run_id, caller_id, metadata
            )
        except Rejection as rejected:
            if rejected.reason == "internal":
                answer = CallAnswered(str(uuid7()), self.store.clock(), call.key, "failed", incident=rejected.instance)
            else:
                answer = CallAnswered(
                    str(uuid7()), self.store.clock(), call.key, "rejected", rejection=rejected.as_record()
                )
        else:
            if answered_later(call.definition_type, shown):
                await self._taken(scope, run_id, call, fence)
                return None
            answer = CallAnswered(str(uuid7()), self.store.clock(), call.key, "succeeded", output=shown.get("output"))
        return await self._answer(scope, run_id, call, answer, fence)

    async def _answer(
        self, scope: PlaybookScope, run_id: str, call: StartCall, answer: CallAnswered, fence: LeaseFence | None
    ) -> Applied:
        """Apply the answer and take the call out of the outbox (its entry marked fired) in one append; alone
        when the caller's state found the answer stale (a crash before that dispatches it again)."""
        taken = DueKey(scope, run_id, call_key(call.run_id))
        applied = await self.store.apply_input(scope, run_id, answer, fence=fence, fired=[taken])
        if applied.stale:
            await self._taken(scope, run_id, call, fence)
        return applied

    async def _taken(self, scope: PlaybookScope, run_id: str, call: StartCall, fence: LeaseFence | None) -> None:
        await self.store.ledger.due_work.mark_fired([DueKey(scope, run_id, call_key(call.run_id))], fence=fence)
