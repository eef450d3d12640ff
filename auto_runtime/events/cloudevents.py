"""The CloudEvents 1.0 rules a published event meets (seeds, "Publishing events"), and the event they yield.

`read_event` checks every attribute and answers `invalid_input` with one sentence per issue at its pointer
(`/event/<attribute>`); `check_size` checks the whole event once its id and time are filled in. The reserved
types, sources and attributes are those of "What the runtime keeps for itself": a published event cannot pass
for one of the runtime's own facts, nor claim a cause, a caller or a depth it does not have.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Final

from auto_runtime.events.cloudevent_syntax import (
    has_forbidden_character,
    has_non_space,
    is_absolute_uri,
    is_media_type,
    is_uri_reference,
)
from auto_runtime.events.cloudevent_time import EventTime, EventTimeError, parse_event_time
from auto_runtime.json_limits import depth_of, json_size
from auto_runtime.json_pointers import escape
from auto_runtime.problems import InputIssue, invalid_input
from auto_runtime.schema_issues import MAX_ISSUES
from auto_runtime.text_rule import lone_surrogate_paths, not_unicode_issue

SPEC_VERSION: Final = "1.0"
MAX_EVENT_BYTES: Final = 240 * 1024
MAX_DATA_DEPTH: Final = 510
MAX_EXTENSIONS: Final = 32
EXTENSION_NAME: Final = re.compile(r"^[a-z0-9]{1,20}$")
ExtensionValue = str | bool | int

RESERVED_TYPES: Final = frozenset(
    {
        "run_started",
        "run_deferred",
        "run_succeeded",
        "run_rejected",
        "run_failed",
        "run_cancel_requested",
        "tool_call_started",
        "tool_call_answered",
        "tool_call_failed",
        "request_answered",
        "delivery_started",
        "delivery_succeeded",
        "delivery_failed",
        "delivery_refused",
        "reply_refused",
        "telling_started",
        "telling_succeeded",
        "telling_failed",
        "replies_read",
        "reading_failed",
        "interaction_requested",
        "dataset_assembled",
        "candidate_uploaded",
        "candidate_refused",
        "candidate_scored",
        "candidate_disqualified",
        "baseline_scored",
        "baseline_not_walked",
        "version_built",
        "shadow_predicted",
        "shadow_graded",
        "shadow_passed",
        "shadow_failed",
        "version_activated",
        "activation_refused",
        "build_asked",
        "build_ended",
        "definition_created",
        "definition_updated",
        "definition_retired",
        "event_published",
        "workflow_input_applied",
        "step_started",
        "step_waiting",
        "step_finished",
        "step_failed",
        "step_skipped",
        "reaction_refused",
    }
)
RESERVED_SOURCE_PREFIXES: Final = ("/runs/", "/definitions/", "/callers/")
RESERVED_ATTRIBUTES: Final = (
    "causationid",
    "correlationid",
    "caller",
    "definitionversion",
    "depth",
    "calldepth",
    "calledby",
    "triggerkind",
    "triggerreference",
)


@dataclass(frozen=True)
class Attribute:
    """A context attribute of CloudEvents 1.0 as the seeds' table gives it: its words and its limit."""

    name: str
    description: str
    examples: tuple[str, ...] = ()
    max_length: int | None = None


ATTRIBUTES: Final[Mapping[str, Attribute]] = {
    a.name: a
    for a in (
        Attribute(
            "source",
            "Where the event comes from, a URI reference",
            ("/ledger/eu", "https://acme.example/ledger"),
            1024,
        ),
        Attribute("type", "What happened", ("com.acme.ledger.month-closed",), 256),
        Attribute(
            "id",
            "Unique among the events of its source; the runtime makes one when it is left out",
            ("2026-09",),
            256,
        ),
        Attribute(
            "time",
            "When it happened, in RFC 3339; the runtime uses the time it records the event when it is left out",
            ("2026-10-01T09:00:00Z",),
        ),
        Attribute("subject", "What the event is about within its source", ("september",), 1024),
        Attribute("specversion", "The CloudEvents version", ("1.0",)),
        Attribute("datacontenttype", "The media type of data", ("application/json",)),
        Attribute("dataschema", "The absolute URI of a schema data follows", ("https://acme.example/schemas/month",)),
        Attribute("data", "Any JSON value, nesting at most 510 levels"),
    )
}
EXTENSION_DESCRIPTION: Final = (
    "An extension attribute: a name of 1 to 20 lowercase letters and digits, and a string, a boolean or an integer"
)


