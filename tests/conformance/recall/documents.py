"""Documents and small HTTP helpers shared by the recall conformance tests (spec recall-format.md).

Every helper speaks to the real server over HTTP; nothing below the routes is imported. A view is folded by
the server in the background, so `standing_until` reads `get_definition` again until the view reaches the
state asked for (bounded, never timed: the assertion is on the state, not on how long it took).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx

from tests.conformance.helpers import fresh_id

WAIT_BOUND_SECONDS = 120.0
"""How long a test waits for a view to reach a state before it fails: far beyond what folding takes."""

INCIDENTS = """---
description: Incidents logged against each supplier, the latest five kept, with a count
language: python
source:
  events:
    - type: com.acme.quality.incident-logged
      source: /quality/plant-7
view:
  initial: {}
  schema:
    type: object
    maxProperties: 200
    additionalProperties:
      type: object
      required: [count, latest]
      properties:
        count: { type: integer }
        latest: { type: array, maxItems: 5 }
input:
  schema:
    type: object
    required: [supplier]
    properties:
      supplier: { type: string }
output:
  schema: { type: object, required: [count, latest] }
---
KEEP = 5
MOST_SUPPLIERS = 200

def fold(view, event):
    data = event.get("data")
    if type(data) is not dict:
        return view
    supplier = data.get("supplier")
    if type(supplier) is not str or supplier == "":
        supplier = "unknown"
    severity = data.get("severity")
    if type(severity) is not int:
        severity = 0
    entry = view.get(supplier, {"count": 0, "latest": []})
    entry["count"] += 1
    entry["latest"] = (entry["latest"] + [{"at": event["time"], "severity": severity}])[-KEEP:]
    view[supplier] = entry
    if len(view) > MOST_SUPPLIERS:
        quietest = sorted(view, key=lambda name: (view[name]["latest"][-1]["at"], name))[0]
        del view[quietest]
    return view

def answer(view, input):
    return view.get(input["supplier"], {"count": 0, "latest": []})
"""

LATE_SHIPMENTS = """---
description: The late shipments grade-shipment found, the last 50, oldest first
language: python
source:
  events:
    - type: run_succeeded
      subject: reasoning/grade-shipment
      where: graded_late
view:
  initial: []
  schema: { type: array, maxItems: 50 }
---
def graded_late(data):
    output = data.get("output") if type(data) is dict else None
    return type(output) is dict and output.get("grade") == "late"

def fold(view, event):
    output = event["data"]["output"]
    shipment = output.get("shipment")
    reason = output.get("reason")
    entry = {
        "run": event["source"],
        "at": event["time"],
        "shipment": shipment if type(shipment) is str else None,
        "reason": reason[:200] if type(reason) is str else None,
    }
    return (view + [entry])[-50:]
