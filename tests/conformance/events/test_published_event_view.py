"""Seeds, "Run history and playbook events": a published event as an `event_published` event.

"`event_published` shows the published event's `event_id`, `event_type`, `source`, `subject`, `time` and
`data`, and which attributes the runtime `filled` in", within the "Event fields" and metadata rules.
"""

from __future__ import annotations

import uuid
from typing import Any

from auto_runtime.playbooks.event_publishing import recorded_cloud_event
from tests.conformance.events.publishing import events_url, new_playbook, publish, published_events
from tests.e2e.server_process import ServerProcess

UUID_TEXT = 36


def test_the_event_fields_and_what_data_shows(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    event = {
        "source": "/ledger/eu",
        "type": "com.acme.ledger.month-closed",
        "id": "2026-09",
        "subject": "september",
        "time": "2026-10-01T11:00:00+02:00",
        "datacontenttype": "application/json",
        "data": {"region": "eu", "revenue": 120000},
        "region": "eu",
    }
    answer = publish(local_server, playbook, event).json()
    (shown,) = published_events(local_server, playbook)
    assert set(shown) == {"id", "type", "summary", "data", "metadata"}
    assert shown["type"] == "event_published"
    assert uuid.UUID(shown["id"]) and len(shown["id"]) == UUID_TEXT
    assert shown["summary"].endswith(".") and "com.acme.ledger.month-closed" in shown["summary"]
    assert shown["data"] == {
        "event_id": "2026-09",
        "event_type": "com.acme.ledger.month-closed",
        "source": "/ledger/eu",
        "subject": "september",
        "time": "2026-10-01T09:00:00.000Z",
        "data": {"region": "eu", "revenue": 120000},
        "filled": [],
        "extensions": {"region": "eu"},
    }
    metadata = shown["metadata"]
    assert metadata["stream"].startswith(f"playbook/acme/{playbook}/")
    assert metadata["position"] == 1
    assert isinstance(metadata["global_position"], int)
    assert metadata["correlation_id"] is None and metadata["causation_id"] is None
    assert metadata["by"] == "local"
    assert metadata["at"] == answer["recorded_at"]
    assert not {"run_id", "definition", "depth", "trigger"} & set(metadata)


def test_filled_names_the_attributes_the_runtime_filled_in(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    publish(local_server, playbook, {"source": "/s", "type": "t"})
    publish(local_server, playbook, {"source": "/s", "type": "t", "id": "given"})
    publish(local_server, playbook, {"source": "/s", "type": "t", "time": "2026-10-01T09:00:00Z"})
    filled = [e["data"]["filled"] for e in published_events(local_server, playbook)]
    assert filled == [["id", "time"], ["time"], ["id"]]
    shown = published_events(local_server, playbook)[0]["data"]
    assert shown["subject"] is None
    assert "data" not in shown


def test_large_data_shows_as_its_size_and_get_event_reads_it_whole(local_server: ServerProcess) -> None:
    """ "Large values are shown in full when each is at most 2 KiB as JSON ... a published event's data"."""
    playbook = new_playbook(local_server)
    small: dict[str, Any] = {"note": "x" * 2000}
    large: dict[str, Any] = {"note": "x" * 3000}
    publish(local_server, playbook, {"source": "/s", "type": "t", "id": "small", "data": small})
    publish(local_server, playbook, {"source": "/s", "type": "t", "id": "large", "data": large})
    first, second = published_events(local_server, playbook)
    assert first["data"]["data"] == small
    assert "data" not in second["data"]
    assert second["data"]["data_bytes"] == len('{"note":""}') + 3000
    with local_server.client() as client:
        whole = client.get(f"{events_url(playbook)}/{second['id']}").json()
    assert whole["data"]["data"] == large
    assert whole["data"]["event_id"] == "large"


def test_the_events_of_a_playbook_include_what_was_published(local_server: ServerProcess) -> None:
    """ "They include ... the events published to the playbook"; and the type filter keeps them."""
    playbook = new_playbook(local_server)
    publish(local_server, playbook, {"source": "/s", "type": "t", "id": "one"})
    with local_server.client() as client:
        everything = client.get(events_url(playbook)).json()["events"]
    assert [e["type"] for e in everything] == ["event_published"]


def test_the_record_keeps_the_whole_event(local_server: ServerProcess) -> None:
    """A published event "starts the workflows whose event trigger matches it": the record keeps every attribute,
    so the CloudEvent a trigger takes can be read back from `get_event` whole."""
    playbook = new_playbook(local_server)
    event = {
        "source": "https://acme.example/ledger",
        "type": "com.acme.ledger.month-closed",
        "id": "2026-09",
        "subject": "september",
        "time": "2026-10-01T11:00:00.123456+02:00",
        "specversion": "1.0",
        "datacontenttype": "application/json",
        "dataschema": "https://acme.example/schemas/month",
        "data": {"region": "eu", "revenue": 120000},
        "region": "eu",
        "audited": True,
        "count": 3,
    }
    publish(local_server, playbook, event)
    (shown,) = published_events(local_server, playbook)
    with local_server.client() as client:
        whole = client.get(f"{events_url(playbook)}/{shown['id']}").json()
    assert whole["data"]["given_time"] == event["time"]
    assert recorded_cloud_event(whole["data"]) == {**event, "time": "2026-10-01T09:00:00.123Z"}
    publish(local_server, playbook, {"source": "/s", "type": "t", "id": "bare"})
    bare = published_events(local_server, playbook)[-1]
    with local_server.client() as client:
        whole = client.get(f"{events_url(playbook)}/{bare['id']}").json()
    assert recorded_cloud_event(whole["data"]) == {
        "specversion": "1.0",
        "id": "bare",
        "source": "/s",
        "type": "t",
        "time": whole["data"]["time"],
    }
