"""Records as events: `{id, type, summary, data, metadata}`, with `data` kept within 4 KiB.

The seeds' "Event fields" and "What `data` shows": large values (input, output, record, answer, arguments,
result, a published event's data) are shown in full only up to 2 KiB as JSON, else as their size under
`<name>_bytes`; a definition's document and schemas as their sizes, its description cut to 300 characters
and its warnings as a count; a rejection's detail shortened to fit and at most five of its issues; and while
the data is still larger than 4 KiB, its largest field is shown as its size first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auto_runtime.clock_text import iso_utc
from auto_runtime.json_limits import json_size
from auto_runtime.ledger import Record

MAX_DATA_BYTES = 4096
MAX_VALUE_BYTES = 2048
LARGE_FIELDS = ("input", "output", "record", "answer", "arguments", "result", "data")
DOCUMENT_FIELDS = ("source", "input_schema", "output_schema", "overview", "uses")
DESCRIPTION_CHARACTERS = 300
SHOWN_ISSUES = 5
OPTIONAL_METADATA = (
    "run_id",
    "definition",
    "called_by",
    "call_depth",
    "depth",
    "trigger",
    "trace_id",
    "span_id",
)
HIDDEN_TYPES = frozenset({"playbook_created", "playbook_updated", "playbook_retired"})
DEFINITION_FACTS = ("definition_created", "definition_updated", "definition_retired")
REQUEST_SHOWN = ("delivery", "to", "message_bytes", "takes_answer", "expires_at")
PUBLISHED_SHOWN = ("event_id", "event_type", "source", "subject", "time", "data", "filled", "extensions")
BUILD_ASKED_SHOWN = ("to", "delivery", "expires_at", "brief_bytes", "rows_bytes", "training_rows")
"""`build_asked` as history shows it (prediction-format §10): the trainer's `deliver` block, which the build's
delivery attempts read, stays in the record."""
SHOWN_FIELDS = {"event_published": PUBLISHED_SHOWN, "build_asked": BUILD_ASKED_SHOWN}
"""The record types whose history data shows only these fields, in this order."""


def is_event(record: Record) -> bool:
    """Records with no event type (the runtime's own bookkeeping) are left out of every listing."""
    return record.type not in HIDDEN_TYPES


def metadata_of(record: Record) -> dict[str, Any]:
    source = record.metadata
    metadata: dict[str, Any] = {
        "stream": record.stream,
        "position": record.position,
        "global_position": record.global_position,
        "correlation_id": source.get("correlation_id"),
        "causation_id": source.get("causation_id"),
        "at": source.get("at") or iso_utc(record.recorded_at),
        "by": source.get("by", "runtime"),
    }
    for name in OPTIONAL_METADATA:
        if source.get(name) is not None:
            metadata[name] = source[name]
    return metadata


def _shortened_definition(data: Mapping[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for key, value in data.items():
        if key in DOCUMENT_FIELDS:
            if value is not None:
                shown[f"{key}_bytes"] = len(value.encode("utf-8")) if isinstance(value, str) else json_size(value)
        elif key == "description" and isinstance(value, str):
            shown[key] = value[:DESCRIPTION_CHARACTERS]
        elif key == "warnings" and isinstance(value, list):
            shown["warnings"] = len(value)
        else:
            shown[key] = value
    return shown


def _shortened_rejection(data: dict[str, Any]) -> dict[str, Any]:
    errors = data.get("errors")
    if isinstance(errors, list) and errors:
        data = {**data, "issues": len(errors), "errors": errors[:SHOWN_ISSUES]}
    return data


def _shown_request(data: Mapping[str, Any]) -> dict[str, Any]:
    """`interaction_requested` as history shows it (interaction-format §3.2): the delivery, the party, the
    answerer where it differs, the message's size, whether it takes an answer and the expiry; the message
    itself only through the kept content (`get_event`)."""
    shown: dict[str, Any] = {key: data[key] for key in REQUEST_SHOWN if key in data}
    if data.get("answerer") is not None and data.get("answerer") != data.get("to"):
        shown["answerer"] = data["answerer"]
    return shown


def _largest_field(data: Mapping[str, Any]) -> str | None:
    sizes = {key: json_size(value) for key, value in data.items() if not key.endswith("_bytes")}
    sizes = {key: size for key, size in sizes.items() if size > 16}
    return max(sizes, key=lambda key: sizes[key]) if sizes else None


def shown_data(record: Record) -> Any:
    """The record's data within 4 KiB, by the seeds' rules."""
    data = record.data
    if not isinstance(data, dict):
        return data if json_size(data) <= MAX_DATA_BYTES else {"data_bytes": json_size(data)}
    if record.type in DEFINITION_FACTS:
        data = _shortened_definition(data)
    if (fields := SHOWN_FIELDS.get(record.type)) is not None:
        data = {key: data[key] for key in fields if key in data}
    if record.type == "interaction_requested":
        data = _shown_request(data)
    shown: dict[str, Any] = {}
    for key, value in data.items():
        if key in LARGE_FIELDS and json_size(value) > MAX_VALUE_BYTES:
            shown[f"{key}_bytes"] = json_size(value)
        else:
            shown[key] = value
    if record.type == "run_rejected":
        shown = _shortened_rejection(shown)
    while json_size(shown) > MAX_DATA_BYTES:
        if isinstance(shown.get("detail"), str) and json_size(shown["detail"]) > 512:
            excess = json_size(shown) - MAX_DATA_BYTES
            detail: str = shown["detail"]
            shown["detail"] = detail[: max(0, len(detail) - excess - 16)] + "…"
            continue
        largest = _largest_field(shown)
        if largest is None:
            break
        shown[f"{largest}_bytes"] = json_size(shown.pop(largest))
    return shown


def _definition_words(record: Record) -> str:
    definition = record.metadata.get("definition") or {}
    kind = definition.get("type", "")
    name = definition.get("name", "")
    return f"the {kind} definition {name}".replace("  ", " ")


def summary_of(record: Record) -> str:
    """One sentence in plain language saying what happened."""
    data = record.data if isinstance(record.data, dict) else {}
    definition = _definition_words(record)
    version = (record.metadata.get("definition") or {}).get("version")
    match record.type:
        case "definition_created":
            return f"Created {definition}, version {version}."
        case "definition_updated":
            return f"Saved version {version} of {definition}."
        case "definition_retired":
            return f"Retired {definition}."
        case "run_started":
            trigger = record.metadata.get("trigger")
            if trigger:
                kind = trigger.get("kind")
                return (
                    f"A run of {definition} was started by its {kind} {'trigger' if kind == 'event' else 'schedule'}."
                )
            return f"A run of {definition} started."
        case "run_succeeded":
            return f"The run of {definition} succeeded."
        case "run_rejected":
            reason = data.get("reason", "rejected")
            kind = data.get("kind")
            because = data.get("because")
            words = f"The run of {definition} was rejected as {reason}"
            if kind:
                words += f", {kind}"
            if because:
                words += f", because {because}"
            return words + "."
        case "run_failed":
            return f"The run of {definition} failed inside the server."
        case "run_cancel_requested":
            return f"Someone asked to cancel the run of {definition}."
        case "interaction_requested":
            asks = "asks" if data.get("takes_answer") else "notifies"
            return f"The run of {definition} {asks} {data.get('to', 'a party')}."
        case "request_answered":
            return f"The request of {definition} was answered by {data.get('answered_by', 'someone')}."
        case "run_deferred":
            return f"The run of {definition} waits; later inputs move it on."
        case "workflow_input_applied":
            return _input_words(data)
        case "step_started" | "step_waiting" | "step_finished" | "step_failed" | "step_skipped":
            return _step_words(record.type, data)
        case "reaction_refused":
            reason = str(data.get("reason") or "").rstrip(".")
            words = f"A trigger of {definition} did not start it {data.get('count', 1)} time(s) in the minute "
            return words + f"{data.get('minute', '')}" + (f": {reason}." if reason else ".")
        case "event_published":
            return f"The event {data.get('event_type', '')} from {data.get('source', '')} was published."
        case _:
            return record.type.replace("_", " ").capitalize() + "."


def _input_words(data: Mapping[str, Any]) -> str:
    """`workflow_input_applied` in words: the input's kind, the steps it moved, a function's rejection."""
    given = data.get("input")
    taken: Mapping[str, Any] = given if isinstance(given, dict) else {}
    count = data.get("step_count", 0)
    words = f"The run took a {str(taken.get('kind', 'new')).replace('_', ' ')} input and moved {count} step"
    words += "" if count == 1 else "s"
    refused = taken.get("rejection")
    rejection: Mapping[str, Any] = refused if isinstance(refused, dict) else {}
    if rejection.get("kind"):
        words += f"; the called run was rejected as {rejection['kind']}"
        if rejection.get("because"):
            words += f", because {rejection['because']}"
    return words + "."


STEP_WORDS = {
    "step_started": "started and runs the steps inside it",
    "step_finished": "finished",
    "step_skipped": "was skipped, as its if did not hold",
}


def _step_words(event_type: str, data: Mapping[str, Any]) -> str:
    name = data.get("name", "")
    if event_type == "step_waiting":
        return f"The step {name} waits for {_WAITS_FOR.get(str(data.get('waits_for')), 'something')}."
    if event_type == "step_failed":
        return f"The step {name} {_FAILED.get(str(data.get('outcome')), 'failed')}."
    return f"The step {name} {STEP_WORDS[event_type]}."


_WAITS_FOR = {"timer": "a timer", "event": "an event", "call": "the run it called"}
_FAILED = {"raised": "raised an error", "timed_out": "ran out of time", "cancelled": "was cancelled"}


def event_of(record: Record, *, full: bool = False) -> dict[str, Any]:
    return {
        "id": record.id,
        "type": record.type,
        "summary": summary_of(record),
        "data": record.data if full else shown_data(record),
        "metadata": metadata_of(record),
    }