"""


def recall(front_matter: str, module: str) -> str:
    """A recall document with `language: python`, then the `front_matter` lines, then the module."""
    return f"---\nlanguage: python\n{front_matter}---\n{module}"


def counting(event_type: str, extra: str = "") -> str:
    """A view that counts the events of one published type and keeps their ids in order."""
    return recall(
        f"source:\n  events:\n    - type: {event_type}\n{extra}view:\n  initial: {{count: 0, ids: []}}\n",
        'def fold(view, event):\n    view["count"] += 1\n    view["ids"].append(event["id"])\n    return view\n',
    )


def save(client: httpx.Client, playbook: str, name: str, source: str) -> httpx.Response:
    return client.post(f"{playbook}/definitions/recall", json={"name": name, "source": source})


def saved(client: httpx.Client, playbook: str, name: str, source: str) -> dict[str, Any]:
    response = save(client, playbook, name, source)
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def update(client: httpx.Client, playbook: str, name: str, source: str) -> dict[str, Any]:
    response = client.put(f"{playbook}/definitions/recall/{name}", json={"source": source})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def run(client: httpx.Client, playbook: str, name: str, value: object = None, **fields: Any) -> httpx.Response:
    body: dict[str, Any] = dict(fields)
    if value is not None:
        body["input"] = value
    return client.post(f"{playbook}/definitions/recall/{name}/run", json=body)


def output_of(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["status"] == "succeeded", body
    return body["output"]


def publish(
    client: httpx.Client, playbook: str, event_type: str, data: Any = None, **attributes: Any
) -> dict[str, Any]:
    event: dict[str, Any] = {"type": event_type, "source": attributes.pop("source", "/tests"), **attributes}
    if data is not None:
        event["data"] = data
    response = client.post(f"{playbook}/events", json={"event": event})
    assert response.status_code in (200, 201), response.text
    body: dict[str, Any] = response.json()
    return body


def standing_of(client: httpx.Client, playbook: str, name: str) -> dict[str, Any]:
    response = client.get(f"{playbook}/definitions/recall/{name}")
    assert response.status_code == 200, response.text
    standing: dict[str, Any] = response.json()["standing"]
    return standing


def standing_until(
    client: httpx.Client, playbook: str, name: str, holds: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The standing once `holds` is true of it; fails with the last standing seen after the wait bound."""
    bound = time.monotonic() + WAIT_BOUND_SECONDS
    standing = standing_of(client, playbook, name)
    while not holds(standing):
        assert time.monotonic() < bound, json.dumps(standing)
        time.sleep(0.05)
        standing = standing_of(client, playbook, name)
    return standing


def caught_up(client: httpx.Client, playbook: str, name: str, folded: int) -> dict[str, Any]:
    """The standing once the view is live and has folded `folded` events."""
    return standing_until(client, playbook, name, lambda s: s["state"] == "live" and s["folded"] >= folded)


def details(body: dict[str, Any]) -> list[str]:
    errors: list[dict[str, str]] = body["errors"]
    assert all(error["pointer"] == "/source" for error in errors), errors
    return [error["detail"] for error in errors]


REBUILDS = "Saving a corrected version rebuilds it from the start of the playbook's history"


def stalled(client: httpx.Client, playbook: str, name: str) -> dict[str, Any]:
    return standing_until(client, playbook, name, lambda standing: standing["state"] == "stalled")


def stall_with(
    client: httpx.Client, playbook: str, fold_body: str, view_schema: str = ""
) -> tuple[str, dict[str, Any], str]:
    """A view whose fold runs `fold_body` on the event `boom` (after one ordinary event), stalled there."""
    kind = fresh_id("com.acme.stall")
    name = fresh_id("stall")
    module = f"def fold(view, event):\n    if event['id'] != 'boom':\n        return view + [event['id']]\n{fold_body}"
    saved(
        client,
        playbook,
        name,
        recall(f"source:\n  events:\n    - type: {kind}\nview:\n  initial: []\n{view_schema}", module),
    )
    publish(client, playbook, kind, None, id="fine", source=f"/{name}")
    boom = publish(client, playbook, kind, None, id="boom", source=f"/{name}")
    publish(client, playbook, kind, None, id="after", source=f"/{name}")
    standing = stalled(client, playbook, name)
    assert standing["folded"] == 1
    assert standing["last_event"]["id"] == "fine"
    assert standing["stalled"]["event"] == {"id": "boom", "type": kind, "time": boom["time"]}
    return name, standing, boom["time"]


def others_go_on_and_a_correction_rebuilds(client: httpx.Client, playbook: str, name: str, kind: str) -> None:
    """After `stall_with`: another view of the same events folds all three, and a corrected version of the
    stalled one rebuilds from the start and answers every event."""
    other = fresh_id("other")
    saved(client, playbook, other, counting(kind))
    assert caught_up(client, playbook, other, 3)["folded"] == 3
    corrected = recall(
        f"source:\n  events:\n    - type: {kind}\nview:\n  initial: []\n",
        "def fold(view, event):\n    return view + [event['id']]\n",
    )
    update(client, playbook, name, corrected)
    caught_up(client, playbook, name, 3)
    assert output_of(run(client, playbook, name)) == ["fine", "boom", "after"]
