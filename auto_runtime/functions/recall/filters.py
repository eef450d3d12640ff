"""A recall function's filters (`source.events`): their save-time rules, and whether an event is taken.

A filter is a mapping: `type` (required, exact), any attribute named by 1 to 20 lowercase letters or digits
(compared with exactly that value and kind), `data` (JSON equality) and `where` (a function of the module,
called in the sandbox by the fold). An event is taken when every key of one filter holds for it; `where` is
asked last, and only when the rest of its filter holds (see `literal_holds`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auto_runtime.events.cloudevents import RESERVED_TYPES
from auto_runtime.playbooks.json_equality import json_equal

VIEW_TYPES = (
    "run_started",
    "run_succeeded",
    "run_rejected",
    "run_failed",
    "definition_created",
    "definition_updated",
    "definition_retired",
)
"""The runtime's own types a view can take; every other reserved type is refused in a filter."""
REFUSED_TYPES = RESERVED_TYPES - frozenset(VIEW_TYPES)
MAX_FILTERS = 8
ATTRIBUTE_NAME = re.compile(r"^[a-z0-9]{1,20}$")

EVENTS_MISSING = "The front matter names the events the view folds: source.events"
NO_FILTERS = "A recall function folds the events at least one filter names; it names none"
TOO_MANY = "A recall function takes at most 8 filters; it names {count}"
NOT_A_FILTER = "A filter is a mapping of what an event must have: type, and optionally other attributes, data and where"
NO_SUCH_EVENTS = (
    "No event of the type {type} reaches a view: a filter takes run_started, run_succeeded, run_rejected, "
    "run_failed, definition_created, definition_updated, definition_retired or a type published to the playbook"
)
NOT_AN_ATTRIBUTE = "{key} is not an attribute a filter can name"
COMPARES_WITH = "A filter compares {key} with a text, a whole number, true or false"
WHERE_NAMES = "where names a top-level function of the module with one parameter, as def {name}(data)"


@dataclass(frozen=True)
class EventFilter:
    """One filter as saved: its attributes (`type` among them), its `data` when given, its `where` when given."""

    attributes: Mapping[str, str | int | bool]
    data: Any = None
    has_data: bool = False
    where: str | None = None

    def as_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = dict(self.attributes)
        if self.has_data:
            shown["data"] = self.data
        if self.where is not None:
            shown["where"] = self.where
        return shown

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> EventFilter:
        attributes = {key: item for key, item in value.items() if key not in ("data", "where")}
        return cls(attributes, value.get("data"), "data" in value, value.get("where"))

    def literal_holds(self, event: Mapping[str, Any]) -> bool:
        """Whether every key but `where` holds: attributes with the same value and kind, data JSON-equal."""
        for key, expected in self.attributes.items():
            if key not in event or not _same_kind_and_value(expected, event[key]):
                return False
        if self.has_data:
            if "data" not in event:
                return False
            return json_equal(self.data, event["data"])
        return True


def _same_kind_and_value(expected: str | int | bool, found: Any) -> bool:
    if isinstance(expected, bool) or isinstance(found, bool):
        return isinstance(expected, bool) and isinstance(found, bool) and expected == found
    return type(expected) is type(found) and expected == found


def is_attribute_value(value: Any) -> bool:
    """Text, a whole number or a boolean (a float, even a whole one, is not)."""
    return isinstance(value, str | bool) or type(value) is int
