"""Spec, recall-format.md: "Fields", "Filters", "The module" and "Checked when it is saved".

Each refusal is sent as a real `POST /definitions/recall`: `invalid_input` (422), one entry of `errors` per
problem at `/source`, each `detail` beginning with `Line N: ` (line 1 is the opening `---`), and nothing saved.
"""

from __future__ import annotations

import httpx
import pytest

from tests.conformance.helpers import fresh_id, problem
from tests.conformance.recall.documents import LATE_SHIPMENTS, details, recall, save, saved

FOLD = "def fold(view, event):\n    return view\n"
EVENTS = "source:\n  events:\n    - type: com.acme.thing\n"
SEVEN = (
    "run_started, run_succeeded, run_rejected, run_failed, definition_created, definition_updated, "
    "definition_retired or a type published to the playbook"
)
NOT_A_FILTER = "A filter is a mapping of what an event must have: type, and optionally other attributes, data and where"


def refused(client: httpx.Client, playbook: str, source: str) -> list[str]:
    """Save `source`; it must be refused and leave nothing saved. The `detail` of each error, in order."""
    name = fresh_id("refused")
    body = problem(save(client, playbook, name, source), 422, "invalid_input")
    found = details(body)
    assert body["detail"] == " ".join(found)
    problem(client.get(f"{playbook}/definitions/recall/{name}"), 404, "not_found")
    return found


def test_the_second_example_saves_and_is_used_by_its_subject(client: httpx.Client, playbook: str) -> None:
    """A filter on `subject: reasoning/grade-shipment` lists the recall function under **Used by** there."""
    name = fresh_id("late")
    body = saved(client, playbook, name, LATE_SHIPMENTS)
    assert body["media_type"] == "text/markdown"
    assert body["description"] == "The late shipments grade-shipment found, the last 50, oldest first"
    assert body.get("input_schema") is None
    computation = "---\nlanguage: python\n---\ndef main(input):\n    return input\n"
    named = fresh_id("named")
    source = recall(
        f"source:\n  events:\n    - type: definition_updated\n      source: /definitions/computation/{named}\n", FOLD
    )
    watcher = fresh_id("watcher")
    saved(client, playbook, watcher, source)
    response = client.post(f"{playbook}/definitions/computation", json={"name": named, "source": computation})
    assert response.status_code == 201, response.text
    overview = client.get(f"{playbook}/definitions/computation/{named}").json()["overview"]
    assert f"- the recall `{watcher}`, which folds its changes into its view" in overview


def test_fields_that_are_not_recall_fields_are_refused_at_their_lines(client: httpx.Client, playbook: str) -> None:
    source = (
        "---\nlanguage: python\nmodel: gpt\n"
        + EVENTS
        + "output:\n  shape: series\n  format: json\ninput:\n  default: {}\n---\n"
        + FOLD
    )
    assert refused(client, playbook, source) == [
        "Line 3: model is not a field of a recall function",
        "Line 8: output.shape is not a field of a recall function",
        "Line 9: output.format is not a field of a recall function",
        "Line 11: input.default is not a field of a recall function",
    ]


def test_a_missing_or_empty_source_events_is_refused(client: httpx.Client, playbook: str) -> None:
    assert refused(client, playbook, recall("", FOLD)) == [
        "Line 1: The front matter names the events the view folds: source.events"
    ]
    assert refused(client, playbook, recall("source:\n  events: []\n", FOLD)) == [
        "Line 4: A recall function folds the events at least one filter names; it names none"
    ]


def test_more_than_eight_filters_are_refused(client: httpx.Client, playbook: str) -> None:
    filters = "".join(f"    - type: com.acme.t{index}\n" for index in range(9))
    assert refused(client, playbook, recall("source:\n  events:\n" + filters, FOLD)) == [
        "Line 4: A recall function takes at most 8 filters; it names 9"
    ]


def test_filter_rules_each_at_their_line(client: httpx.Client, playbook: str) -> None:
    front = (
        "source:\n  events:\n"
        "    - subject: x\n"  # 5: no type
        "    - type: step_finished\n"  # 6: reserved outside the seven
        "    - type: event_published\n"  # 7
        "    - type: com.acme.a\n      Bad: 1\n"  # 8, 9: not an attribute name
        "    - type: com.acme.b\n      depth: 1.5\n"  # 10, 11: not text, whole number or boolean
        "    - type: com.acme.c\n      where: nothing\n"  # 12, 13: no such function
        "    - type: com.acme.d\n      where: fold\n"  # 14, 15: fold takes two
    )
    assert refused(client, playbook, recall(front, FOLD)) == [
        f"Line 5: {NOT_A_FILTER}",
        f"Line 6: No event of the type step_finished reaches a view: a filter takes {SEVEN}",
        f"Line 7: No event of the type event_published reaches a view: a filter takes {SEVEN}",
        "Line 9: Bad is not an attribute a filter can name",
        "Line 11: A filter compares depth with a text, a whole number, true or false",
        "Line 13: where names a top-level function of the module with one parameter, as def nothing(data)",
        "Line 15: where names a top-level function of the module with one parameter, as def fold(data)",
    ]
    assert refused(client, playbook, recall("source:\n  events:\n    - just text\n", FOLD)) == [
        f"Line 5: {NOT_A_FILTER}"
    ]


