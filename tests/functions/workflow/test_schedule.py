"""Triggers a document's `schedule` names (spec 10, seeds "A saved workflow"): what they show, what is refused."""

from __future__ import annotations

import pytest

from auto_runtime.functions.workflow.document import WorkflowDocument, check_document
from auto_runtime.functions.workflow.issues import ordered

MAX = 30 * 86_400_000
HEAD = "document: { dsl: '1.0.3', namespace: tests, name: triggers, version: '1.0.0' }\n"
DO = "do: [ { a: { set: {} } } ]\n"


def accepted(schedule: str) -> WorkflowDocument:
    checked = check_document(HEAD + schedule + DO, MAX)
    assert isinstance(checked, WorkflowDocument), checked
    return checked


def refused(schedule: str) -> list[str]:
    checked = check_document(HEAD + schedule + DO, MAX)
    assert isinstance(checked, list)
    return [issue.detail() for issue in ordered(checked)]


def test_triggers_in_document_order_with_the_seed_fields() -> None:
    document = accepted(
        "schedule:\n"
        "  every: PT15M\n"
        "  on:\n"
        "    any:\n"
        "      - { with: { type: com.acme.a, source: https://acme.example, depth: 1 } }\n"
        "      - { with: { type: com.acme.b, data: '${ data[\"x\"] > 1 }' } }\n"
        "  cron: '*/5 * * * mon-fri'\n"
    )
    assert [t.as_json() for t in document.triggers] == [
        {"kind": "every", "reference": "/schedule/every", "milliseconds": 900_000},
        {
            "kind": "event",
            "reference": "/schedule/on",
            "filters": [
                {
                    "reference": "/schedule/on/any/0",
                    "type": "com.acme.a",
                    "attributes": {"source": "https://acme.example", "depth": 1},
                },
                {"reference": "/schedule/on/any/1", "type": "com.acme.b", "attributes": {"data": '${ data["x"] > 1 }'}},
            ],
        },
        {"kind": "cron", "reference": "/schedule/cron", "expression": "*/5 * * * mon-fri"},
    ]


def test_one_filter_is_referenced_at_on_one() -> None:
    document = accepted("schedule: { on: { one: { with: { type: com.acme.a } } } }\n")
    assert document.triggers[0].as_json()["filters"] == [
        {"reference": "/schedule/on/one", "type": "com.acme.a", "attributes": {}}
    ]


CASES = [
    ("schedule: { after: PT1M }\n", [
        "Line 2, column 20: at /schedule/after: schedule.after is not available: a workflow starts "
        "on on, cron or every",
        "Line 2, column 11: at /schedule: schedule names at least one of on, cron and every",
    ]),
    ("schedule: {}\n", ["Line 2, column 11: at /schedule: schedule names at least one of on, cron and every"]),
    ("schedule: { on: { all: [] } }\n", [
        "Line 2, column 24: at /schedule/on/all: on.all is not available: a trigger starts on one "
        "event, with one or any",
    ]),
    ("schedule: { on: { one: { with: { type: a } }, until: x } }\n", [
        "Line 2, column 54: at /schedule/on/until: on.until is not available: a trigger starts on one event, "
        "with one or any",
    ]),
    ("schedule: { on: { one: { with: { source: https://x.example } } } }\n", [
        "Line 2, column 32: at /schedule/on/one/with: A trigger filter needs a literal type: with: "
        "{ type: <event type> }",
    ]),
    ("schedule: { on: { one: { with: { type: '${ data }' } } } }\n", [
        "Line 2, column 32: at /schedule/on/one/with: A trigger filter needs a literal type: with: "
        "{ type: <event type> }",
    ]),
    ("schedule: { on: { any: [ { with: { type: a } }, { with: { type: a } } ] } }\n", [
        "Line 2, column 49: at /schedule/on/any/1: This filter is the same as an earlier one",
    ]),
    ("schedule: { every: PT59S }\n", ["Line 2, column 20: at /schedule/every: every is at least one minute (PT1M)"]),
    ("schedule: { cron: '0 0 * *' }\n", [
        "Line 2, column 19: at /schedule/cron: A cron expression has five fields: minute, hour, day of month, "
        "month, day of week",
    ]),
    ("schedule: { cron: '0 0 30 2 *' }\n", [
        "Line 2, column 19: at /schedule/cron: This cron expression is never due: no month has such a day",
    ]),
    ("schedule: { on: { one: { with: { type: a, subject: '${ input }' } } } }\n", [
        "Line 2, column 52: at /schedule/on/one/with/subject: A trigger filter matches literal type, source and "
        "subject, data, and the extensions caller, triggerkind, depth, calldepth and definitionversion",
    ]),
    ("schedule: { on: { one: { with: { type: a, data: '${ context }' } } } }\n", [
        "Line 2, column 49: at /schedule/on/one/with/data: context is not a variable here; this place has data",
    ]),
]  # fmt: skip


@pytest.mark.parametrize(("schedule", "expected"), CASES)
def test_schedule_refusals(schedule: str, expected: list[str]) -> None:
    assert refused(schedule) == sorted(expected, key=lambda d: [int(p) for p in d.split(":")[0][5:].split(", column ")])


def test_more_than_64_filters_are_refused() -> None:
    filters = ", ".join(f"{{ with: {{ type: t{i} }} }}" for i in range(65))
    assert refused(f"schedule: {{ on: {{ any: [ {filters} ] }} }}\n") == [
        "Line 2, column 24: at /schedule/on/any: A trigger takes at most 64 filters"
    ]
