"""The `workflow_runs` projection: per workflow run, its engine state and its stream's version.

The state lives in the `state` metadata of each `workflow_input_applied` record (as `state_codec.dump_state`
writes it), so the history alone rebuilds the table. The projection keeps the latest one with the run's
`definition` and `by` (from the same record) and `version`, the position of the last record of the run's
stream: the version the next applied input states when it appends. A run stream without a
`workflow_input_applied` record (another type's run) has no row.
"""

from __future__ import annotations

from typing import Any

from auto_runtime.ledger import Projection, Record, Row, TableSpec

WORKFLOW_INPUT_APPLIED = "workflow_input_applied"
STATE_METADATA = "state"


def _keys(record: Record) -> list[tuple[Any, ...]]:
    parts = record.stream.split("/")
    if len(parts) != 5 or parts[0] != "playbook" or parts[3] != "runs":
        return []
    return [(parts[1], parts[2], parts[4])]


def _row_after(row: Row | None, record: Record) -> Row | None:
    if record.type == WORKFLOW_INPUT_APPLIED and isinstance(record.metadata.get(STATE_METADATA), dict):
        return {
            **(row or {}),
            "state": record.metadata[STATE_METADATA],
            "definition": record.metadata.get("definition"),
            "started_by": str(record.metadata.get("by", "")),
            "version": record.position,
        }
    if row is None:
        return None
    return {**row, "version": record.position}


WORKFLOW_RUNS_PROJECTION = Projection(
    name="workflow_runs",
    version=1,
    table=TableSpec(
        name="workflow_runs",
        columns={
            "org": "text",
            "playbook": "text",
            "run_id": "text",
            "state": "json",
            "definition": "json",
            "started_by": "text",
            "version": "integer",
        },
        primary_key=("org", "playbook", "run_id"),
    ),
    keys=_keys,
    row_after=_row_after,
)
