"""The `workflow_runs` projection: per workflow run, its engine state and its stream's version.

The state lives in the `state` metadata of each `workflow_input_applied` record (as `state_codec.dump_state`
writes it), so the history alone rebuilds the table. The projection keeps the latest one with the run's
`metadata` (that record's other metadata but `causation_id` and the append's trace ids: `correlation_id`, `by`,
`run_id`, `definition` and, on a callee, `called_by` and `call_depth`), which every later record of the run
repeats, and `version`, the position of the last record of the run's stream: the version the next applied input
states. `tree` is the run's `correlation_id` (the top run of its call tree) and `open_calls` how many calls it
waits for, so the calls waiting in one tree add up in one query (`WORKFLOW_MAX_OPEN_CALLS`). A run stream
without a `workflow_input_applied` record (another type's run) has no row.

`cancel` is the request to cancel the run that `run_cancel_requested` recorded (the `cancel:` entry's payload,
`outbox.cancel_payload`), from that record until the run ended, else null: the run takes it before any other
input (`RunStore.apply_to`), whoever recorded it and whenever.
"""

from __future__ import annotations

from typing import Any

from auto_runtime.functions.workflow.outbox import cancel_payload
from auto_runtime.ledger import Projection, Record, Row, TableSpec
from auto_runtime.runs.facts import RUN_CANCEL_REQUESTED, RUN_ENDINGS
from auto_runtime.telemetry import APPEND_TRACE_FIELDS

WORKFLOW_INPUT_APPLIED = "workflow_input_applied"
STATE_METADATA = "state"


def _keys(record: Record) -> list[tuple[Any, ...]]:
    parts = record.stream.split("/")
    if len(parts) != 5 or parts[0] != "playbook" or parts[3] != "runs":
        return []
    return [(parts[1], parts[2], parts[4])]


def _open_calls(state: dict[str, Any]) -> int:
    """How many calls the run waits for: the engine state's `calls` (see `state_codec`)."""
    calls = state.get("calls")
    return len(calls) if isinstance(calls, dict | list) else 0


def _row_after(row: Row | None, record: Record) -> Row | None:
    if record.type == WORKFLOW_INPUT_APPLIED and isinstance(record.metadata.get(STATE_METADATA), dict):
        state = record.metadata[STATE_METADATA]
        correlation = record.metadata.get("correlation_id")
        return {
            **(row or {}),
            "cancel": None if state.get("ended") else (row or {}).get("cancel"),
            "state": state,
            "tree": correlation if isinstance(correlation, str) else "",
            "open_calls": _open_calls(state),
            "metadata": {
                key: value
                for key, value in record.metadata.items()
                if key not in (STATE_METADATA, "causation_id", *APPEND_TRACE_FIELDS)
            },
            "version": record.position,
        }
    if row is None:
        return None
    if record.type in RUN_ENDINGS and not row["state"].get("ended"):
        # An ending the engine did not decide (`run_failed` of a breakdown) ends the state too, so every later
        # input of the run is stale.
        return {**row, "cancel": None, "state": {**row["state"], "ended": True}, "version": record.position}
    if record.type == RUN_CANCEL_REQUESTED and not row["state"].get("ended"):
        reason = record.data.get("reason")
        kind = record.data.get("kind")
        request = cancel_payload(
            kind if isinstance(kind, str) else "requested",
            str(record.metadata.get("by")),
            record.id,
            reason if isinstance(reason, str) else None,
        )
        return {**row, "cancel": request, "version": record.position}
    return {**row, "version": record.position}


WORKFLOW_RUNS_PROJECTION = Projection(
    name="workflow_runs",
    version=4,
    table=TableSpec(
        name="workflow_runs",
        columns={
            "org": "text",
            "playbook": "text",
            "run_id": "text",
            "tree": "text",
            "open_calls": "integer",
            "cancel": "json",
            "state": "json",
            "metadata": "json",
            "version": "integer",
        },
        primary_key=("org", "playbook", "run_id"),
        indexes=(("org", "playbook", "tree"),),
    ),
    keys=_keys,
    row_after=_row_after,
)