@dataclass(frozen=True)
class CloudEvent:
    """A published event that meets every rule; `id` and `time` are None when the publisher left them out."""

    source: str
    type: str
    id: str | None = None
    time: EventTime | None = None
    given_time: str | None = None
    subject: str | None = None
    datacontenttype: str | None = None
    dataschema: str | None = None
    has_data: bool = False
    data: Any = None
    extensions: dict[str, ExtensionValue] = field(default_factory=dict)


def _pointer(name: str) -> str:
    if has_forbidden_character(name):
        return "/event"
    return "/event/" + escape(name)


def _words(name: str) -> str:
    attribute = ATTRIBUTES.get(name)
    if attribute is None:
        return f"event, then {name}" if not has_forbidden_character(name) else "event, then an attribute"
    text = f"event, then {name}, {attribute.description}"
    if attribute.examples:
        text += ", such as " + " or ".join(f'"{example}"' for example in attribute.examples)
    return text


def _issue(name: str, rule: str) -> InputIssue:
    return InputIssue(f"{_words(name)}: {rule}.", _pointer(name))


class _Reader:
    """Collects the issues of one event, attribute by attribute."""

    def __init__(self, event: Mapping[str, Any]) -> None:
        self.event = event
        self.issues: list[InputIssue] = []

    def text(self, name: str, *, required: bool = False, needs_non_space: bool = False) -> str | None:
        if name not in self.event:
            if required:
                self.issues.append(InputIssue(f"event: expected the field {name}.", "/event"))
            return None
        value = self.event[name]
        if not isinstance(value, str):
            self.issues.append(_issue(name, "expected a string"))
            return None
        attribute = ATTRIBUTES[name]
        if attribute.max_length is not None and len(value) > attribute.max_length:
            self.issues.append(_issue(name, f"expected at most {attribute.max_length:,} characters"))
            return None
        if has_forbidden_character(value):
            self.issues.append(
                _issue(name, "expected text without a control character, a lone surrogate or a noncharacter")
            )
            return None
        if needs_non_space and not has_non_space(value):
            self.issues.append(_issue(name, "expected a character that is not a space"))
            return None
        return value

    def source(self) -> str | None:
        value = self.text("source", required=True)
        if value is None:
            return None
        if not value or not is_uri_reference(value):
            self.issues.append(_issue("source", "expected a URI reference by RFC 3986, not empty"))
            return None
        if value.startswith(RESERVED_SOURCE_PREFIXES):
            self.issues.append(
                _issue(
                    "source",
                    "expected a source that does not begin with /runs/, /definitions/ or /callers/, which the "
                    "runtime keeps for its own facts",
                )
            )
            return None
        return value

    def type(self) -> str | None:
        value = self.text("type", required=True, needs_non_space=True)
        if value is not None and value in RESERVED_TYPES:
            self.issues.append(
                _issue("type", f"expected a type the runtime does not keep for its own facts, as it keeps {value}")
            )
            return None
        return value

    def time(self) -> tuple[EventTime | None, str | None]:
        value = self.text("time")
        if value is None:
            return None, None
        try:
            return parse_event_time(value), value
        except EventTimeError as error:
            self.issues.append(_issue("time", str(error)))
            return None, None

    def specversion(self) -> None:
        value = self.text("specversion")
        if value is not None and value != SPEC_VERSION:
            self.issues.append(_issue("specversion", f'expected "{SPEC_VERSION}"'))

    def datacontenttype(self) -> str | None:
        value = self.text("datacontenttype")
        if value is not None and not is_media_type(value):
            self.issues.append(_issue("datacontenttype", "expected a media type, a type and a subtype such as a/b"))
            return None
        return value

    def dataschema(self) -> str | None:
        value = self.text("dataschema")
        if value is not None and not is_absolute_uri(value):
            self.issues.append(_issue("dataschema", "expected an absolute URI by RFC 3986, with a scheme"))
            return None
        return value

    def data(self) -> None:
        if "data" not in self.event:
            return
        if depth_of(self.event["data"]) > MAX_DATA_DEPTH:
            self.issues.append(_issue("data", f"expected at most {MAX_DATA_DEPTH} levels of nesting"))
            return
        for path in islice(lone_surrogate_paths(self.event["data"]), MAX_ISSUES):
            self.issues.append(not_unicode_issue(["event", "data", *path]))

    def extensions(self) -> dict[str, ExtensionValue]:
        found: dict[str, ExtensionValue] = {}
        for name, value in self.event.items():
            if name in ATTRIBUTES:
                continue
            if name in RESERVED_ATTRIBUTES:
                self.issues.append(
                    _issue(
                        name,
                        "expected no such attribute: the runtime gives it to its own events, so a published event "
                        "cannot claim a cause, a caller or a depth it does not have",
                    )
                )
                continue
            if name == "data_base64":
                self.issues.append(_issue(name, "expected JSON in data: the playbook takes no binary data"))
                continue
            if not EXTENSION_NAME.match(name):
                self.issues.append(_issue(name, "expected an extension's name of 1 to 20 lowercase letters and digits"))
                continue
            if isinstance(value, str):
                if has_forbidden_character(value):
                    self.issues.append(
                        _issue(name, "expected text without a control character, a lone surrogate or a noncharacter")
                    )
                    continue
            elif not isinstance(value, bool | int):
                self.issues.append(_issue(name, "expected a string, a boolean or an integer"))
                continue
            found[name] = value
        extensions = [name for name in self.event if name not in ATTRIBUTES]
        if len(extensions) > MAX_EXTENSIONS:
            self.issues.append(
                InputIssue(
                    f"event: expected at most {MAX_EXTENSIONS} extension attributes, not {len(extensions)}.", "/event"
                )
            )
        return found


