"""Output shapes a definition may name (spec/output-shapes.md): `series`, its schema and its own rules."""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SERIES_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://on.auto/schemas/runtime/shapes/series",
    "title": "series",
    "description": "Lines of values over periods of one frequency, each point optionally with an interval.",
    "type": "object",
    "required": ["period", "lines"],
    "additionalProperties": False,
    "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 200},
        "series": {"type": "string", "minLength": 1, "maxLength": 64},
        "unit": {"type": "string", "minLength": 1, "maxLength": 32},
        "period": {"enum": ["hour", "day", "week", "month", "quarter", "year"]},
        "lines": {"type": "array", "minItems": 1, "maxItems": 8, "items": {"$ref": "#/$defs/line"}},
    },
    "$defs": {
        "line": {
            "type": "object",
            "required": ["name", "points"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,31}$"},
                "points": {"type": "array", "maxItems": 10000, "items": {"$ref": "#/$defs/point"}},
            },
        },
        "point": {
            "type": "object",
            "required": ["period", "value"],
            "additionalProperties": False,
            "properties": {
                "period": {
                    "type": "string",
                    "pattern": "^[0-9]{4}(-(0[1-9]|1[0-2])"
                    "(-(0[1-9]|[12][0-9]|3[01])(T([01][0-9]|2[0-3]):00:00Z)?)?"
                    "|-W(0[1-9]|[1-4][0-9]|5[0-3])|-Q[1-4])?$",
                },
                "value": {"type": "number"},
                "low": {"type": "number"},
                "high": {"type": "number"},
                "horizon": {"type": "integer", "minimum": 1},
            },
            "dependentRequired": {"low": ["high"], "high": ["low"]},
        },
    },
}

_FORMS = {
    "hour": re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):00:00Z$"),
    "day": re.compile(r"^(\d{4})-(\d{2})-(\d{2})$"),
    "week": re.compile(r"^(\d{4})-W(\d{2})$"),
    "month": re.compile(r"^(\d{4})-(\d{2})$"),
    "quarter": re.compile(r"^(\d{4})-Q([1-4])$"),
    "year": re.compile(r"^(\d{4})$"),
}


def _period_key(period: str, text: str) -> tuple[int, ...] | None:
    match = _FORMS[period].match(text)
    if match is None:
        return None
    numbers = tuple(int(group) for group in match.groups())
    try:
        if period in ("hour", "day"):
            datetime.date(numbers[0], numbers[1], numbers[2])
        elif period == "week":
            datetime.date.fromisocalendar(numbers[0], numbers[1], 1)
        elif period == "month" and not 1 <= numbers[1] <= 12:
            return None
    except ValueError:
        return None
    return numbers


def series_problem(output: dict[str, Any]) -> tuple[str, str] | None:
    """The first failed rule of `series` beyond its schema, as (words, pointer), or None."""
    period = output["period"]
    seen: set[str] = set()
    for line_index, line in enumerate(output["lines"]):
        if line["name"] in seen:
            return (f"the line name {line['name']} is used twice", f"/lines/{line_index}/name")
        seen.add(line["name"])
        previous: tuple[int, ...] | None = None
        for point_index, point in enumerate(line["points"]):
            where = f"/lines/{line_index}/points/{point_index}"
            key = _period_key(period, point["period"])
            if key is None:
                return (f"the period {point['period']} is not a real {period}", where + "/period")
            if previous is not None and key <= previous:
                return ("the periods of a line must strictly ascend", where + "/period")
            previous = key
            if "low" in point and not point["low"] <= point["value"] <= point["high"]:
                return ("a point's interval must hold its value: low ≤ value ≤ high", where)
    return None


@dataclass(frozen=True)
class Shape:
    name: str
    schema: dict[str, Any]
    rules: Callable[[dict[str, Any]], tuple[str, str] | None]


SHAPES: dict[str, Shape] = {"series": Shape("series", SERIES_SCHEMA, series_problem)}
