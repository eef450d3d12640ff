"""Cancelling a run whose type finishes it after its request (a workflow's, an interaction request's, a build's):
the message `CancelRun`, and the decision that records `run_cancel_requested` on the run's stream with, in the
same append, the due entry by which the type's runtime applies it on the lease holder.

A run asked already records nothing (a second request at the same moment records once); a run that has ended
is refused with the one text every path gives (`ended_run_refusal`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from auto_runtime.ledger import DueEntry, DueWorkChanges, NewRecord
from auto_runtime.problems import Rejection, conflict, unavailable
from auto_runtime.runs.deciders import HistoryDecider, RunHistory
from auto_runtime.runs.decision import Decision, Loaded
from auto_runtime.runs.facts import RUN_CANCEL_REQUESTED, carried_metadata
from auto_runtime.runs.messages import RunMessage
from auto_runtime.runs.view import fold_run
from auto_runtime.runs.writer import RunWriter

EntryOf = Callable[[NewRecord], DueEntry]
"""The due entry that applies the cancellation `run_cancel_requested` records (its record's id at hand)."""


@dataclass(frozen=True)
class CancelRun(RunMessage[dict[str, Any]]):
    """Ask a run still `started` to stop; answered with the run as it stands (`RunService.cancel_run`)."""

    reason: str | None
    caller_id: str


def ended_run_refusal(run_id: str, status: str) -> Rejection:
    """The one refusal of a cancel that meets a run that has ended (seeds, "Cancelling a run": `conflict`, with no
    kind), whichever path meets it: `RunService.cancel_run` reading the run ended, or the decision finding it ended
    on a run that moved meanwhile."""
    return conflict(f"The run {run_id} has ended ({status}), so there is nothing to cancel.")


class CancelRequest(HistoryDecider[CancelRun, bool]):
    """Records the request (True), or nothing when the run was asked already (False)."""

    def __init__(self, entry_of: EntryOf) -> None:
        self.entry_of = entry_of

    def decide(self, loaded: Loaded[RunHistory], message: CancelRun) -> Decision[bool]:
        history = loaded.state
        now = fold_run(history.run_id, history.records)
        if now is None or now.cancel_requested:
            return Decision(False)
        if now.status != "started":
            raise ended_run_refusal(history.run_id, now.status)
        data: dict[str, Any] = {"kind": "requested"}
        if message.reason is not None:
            data["reason"] = message.reason
        metadata = carried_metadata(now.started_metadata)
        record = NewRecord(RUN_CANCEL_REQUESTED, data, {**metadata, "causation_id": None, "by": message.caller_id})
        return Decision(True, [record], DueWorkChanges(arm=[self.entry_of(record)]))


def _kept_moving() -> Exception:
    return unavailable("The run kept moving while the cancellation was recorded; send it again.", retry_after=1)


async def record_cancel_request(writer: RunWriter, message: CancelRun, entry_of: EntryOf) -> bool:
    """Record `run_cancel_requested` by the message's caller and arm `entry_of`'s entry, in the run's actor, unless
    the run was asked already. Whether it recorded: the caller then wakes the loop that runs the entry.

    Raises `ended_run_refusal` when the run has ended, `unavailable` when it kept moving through every attempt."""
    written = await writer.write(CancelRequest(entry_of), message, kept_moving=_kept_moving)
    return written.reply