def read_event(event: Mapping[str, Any]) -> CloudEvent:
    """The event when it meets every rule; otherwise `invalid_input` with every issue at its pointer."""
    reader = _Reader(event)
    source = reader.source()
    event_type = reader.type()
    event_id = reader.text("id", needs_non_space=True)
    time, given_time = reader.time()
    subject = reader.text("subject", needs_non_space=True)
    reader.specversion()
    datacontenttype = reader.datacontenttype()
    dataschema = reader.dataschema()
    reader.data()
    extensions = reader.extensions()
    if reader.issues or source is None or event_type is None:
        raise invalid_input(reader.issues)
    return CloudEvent(
        source=source,
        type=event_type,
        id=event_id,
        time=time,
        given_time=given_time,
        subject=subject,
        datacontenttype=datacontenttype,
        dataschema=dataschema,
        has_data="data" in event,
        data=event.get("data"),
        extensions=extensions,
    )


def check_size(event: Mapping[str, Any], event_id: str, time: str) -> None:
    """`invalid_input` at `/event` when the event, with its id and time filled in, is over 240 KiB as JSON."""
    size = json_size({**event, "id": event_id, "time": time})
    if size > MAX_EVENT_BYTES:
        raise invalid_input(
            [
                InputIssue(
                    f"event: expected at most {MAX_EVENT_BYTES:,} bytes as JSON with its id and time filled in, "
                    f"not {size:,}.",
                    "/event",
                )
            ]
        )
