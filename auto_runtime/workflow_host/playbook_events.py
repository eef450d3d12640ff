"""The playbook events triggers and listens take, read from ledger records (spec 9.1, 10; recall-format "The events").

Three kinds of record become playbook events, nothing else does:

- `event_published` (published with `publish_event`, or emitted by a workflow run: then its metadata names the
  run in `run_id` and the chain's `depth`), under its own type, as `recorded_cloud_event` gives it;
- the run facts `run_started`, `run_succeeded`, `run_rejected`, `run_failed` on `.../runs/<run id>`;
- the definition facts `definition_created`, `definition_updated`, `definition_retired`.

`playbook_event` is pure: the same record always gives the same event, so re-reading the feed offers and matches
exactly what the first reading did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from auto_runtime.clock_text import iso_utc
from auto_runtime.json_limits import json_size
from auto_runtime.ledger import PlaybookScope, Record
from auto_runtime.playbooks.event_publishing import EVENT_PUBLISHED, recorded_cloud_event
from auto_runtime.runs.facts import RUN_FAILED, RUN_REJECTED, RUN_STARTED, RUN_SUCCEEDED

RUN_FACTS = (RUN_STARTED, RUN_SUCCEEDED, RUN_REJECTED, RUN_FAILED)
DEFINITION_FACTS = ("definition_created", "definition_updated", "definition_retired")
MAX_EVENT_BYTES = 240 * 1024
"""A `run_succeeded` event whose output would make it larger shows `output_bytes` instead (recall-format)."""


@dataclass(frozen=True)
class PlaybookEvent:
    """One playbook event: where it was recorded, the CloudEvent, and what the reaction rules need.

    `run_id` is the run the event is about (a run fact) or that emitted it (an emitted event); `depth` is the
    depth a run it triggers takes (published 1; a fact about or an event emitted by a run at depth d: d + 1).
    """

    scope: PlaybookScope
    record: Record
    event: dict[str, Any]
    run_id: str | None
    emitted: bool
    depth: int

    @property
    def type(self) -> str:
        return str(self.event["type"])


def scope_of(record: Record) -> PlaybookScope | None:
    parts = record.stream.split("/")
    if len(parts) < 4 or parts[0] != "playbook":
        return None
    return PlaybookScope(parts[1], parts[2])


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def run_depth(metadata: dict[str, Any]) -> int:
    """The depth a run's records carry (0 for a run nobody's reaction started)."""
    return _whole(metadata.get("depth")) or 0


def _fact_event(record: Record) -> dict[str, Any] | None:
    metadata = record.metadata
    definition = metadata.get("definition") if isinstance(metadata.get("definition"), dict) else {}
    assert isinstance(definition, dict)
    kind, name = definition.get("type"), definition.get("name")
    if not isinstance(kind, str) or not isinstance(name, str):
        return None
    event: dict[str, Any] = {
        "specversion": "1.0",
        "id": record.id,
        "type": record.type,
        "time": metadata.get("at") or iso_utc(record.recorded_at),
    }
    if record.type in DEFINITION_FACTS:
        event["source"] = f"/definitions/{kind}/{name}"
    else:
        run_id = metadata.get("run_id") or record.stream.rsplit("/", 1)[1]
        event["source"] = f"/runs/{run_id}"
        event["subject"] = f"{kind}/{name}"
    data = record.data if isinstance(record.data, dict) else {}
    if record.type == RUN_SUCCEEDED:
        event["data"] = {"output": data.get("output")}
        if json_size(event) > MAX_EVENT_BYTES:
            event["data"] = {"output_bytes": json_size(data.get("output"))}
    elif record.type == RUN_REJECTED:
        event["data"] = {key: data[key] for key in ("reason", "kind", "because") if data.get(key) is not None}
    for attribute, key in (("causationid", "causation_id"), ("correlationid", "correlation_id"), ("caller", "by")):
        if isinstance(metadata.get(key), str):
            event[attribute] = metadata[key]
    version = _whole(definition.get("version"))
    if version is not None and record.type != "definition_retired":
        event["definitionversion"] = version
    for attribute, key in (("depth", "depth"), ("calldepth", "call_depth")):
        if _whole(metadata.get(key)) is not None:
            event[attribute] = metadata[key]
    called_by = metadata.get("called_by")
    if isinstance(called_by, dict) and isinstance(called_by.get("run_id"), str):
        event["calledby"] = called_by["run_id"]
    trigger = metadata.get("trigger")
    if isinstance(trigger, dict):
        event["triggerkind"] = trigger.get("kind")
        event["triggerreference"] = trigger.get("reference")
    return event


def playbook_event(record: Record) -> PlaybookEvent | None:
    """The playbook event a record is, or None for any other record (or one that cannot be read as an event)."""
    scope = scope_of(record)
    if scope is None:
        return None
    metadata = record.metadata
    if record.type == EVENT_PUBLISHED:
        if not isinstance(record.data, dict):
            return None
        try:
            event = recorded_cloud_event(record.data)
        except KeyError:
            return None
        run_id = metadata.get("run_id")
        if isinstance(run_id, str):
            return PlaybookEvent(scope, record, event, run_id, True, max(run_depth(metadata), 1))
        return PlaybookEvent(scope, record, event, None, False, 1)
    if record.type in RUN_FACTS:
        found = _fact_event(record)
        if found is None:
            return None
        run_id = str(found["source"]).removeprefix("/runs/")
        return PlaybookEvent(scope, record, found, run_id, False, run_depth(metadata) + 1)
    if record.type in DEFINITION_FACTS:
        found = _fact_event(record)
        return None if found is None else PlaybookEvent(scope, record, found, None, False, 1)
    return None
