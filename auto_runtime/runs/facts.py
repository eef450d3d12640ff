"""The facts of a run on its stream `playbook/<org>/<playbook>/runs/<run id>`, and the `runs` projection.

A run's stream holds `run_started` (once per attempt) and one ending per attempt: `run_succeeded`,
`run_rejected` or `run_failed`. The `runs` projection keeps, per run, what `get_run`, `list_runs`, the
retry rules and the analytics read: the definition, the input's digest, the status, the latest ending, the
first start (the day a run counts on), the latest attempt's start and end (its duration), and the tokens
added up over every attempt that ended.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auto_runtime.clock_text import iso_utc, microseconds_since_epoch
from auto_runtime.ledger import PlaybookScope, Projection, Record, Row, StreamName, TableSpec

RUN_STARTED = "run_started"
RUN_SUCCEEDED = "run_succeeded"
RUN_REJECTED = "run_rejected"
RUN_FAILED = "run_failed"
RUN_CANCEL_REQUESTED = "run_cancel_requested"
RUN_ENDINGS = (RUN_SUCCEEDED, RUN_REJECTED, RUN_FAILED)
STATUS_OF_ENDING = {RUN_SUCCEEDED: "succeeded", RUN_REJECTED: "rejected", RUN_FAILED: "failed"}
RUN_METADATA = ("correlation_id", "run_id", "definition", "called_by", "call_depth", "trigger", "depth")
"""The metadata of a run's `run_started` that the run's later records carry."""


def run_stream(scope: PlaybookScope, run_id: str) -> StreamName:
    return scope.stream("runs", run_id)


def carried_metadata(started: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a `run_started` record's metadata (`RUN_METADATA`) a later record of the run carries."""
    return {key: started[key] for key in RUN_METADATA if key in started}


def _keys(record: Record) -> list[tuple[Any, ...]]:
    if record.type != RUN_STARTED and record.type not in RUN_ENDINGS:
        return []
    parts = record.stream.split("/")
    if len(parts) != 5 or parts[3] != "runs":
        return []
    return [(parts[1], parts[2], parts[4])]


def _count(part: Any, field: str) -> int:
    value = part.get(field) if isinstance(part, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _tokens(data: Any) -> tuple[int, int, int]:
    """The tokens a run's record reports (reasoning-format §9): input is `usage.input.total`, output
    `usage.output.total`, cached `usage.input.cache_read`; 0 where nothing was recorded."""
    record = data.get("record") if isinstance(data, dict) else None
    usage = record.get("usage") if isinstance(record, dict) else None
    if not isinstance(usage, dict):
        return 0, 0, 0
    return (
        _count(usage.get("input"), "total"),
        _count(usage.get("output"), "total"),
        _count(usage.get("input"), "cache_read"),
    )


def _row_after(row: Row | None, record: Record) -> Row | None:
    at_us = microseconds_since_epoch(record.recorded_at)
    data = record.data
    if record.type == RUN_STARTED:
        definition = record.metadata.get("definition", {})
        base = row or {
            "type": definition.get("type"),
            "name": definition.get("name"),
            "input_digest": data.get("input_digest"),
            "first_started_at": iso_utc(record.recorded_at),
            "first_started_us": at_us,
            "started_by": record.metadata.get("by", ""),
            "tokens_input": 0,
            "tokens_output": 0,
            "tokens_cached": 0,
            "attempts": 0,
        }
        return {
            **base,
            "version": definition.get("version"),
            "status": "started",
            "waits": 1 if data.get("waits") else 0,
            "started_at": iso_utc(record.recorded_at),
            "started_us": at_us,
            "ended_at": None,
            "duration_ms": None,
            "ending": None,
            "output_shape": None,
            "attempts": int(base.get("attempts") or 0) + 1,
            "correlation_id": record.metadata.get("correlation_id"),
        }
    if row is None:
        return None
    tokens_in, tokens_out, tokens_cached = _tokens(data)
    ending: dict[str, Any] = {}
    if record.type == RUN_REJECTED:
        ending = {key: data[key] for key in ("reason", "kind", "because") if data.get(key) is not None}
    return {
        **row,
        "status": STATUS_OF_ENDING[record.type],
        "waits": 0,
        "ended_at": iso_utc(record.recorded_at),
        "ended_us": at_us,
        "duration_ms": (at_us - int(row["started_us"])) // 1000,
        "ending": ending or None,
        "output_shape": data.get("output_shape") if record.type == RUN_SUCCEEDED else None,
        "tokens_input": int(row["tokens_input"]) + tokens_in,
        "tokens_output": int(row["tokens_output"]) + tokens_out,
        "tokens_cached": int(row["tokens_cached"]) + tokens_cached,
    }


RUNS_PROJECTION = Projection(
    name="runs",
    version=1,
    table=TableSpec(
        name="runs",
        columns={
            "org": "text",
            "playbook": "text",
            "run_id": "text",
            "type": "text",
            "name": "text",
            "version": "integer",
            "input_digest": "text",
            "status": "text",
            "waits": "integer",
            "first_started_at": "text",
            "first_started_us": "integer",
            "started_at": "text",
            "started_us": "integer",
            "ended_at": "text",
            "ended_us": "integer",
            "duration_ms": "integer",
            "started_by": "text",
            "ending": "json",
            "output_shape": "text",
            "attempts": "integer",
            "tokens_input": "integer",
            "tokens_output": "integer",
            "tokens_cached": "integer",
            "correlation_id": "text",
        },
        primary_key=("org", "playbook", "run_id"),
        indexes=(("org", "playbook", "first_started_us", "run_id"), ("org", "playbook", "ended_us")),
    ),
    keys=_keys,
    row_after=_row_after,
)
