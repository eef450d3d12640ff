"""`publish_event`: a CloudEvent recorded in a playbook as an `event_published` record, once per source and id.

Each `source` and `id` has a stream of its own, `playbook/<org>/<playbook>/events/<key>`, whose key is the
SHA-256 of the two; the first event is appended with expected version 0, so of two requests at the same moment
one records and the other reads what it recorded. Publishing the same event again records nothing and answers
the first `id`, `time` and `recorded_at` ("Publishing the same event again"); a different event under the same
source and id is a `conflict`. Without an `id` the runtime makes one, so every such request records a new event.

The record keeps the whole event, as a trigger or a listener reads it: `event_id`, `event_type`, `source`,
`subject`, `time` (as returned: UTC with milliseconds), `data` when given, the `extensions` as given,
`specversion`, `datacontenttype` and `dataschema` when given, the `time` as the publisher wrote it
(`given_time`), and which attributes the runtime `filled` in. Its metadata names the caller in `by` and has
no cause and no correlation; `at` is when the playbook recorded it, which the answer returns as `recorded_at`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from auto_runtime.clock_text import iso_utc, now_utc
from auto_runtime.events.cloudevent_time import parse_event_time
from auto_runtime.events.cloudevents import SPEC_VERSION, CloudEvent, check_size, read_event
from auto_runtime.ledger import (
    Ledger,
    NewRecord,
    PlaybookScope,
    Record,
    StreamName,
    decide_and_append,
    folding_reader,
    uuid7,
)
from auto_runtime.playbooks.json_equality import json_equal
from auto_runtime.problems import changed_at_the_same_moment, conflict

EVENT_PUBLISHED = "event_published"


def event_stream(scope: PlaybookScope, source: str, event_id: str) -> StreamName:
    """The stream that holds the one event of this source and id."""
    key = hashlib.sha256(f"{len(source)}:{source}{event_id}".encode()).hexdigest()
    return scope.stream("events", key)


def published_data(event: CloudEvent, event_id: str, time: str, filled: Sequence[str]) -> dict[str, Any]:
    """The data of an `event_published` record: the whole event, as the module docstring lists it."""
    data: dict[str, Any] = {
        "event_id": event_id,
        "event_type": event.type,
        "source": event.source,
        "subject": event.subject,
        "time": time,
    }
    if event.has_data:
        data["data"] = event.data
    data["filled"] = list(filled)
    if event.extensions:
        data["extensions"] = dict(event.extensions)
    data["specversion"] = SPEC_VERSION
    if event.datacontenttype is not None:
        data["datacontenttype"] = event.datacontenttype
    if event.dataschema is not None:
        data["dataschema"] = event.dataschema
    if event.given_time is not None:
        data["given_time"] = event.given_time
    return data


def recorded_cloud_event(data: Mapping[str, Any]) -> dict[str, Any]:
    """The CloudEvent an `event_published` record holds, as triggers, listeners and views take it: `specversion`,
    `id`, `source`, `type`, `time` (UTC with milliseconds, as `publish_event` returned it), then `subject`,
    `datacontenttype`, `dataschema`, `data` and the extensions, each only when the event has it."""
    event: dict[str, Any] = {
        "specversion": data.get("specversion", SPEC_VERSION),
        "id": data["event_id"],
        "source": data["source"],
        "type": data["event_type"],
        "time": data["time"],
    }
    for attribute in ("subject", "datacontenttype", "dataschema"):
        if data.get(attribute) is not None:
            event[attribute] = data[attribute]
    if "data" in data:
        event["data"] = data["data"]
    event.update(data.get("extensions") or {})
    return event


def _same_time(recorded: Mapping[str, Any], event: CloudEvent) -> bool:
    """A time left out on either side matches; two given times match when they name the same instant."""
    first = recorded.get("given_time")
    if event.time is None or not isinstance(first, str):
        return True
    return parse_event_time(first).same_instant(event.time)


def is_same_event(recorded: Mapping[str, Any], event: CloudEvent) -> bool:
    """Whether `event` is the one `recorded` holds (same source and id are given by the stream)."""
    return (
        recorded.get("event_type") == event.type
        and recorded.get("subject") == event.subject
        and recorded.get("datacontenttype") == event.datacontenttype
        and recorded.get("dataschema") == event.dataschema
        and json_equal(recorded.get("data"), event.data)
        and json_equal(recorded.get("extensions", {}), event.extensions)
        and _same_time(recorded, event)
    )


def answer_of(record: Record) -> dict[str, str]:
    """What `publish_event` returns for the recorded event: its `id`, `time` and `recorded_at`."""
    return {
        "id": record.data["event_id"],
        "time": record.data["time"],
        "recorded_at": record.metadata.get("at") or iso_utc(record.recorded_at),
    }


class EventPublishing:
    """Records published events in their playbook's ledger."""

    def __init__(self, ledger: Ledger, clock: Callable[[], datetime] = now_utc) -> None:
        self.ledger = ledger
        self.clock = clock
        """The time an event without its own `time` is given (the server's clock)."""

    async def publish(self, scope: PlaybookScope, given: Mapping[str, Any], caller_id: str) -> dict[str, str]:
        event = read_event(given)
        recorded_at = iso_utc(self.clock())
        event_id = event.id if event.id is not None else str(uuid7())
        time = event.time.shown if event.time is not None else recorded_at
        filled = [name for name, value in (("id", event.id), ("time", event.time)) if value is None]
        check_size(given, event_id, event.given_time or time)
        record = NewRecord(
            type=EVENT_PUBLISHED,
            data=published_data(event, event_id, time, filled),
            metadata={"correlation_id": None, "causation_id": None, "at": recorded_at, "by": caller_id},
        )

        def first_of(history: Sequence[Record]) -> Record | None:
            return history[0] if history else None

        def decide(first: Record | None) -> list[NewRecord]:
            if first is None:
                return [record]
            if is_same_event(first.data, event):
                return []
            raise conflict(
                f"The source {event.source} already has an event with the id {event_id} that differs from this one; "
                "publish this one under a new id."
            )

        stream = event_stream(scope, event.source, event_id)
        decided = await decide_and_append(
            self.ledger,
            stream,
            folding_reader(self.ledger, stream, first_of),
            decide,
            clashed=changed_at_the_same_moment,
        )
        recorded = decided.appended[0] if decided.appended else decided.state
        assert recorded is not None
        return answer_of(recorded)
