"""A run as `get_run` shows it, folded from its stream."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from auto_runtime.clock_text import iso_utc
from auto_runtime.ledger import Record
from auto_runtime.problems import Rejection
from auto_runtime.runs.facts import (
    RUN_CANCEL_REQUESTED,
    RUN_FAILED,
    RUN_REJECTED,
    RUN_STARTED,
    RUN_SUCCEEDED,
    STATUS_OF_ENDING,
)

FINAL_REJECTIONS = frozenset({"invalid_input", "cancelled", "unanswered"})


@dataclass
class RunState:
    """What the stream of one run says: its attempts and how the latest one ended."""

    run_id: str
    type: str = ""
    name: str = ""
    version: int = 0
    status: str = "started"
    waits: bool = False
    input: Any = None
    input_digest: str = ""
    started_at: str = ""
    started_by: str = ""
    ended_at: str | None = None
    attempts: int = 0
    output: Any = None
    output_shape: str | None = None
    record: Mapping[str, Any] | None = None
    rejection: dict[str, Any] | None = None
    tools_called: bool = False
    calls_tools: bool = False
    only_read: bool = True
    cancel_requested: bool = False
    """`cancel_run` was recorded on the latest attempt (`run_cancel_requested`)."""
    started_metadata: dict[str, Any] = field(default_factory=dict)
    """The metadata of the latest `run_started`, which the run's later records repeat."""
    stream_version: int = 0
    """The position of the stream's last record: the version the next append to the run states."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def has_final_result(self) -> bool:
        if self.status == "succeeded":
            return True
        return self.status == "rejected" and (self.rejection or {}).get("reason") in FINAL_REJECTIONS

    def final_rejection(self) -> Rejection:
        """The recorded rejection, as the problem a request under the same id answers again."""
        return Rejection.from_record(self.rejection or {})

    def shown(self, *, with_record: bool) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "run_id": self.run_id,
            "type": self.type,
            "name": self.name,
            "definition_version": self.version,
            "status": self.status,
            "started_at": self.started_at,
            "started_by": self.started_by,
            "input": self.input,
        }
        if self.ended_at is not None:
            shown["ended_at"] = self.ended_at
        if self.status == "succeeded":
            shown["output"] = self.output
            if self.output_shape is not None:
                shown["output_shape"] = self.output_shape
        if self.rejection is not None and self.status == "rejected":
            shown["rejection"] = self.rejection
        if self.status == "failed" and self.rejection is not None:
            shown["failure"] = self.rejection
        if with_record:
            shown["record"] = dict(self.record) if self.record is not None else {}
        return shown


def fold_run(run_id: str, history: Sequence[Record]) -> RunState | None:
    if not history:
        return None
    state = RunState(run_id=run_id, stream_version=history[-1].position)
    for record in history:
        data = record.data
        if record.type == RUN_STARTED:
            definition = record.metadata.get("definition", {})
            state.type = definition.get("type", "")
            state.name = definition.get("name", "")
            state.version = int(definition.get("version", 0))
            state.status = "started"
            state.waits = bool(data.get("waits"))
            state.calls_tools = bool(data.get("calls_tools"))
            state.input = data.get("input")
            state.input_digest = data.get("input_digest", "")
            if state.attempts == 0:
                state.started_at = iso_utc(record.recorded_at)
                state.started_by = record.metadata.get("by", "")
            state.attempts += 1
            state.cancel_requested = False
            state.started_metadata = dict(record.metadata)
            state.ended_at = None
            state.output = None
            state.output_shape = None
            state.record = None
            state.rejection = None
        elif record.type in (RUN_SUCCEEDED, RUN_REJECTED, RUN_FAILED):
            state.status = STATUS_OF_ENDING[record.type]
            state.waits = False
            state.ended_at = iso_utc(record.recorded_at)
            state.record = data.get("record")
            if record.type == RUN_SUCCEEDED:
                state.output = data.get("output")
                state.output_shape = data.get("output_shape")
            else:
                state.rejection = {
                    key: data[key]
                    for key in ("reason", "kind", "because", "detail", "errors", "instance")
                    if data.get(key) not in (None, [])
                }
        elif record.type == RUN_CANCEL_REQUESTED:
            state.cancel_requested = True
        elif record.type == "tool_call_started":
            state.tools_called = True
            if not data.get("read_only"):
                state.only_read = False
    return state
