"""Spec, recall-format.md: "The events", "Filters", "The module" (clocks, the view as JSON gives it back), and
"Building and rebuilding", through the real server: events are published or recorded by runs, the view is
folded in the background, and the test reads it back through a run or the standing."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conformance.helpers import ECHO_PROGRAM, create_computation, fresh_id, problem
from tests.conformance.recall.documents import (
    caught_up,
    counting,
    output_of,
    publish,
    recall,
    run,
    saved,
    standing_of,
    update,
)
from tests.e2e.server_process import ServerProcess

KEEP_EVENTS = "def fold(view, event):\n    return view + [event]\n"


def events_view(front: str) -> str:
    return recall(front + "view:\n  initial: []\n", KEEP_EVENTS)


def view_of(client: httpx.Client, playbook: str, name: str, folded: int) -> Any:
    caught_up(client, playbook, name, folded)
    return output_of(run(client, playbook, name))


def test_published_events_reach_the_view_in_their_form(client: httpx.Client, playbook: str) -> None:
    kind = fresh_id("com.acme.form")
    name = fresh_id("form")
    saved(client, playbook, name, events_view(f"source:\n  events:\n    - type: {kind}\n"))
    published = publish(
        client,
        playbook,
        kind,
        {"a": [1, 2.5]},
        source="/shop",
        subject="order-1",
        region="eu",
        dataschema="https://x/s",
    )
    (event,) = view_of(client, playbook, name, 1)
    assert event["specversion"] == "1.0"
    assert event["id"] == published["id"]
    assert event["time"] == published["time"]
    assert event["type"] == kind
    assert event["source"] == "/shop"
    assert event["subject"] == "order-1"
    assert event["region"] == "eu"
    assert event["dataschema"] == "https://x/s"
    assert event["data"] == {"a": [1, 2.5]}


def test_run_and_definition_events_and_never_the_view_s_own_runs(client: httpx.Client, playbook: str) -> None:
    echo = fresh_id("echo")
    name = fresh_id("runs")
    front = (
        "source:\n  events:\n"
        f"    - type: run_succeeded\n      subject: computation/{echo}\n"
        f"    - type: definition_created\n      source: /definitions/computation/{echo}\n"
        "    - type: run_succeeded\n"
        f"      subject: recall/NAME\n"
    )
    saved(client, playbook, name, events_view(front.replace("NAME", name)))
    create_computation(client, playbook, echo, ECHO_PROGRAM)
    ran = client.post(f"{playbook}/definitions/computation/{echo}/run", json={"input": {"x": 1}}).json()
    created, succeeded = view_of(client, playbook, name, 2)
    assert created["type"] == "definition_created"
    assert created["source"] == f"/definitions/computation/{echo}"
    assert created["definitionversion"] == 1
    assert "data" not in created and "subject" not in created
    assert succeeded["type"] == "run_succeeded"
    assert succeeded["source"] == f"/runs/{ran['run_id']}"
    assert succeeded["subject"] == f"computation/{echo}"
    assert succeeded["data"] == {"output": {"x": 1}}
    assert isinstance(succeeded["caller"], str) and succeeded["caller"]
    assert succeeded["definitionversion"] == 1
    for _ in range(3):
        output_of(run(client, playbook, name))
    publish(client, playbook, fresh_id("com.acme.nudge"))
    standing = caught_up(client, playbook, name, 2)
    assert standing["folded"] == 2


def test_filters_take_by_every_key_of_one_filter(client: httpx.Client, playbook: str) -> None:
    kind = fresh_id("com.acme.filtered")
    name = fresh_id("filtered")
    front = (
        "source:\n  events:\n"
        f"    - type: {kind}\n      data: {{region: eu}}\n"
        f"    - type: {kind}\n      tier: 2\n"
        f"    - type: {kind}\n      flag: true\n      source: /a\n"
        f"    - type: {kind}\n      where: big\n"
    )
    module = "def big(data):\n    return data['n'] > 10\n\n" + KEEP_EVENTS
    saved(client, playbook, name, recall(front + "view:\n  initial: []\n", module))
    publish(client, playbook, kind, {"region": "eu"}, id="take-data")
    publish(client, playbook, kind, {"region": "eu", "revenue": 5}, id="skip-data")
    publish(client, playbook, kind, None, id="take-tier", tier=2)
    publish(client, playbook, kind, None, id="skip-tier-text", tier="2")
    publish(client, playbook, kind, None, id="take-flag", flag=True, source="/a")
    publish(client, playbook, kind, None, id="skip-flag-source", flag=True, source="/b")
    publish(client, playbook, kind, {"n": 11}, id="take-where")
    publish(client, playbook, kind, {"n": 1}, id="skip-where")
    publish(client, playbook, kind, {"m": 1}, id="skip-where-raises")
    publish(client, playbook, kind, {"region": "eu", "n": 50}, id="skip-data-but-where", tier=2)
    publish(client, playbook, fresh_id("com.acme.other"), None, id="last-other")
    taken = [event["id"] for event in view_of(client, playbook, name, 5)]
    assert taken == ["take-data", "take-tier", "take-flag", "take-where", "skip-data-but-where"]


def test_a_fold_reads_its_event_s_time_and_the_view_as_json_gives_it_back(client: httpx.Client, playbook: str) -> None:
    kind = fresh_id("com.acme.clock")
    name = fresh_id("clock")
    module = (
        "import time\n"
        "def fold(view, event):\n"
        "    view['seen'].append([time.time(), list(view['order'].keys()), type(view['pair']) is list])\n"
        "    view['order'] = {'b': 1, 'a': 2}\n"
        "    view['pair'] = (1, 2)\n"
        "    return view\n"
    )
    front = f"source:\n  events:\n    - type: {kind}\nview:\n  initial: {{seen: [], order: {{}}, pair: []}}\n"
    saved(client, playbook, name, recall(front, module))
    publish(client, playbook, kind, None, time="2026-10-02T07:30:00.000Z")
    publish(client, playbook, kind, None, time="2026-10-03T09:45:00.500Z")
    view = view_of(client, playbook, name, 2)
    assert view["seen"] == [[1790926200.0, [], True], [1791020700.5, ["a", "b"], True]]


def test_a_new_version_rebuilds_from_the_first_record(client: httpx.Client, playbook: str) -> None:
    kind = fresh_id("com.acme.rebuilt")
    name = fresh_id("rebuilt")
    saved(client, playbook, name, counting(kind))
    for index in range(3):
        publish(client, playbook, kind, None, id=f"r-{index}")
    assert view_of(client, playbook, name, 3)["count"] == 3
    second = counting(kind).replace('view["count"] += 1', 'view["count"] += 10')
    assert update(client, playbook, name, second)["version"] == 2
    standing = caught_up(client, playbook, name, 3)
    assert standing["version"] == 2
    assert output_of(run(client, playbook, name)) == {"count": 30, "ids": ["r-0", "r-1", "r-2"]}
    assert update(client, playbook, name, second)["version"] == 2
    assert standing_of(client, playbook, name)["version"] == 2


def test_a_retired_function_has_no_standing_and_does_not_run(client: httpx.Client, playbook: str) -> None:
    kind = fresh_id("com.acme.retired")
    name = fresh_id("retired")
    saved(client, playbook, name, counting(kind))
    caught_up(client, playbook, name, 0)
    retired = client.post(f"{playbook}/definitions/recall/{name}/retire")
    assert retired.status_code == 200, retired.text
    assert "standing" not in client.get(f"{playbook}/definitions/recall/{name}").json()
    problem(run(client, playbook, name), 409, "conflict")


def test_a_record_too_deep_to_be_an_event_is_passed_over_and_logged(
    local_server: ServerProcess, client: httpx.Client, playbook: str
) -> None:
    """A run's output 511 levels deep makes a `run_succeeded` event deeper than 512 levels: no view takes it,
    the views go past it, and the server notes `record_passed_over` in its log."""
    deep = fresh_id("deep")
    name = fresh_id("past-deep")
    kind = fresh_id("com.acme.after-deep")
    program = (
        "---\nlanguage: python\n---\n"
        "def main(input):\n    value = 1\n    for _ in range(input['n']):\n        value = [value]\n    return value\n"
    )
    create_computation(client, playbook, deep, program)
    front = f"source:\n  events:\n    - type: run_succeeded\n      subject: computation/{deep}\n    - type: {kind}\n"
    saved(
        client,
        playbook,
        name,
        recall(front + "view:\n  initial: []\n", 'def fold(view, event):\n    return view + [event["type"]]\n'),
    )
    shallow = client.post(f"{playbook}/definitions/computation/{deep}/run", json={"input": {"n": 3}})
    assert shallow.status_code == 200, shallow.text
    ran = client.post(f"{playbook}/definitions/computation/{deep}/run", json={"input": {"n": 511}})
    assert ran.status_code == 200, ran.text
    publish(client, playbook, kind)
    assert view_of(client, playbook, name, 2) == ["run_succeeded", kind]
    assert "record_passed_over" in local_server.log()
