"""The 64 KiB cut of large history fields over MCP (spec mcp.md §13).

Over HTTP `get_event` shows every field of an event's `data` in full. Over MCP each large field of an event's
`data` is shown in full only while its compact UTF-8 JSON encoding is at most 65,536 bytes; a larger one is
replaced by its size in bytes under its name plus `_bytes`. Everything else of the event is unchanged. The cut
applies to every event an output carries (one event, or a page of `events`); other outputs pass unchanged.
"""

from __future__ import annotations

from typing import Any

from auto_runtime.json_limits import json_size

MAX_FIELD_BYTES = 65_536
LARGE_FIELDS = frozenset(
    {"input", "output", "record", "answer", "arguments", "result", "data", "source", "input_schema", "output_schema"}
)
EVENT_MEMBERS = frozenset({"id", "type", "summary", "data", "metadata"})


def _cut_fields(data: Any) -> Any:
    if not isinstance(data, dict):
        return data
    shown: dict[str, Any] = {}
    for key, value in data.items():
        if key in LARGE_FIELDS and (size := json_size(value)) > MAX_FIELD_BYTES:
            shown[f"{key}_bytes"] = size
        else:
            shown[key] = value
    return shown


def _is_event(value: Any) -> bool:
    return isinstance(value, dict) and value.keys() >= EVENT_MEMBERS


def _cut_event(event: dict[str, Any]) -> dict[str, Any]:
    return {**event, "data": _cut_fields(event["data"])}


def cut_large_fields(output: Any) -> Any:
    """The output as MCP shows it: every event it carries with its large `data` fields cut at 64 KiB."""
    if _is_event(output):
        return _cut_event(output)
    if isinstance(output, dict) and isinstance(output.get("events"), list):
        return {**output, "events": [_cut_event(e) if _is_event(e) else e for e in output["events"]]}
    return output
