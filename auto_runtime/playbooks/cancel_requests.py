"""Recording a request to cancel a run whose type finishes it after its request (a workflow's, an interaction
request's): `run_cancel_requested` on the run's stream and, in the same append, the due entry by which the
type's runtime applies it on the lease holder.

The append expects the run's stream version: a run that moved meanwhile is read again and asked again, a few
times, so a request recorded twice at once records once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from auto_runtime.ledger import DueEntry, DueWorkChanges, Ledger, NewRecord, PlaybookScope, StreamWrite, VersionConflict
from auto_runtime.runs.facts import RUN_CANCEL_REQUESTED, carried_metadata, run_stream
from auto_runtime.runs.view import RunState
from auto_runtime.problems import Rejection, conflict, unavailable

CANCEL_ATTEMPTS = 8

ReadRun = Callable[[PlaybookScope, str], Awaitable[RunState | None]]
EntryOf = Callable[[NewRecord], DueEntry]
"""The due entry that applies the cancellation `run_cancel_requested` records (its record's id at hand)."""


def ended_run_refusal(run_id: str, status: str) -> Rejection:
    """The one refusal of a cancel that meets a run that has ended (seeds, "Cancelling a run": `conflict`, with no
    kind), whichever path meets it: `RunService.cancel_run` reading the run ended, or `record_cancel_request`
    finding it ended when it reads a run that moved meanwhile."""
    return conflict(f"The run {run_id} has ended ({status}), so there is nothing to cancel.")


async def record_cancel_request(
    ledger: Ledger,
    read_run: ReadRun,
    scope: PlaybookScope,
    state: RunState,
    reason: str | None,
    caller_id: str,
    entry_of: EntryOf,
) -> bool:
    """Record `run_cancel_requested` by `caller_id` and arm `entry_of`'s entry, unless the run was asked already
    (a second request records nothing). `state` is the run as `RunService` read it; it is read again only when
    the run moved meanwhile. Whether it recorded: the caller then wakes the loop that runs the entry.

    Raises `ended_run_refusal` when the run has ended, `unavailable` when it kept moving through every attempt."""
    stream = run_stream(scope, state.run_id)
    now: RunState | None = state
    for _ in range(CANCEL_ATTEMPTS):
        if now is None or now.cancel_requested:
            return False
        if now.status != "started":
            raise ended_run_refusal(state.run_id, now.status)
        data: dict[str, Any] = {"kind": "requested"}
        if reason is not None:
            data["reason"] = reason
        metadata = carried_metadata(now.started_metadata)
        record = NewRecord(RUN_CANCEL_REQUESTED, data, {**metadata, "causation_id": None, "by": caller_id})
        entry = entry_of(record)
        try:
            write = StreamWrite(stream, now.stream_version, [record])
            await ledger.append([write], due_work=DueWorkChanges(arm=[entry]))
        except VersionConflict:
            now = await read_run(scope, state.run_id)
            continue
        return True
    raise unavailable("The run kept moving while the cancellation was recorded; send it again.", retry_after=1)
