"""Spec, recall-format.md: "A function document", the first example end to end through the real server.

The three incidents of the spec are published to the playbook; the view folds to the spec's view (read through
`answer`), and a run for `fenwick-steel` answers the spec's output; its record says where the view had read to.
"""

from __future__ import annotations

import httpx

from tests.conformance.helpers import fresh_id
from tests.conformance.recall.documents import INCIDENTS, caught_up, output_of, publish, run, saved

INCIDENT = "com.acme.quality.incident-logged"
PLANT = "/quality/plant-7"
FENWICK = {
    "count": 2,
    "latest": [
        {"at": "2026-10-02T07:30:00.000Z", "severity": 3},
        {"at": "2026-10-03T09:45:00.000Z", "severity": 4},
    ],
}


def test_the_spec_example_folds_the_three_incidents(client: httpx.Client, playbook: str) -> None:
    name = fresh_id("incidents")
    body = saved(client, playbook, name, INCIDENTS)
    assert body["type"] == "recall"
    assert body["media_type"] == "text/markdown"
    assert body["description"] == "Incidents logged against each supplier, the latest five kept, with a count"
    assert body["input_schema"]["required"] == ["supplier"]
    assert body["output_schema"]["required"] == ["count", "latest"]
    published = [
        ("inc-1041", "2026-10-02T07:30:00.000Z", {"supplier": "fenwick-steel", "severity": 3, "note": "crushed"}),
        ("inc-1042", "2026-10-02T11:05:00.000Z", {"supplier": "oakridge-pack", "severity": 1}),
        ("inc-1043", "2026-10-03T09:45:00.000Z", {"supplier": "fenwick-steel", "severity": 4}),
    ]
    for event_id, time, data in published:
        publish(client, playbook, INCIDENT, data, source=PLANT, id=event_id, time=time)
    standing = caught_up(client, playbook, name, 3)
    assert standing["version"] == 1
    assert standing["last_event"] == {"id": "inc-1043", "time": "2026-10-03T09:45:00.000Z"}
    assert output_of(run(client, playbook, name, {"supplier": "fenwick-steel"})) == FENWICK
    assert output_of(run(client, playbook, name, {"supplier": "oakridge-pack"})) == {
        "count": 1,
        "latest": [{"at": "2026-10-02T11:05:00.000Z", "severity": 1}],
    }
    ran = run(client, playbook, name, {"supplier": "fenwick-steel"}).json()
    record = client.get(f"{playbook}/runs/{ran['run_id']}").json()["record"]
    assert record["view"]["version"] == 1
    assert record["view"]["folded"] == 3
    assert isinstance(record["view"]["checkpoint"], str)
    assert isinstance(record["view"]["checkpoint_at"], str)
    assert record["view"]["last_event"] == {"id": "inc-1043", "time": "2026-10-03T09:45:00.000Z"}
    assert record["language"] == "python"