@pytest.mark.parametrize("event_type", ["run_started", "run_succeeded", "run_rejected", "run_failed",
                                        "definition_created", "definition_updated", "definition_retired"])  # fmt: skip
def test_the_seven_runtime_types_and_published_types_are_taken(
    client: httpx.Client, playbook: str, event_type: str
) -> None:
    source = recall(f"source:\n  events:\n    - type: {event_type}\n    - type: com.acme.mine\n", FOLD)
    saved(client, playbook, fresh_id("seven"), source)


def test_every_other_reserved_type_is_refused(client: httpx.Client, playbook: str) -> None:
    """What to verify 5: the reserved types a filter may not name are the HTTP reference's less the seven."""
    for event_type in ("run_deferred", "run_cancel_requested", "tool_call_started", "workflow_input_applied",
                       "step_waiting", "reaction_refused", "build_asked", "interaction_requested"):  # fmt: skip
        source = recall(f"source:\n  events:\n    - type: {event_type}\n", FOLD)
        assert refused(client, playbook, source) == [
            f"Line 5: No event of the type {event_type} reaches a view: a filter takes {SEVEN}"
        ]


def test_the_module_rules_in_place_of_main(client: httpx.Client, playbook: str) -> None:
    """The rules for `fold`, `answer` and `where` functions, each at the line of its `def`."""
    assert refused(client, playbook, recall(EVENTS, "def other(view, event):\n    return view\n")) == [
        "Line 7: The module needs a top-level fold: def fold(view, event)"
    ]
    assert refused(client, playbook, recall(EVENTS, "def fold(view):\n    return view\n")) == [
        "Line 7: fold takes exactly two parameters: def fold(view, event)"
    ]
    assert refused(client, playbook, recall(EVENTS, "def fold(view, event=1):\n    return view\n")) == [
        "Line 7: fold takes exactly two parameters: def fold(view, event)"
    ]
    module = FOLD + "def answer(view, *rest):\n    return view\n"
    assert refused(client, playbook, recall(EVENTS, module)) == [
        "Line 9: answer takes exactly two parameters: def answer(view, input)"
    ]
    module = "def fold(view, event):\n    yield view\n\ndef answer(view, input):\n    yield view\n"
    assert refused(client, playbook, recall(EVENTS, module)) == [
        "Line 7: fold must return its result, not yield it",
        "Line 10: answer must return its result, not yield it",
    ]
    front = "source:\n  events:\n    - type: com.acme.thing\n      where: taken\n"
    module = FOLD + "def taken(data):\n    yield True\n"
    assert refused(client, playbook, recall(front, module)) == ["Line 10: taken must return its result, not yield it"]


def test_the_computation_rules_hold_for_the_module(client: httpx.Client, playbook: str) -> None:
    module = "import os\nCOUNTS = []\n\ndef fold(view, event):\n    global COUNTS\n    return id(view)\n"
    found = refused(client, playbook, recall(EVENTS, module))
    assert found[0] == "Line 7: Only math, re, json, collections, heapq and time can be imported; this line imports os"
    assert any(detail.startswith("Line 8: A top-level name must hold a constant") for detail in found)
    assert "Line 11: global is not available: a function cannot rebind a top-level name" in found
    assert "Line 12: id is not available: a program sees only its input and builds no code at run time" in found
    assert refused(client, playbook, recall(EVENTS, "")) == [
        "Line 6: The document holds no program after its front matter"
    ]


def test_view_initial_is_checked_against_its_bounds_and_schema(client: httpx.Client, playbook: str) -> None:
    """A document cannot hold 524,288 bytes (65,536 at most), so of the bounds only a value JSON cannot write (a
    YAML date) reaches the first sentence."""
    front = EVENTS + "view:\n  initial: 3\n  schema: { type: array }\n"
    found = refused(client, playbook, recall(front, FOLD))
    assert len(found) == 1
    assert found[0].startswith("Line 7: view.initial does not match view.schema: ")
    front = EVENTS + "view:\n  initial: 2026-10-02\n"
    assert refused(client, playbook, recall(front, FOLD)) == [
        "Line 7: view.initial takes more than the 524,288 bytes a view may"
    ]
