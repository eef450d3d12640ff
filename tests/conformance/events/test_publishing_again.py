"""Seeds, "Publishing the same event again": one event for each `source` and `id`, through the real server."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.conformance.events.publishing import new_playbook, publish, published_events
from tests.e2e.server_process import ServerProcess

EVENT: dict[str, Any] = {
    "source": "/ledger/eu",
    "type": "com.acme.ledger.month-closed",
    "id": "2026-09",
    "subject": "september",
    "datacontenttype": "application/json",
    "dataschema": "https://acme.example/schemas/month",
    "data": {"region": "eu", "revenue": 120000},
    "region": "eu",
}


def test_the_same_event_again_records_nothing_and_returns_the_first_answer(local_server: ServerProcess) -> None:
    """ "Publishing the same event again records nothing, and returns the first `id`, `time` and `recorded_at`"."""
    playbook = new_playbook(local_server)
    first = publish(local_server, playbook, EVENT)
    assert first.status_code == 200, first.text
    again = publish(
        local_server, playbook, {**EVENT, "specversion": "1.0", "data": {"revenue": 120000.0, "region": "eu"}}
    )
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert len(published_events(local_server, playbook)) == 1


def test_a_retry_that_leaves_out_time_is_the_same_event(local_server: ServerProcess) -> None:
    """ "A retry that leaves out `time` is the same event"."""
    playbook = new_playbook(local_server)
    first = publish(local_server, playbook, {**EVENT, "time": "2026-10-01T09:00:00Z"})
    again = publish(local_server, playbook, EVENT)
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert again.json()["time"] == "2026-10-01T09:00:00.000Z"
    assert len(published_events(local_server, playbook)) == 1


def test_a_retry_that_gives_a_time_returns_the_time_filled_in_the_first_time(local_server: ServerProcess) -> None:
    """ "A retry that gives a `time` to an event first published without one is the same event too. It returns the
    time the runtime filled in the first time, not the one the retry gave"."""
    playbook = new_playbook(local_server)
    first = publish(local_server, playbook, EVENT)
    again = publish(local_server, playbook, {**EVENT, "time": "2020-01-01T00:00:00Z"})
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert again.json()["time"] != "2020-01-01T00:00:00.000Z"
    assert len(published_events(local_server, playbook)) == 1


def test_times_are_compared_as_instants(local_server: ServerProcess) -> None:
    """ "`2026-10-01T10:59:00+02:00` is the same time as `2026-10-01T08:59:00Z`"."""
    playbook = new_playbook(local_server)
    first = publish(local_server, playbook, {**EVENT, "time": "2026-10-01T10:59:00+02:00"})
    for same in ("2026-10-01T08:59:00Z", "2026-10-01T08:59:00.000z", "2026-10-01T07:59:00-01:00"):
        again = publish(local_server, playbook, {**EVENT, "time": same})
        assert again.status_code == 200, (same, again.text)
        assert again.json() == first.json()
    for other in ("2026-10-01T08:59:01Z", "2026-10-01T08:59:00.0001Z", "2026-10-01T10:59:00Z"):
        response = publish(local_server, playbook, {**EVENT, "time": other})
        assert response.status_code == 409, other
        assert response.json()["reason"] == "conflict"
    assert len(published_events(local_server, playbook)) == 1


def test_a_leap_second_is_the_first_second_of_the_next_day(local_server: ServerProcess) -> None:
    """ "`2016-12-31T23:59:60Z` is the same time as `2017-01-01T00:00:00Z`"."""
    playbook = new_playbook(local_server)
    first = publish(local_server, playbook, {**EVENT, "time": "2016-12-31T23:59:60Z"})
    assert first.json()["time"] == "2017-01-01T00:00:00.000Z"
    again = publish(local_server, playbook, {**EVENT, "time": "2017-01-01T00:00:00Z"})
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    other = new_playbook(local_server)
    first = publish(local_server, other, {**EVENT, "time": "2017-01-01T00:00:00Z"})
    again = publish(local_server, other, {**EVENT, "time": "2016-12-31T23:59:60Z"})
    assert again.status_code == 200, again.text
    assert again.json() == first.json()


def test_a_different_event_with_the_same_source_and_id_is_a_conflict(local_server: ServerProcess) -> None:
    """ "A different event with the same `source` and `id` returns `conflict`"."""
    playbook = new_playbook(local_server)
    assert publish(local_server, playbook, EVENT).status_code == 200
    without_subject = {key: value for key, value in EVENT.items() if key != "subject"}
    without_data = {key: value for key, value in EVENT.items() if key != "data"}
    without_extension = {key: value for key, value in EVENT.items() if key != "region"}
    different = [
        {**EVENT, "type": "com.acme.ledger.month-opened"},
        {**EVENT, "subject": "october"},
        without_subject,
        {**EVENT, "data": {"region": "eu", "revenue": 120001}},
        {**EVENT, "data": {"region": "eu", "revenue": "120000"}},
        without_data,
        {**EVENT, "region": "us"},
        {**EVENT, "region": True},
        without_extension,
        {**EVENT, "audited": True},
        {**EVENT, "datacontenttype": "text/plain"},
        {**EVENT, "dataschema": "https://acme.example/schemas/other"},
    ]
    for event in different:
        response = publish(local_server, playbook, event)
        assert response.status_code == 409, event
        problem = response.json()
        assert problem["reason"] == "conflict"
        assert problem["type"] == "https://on.auto/problems/conflict"
    assert len(published_events(local_server, playbook)) == 1


def test_one_event_for_each_source_and_id(local_server: ServerProcess) -> None:
    """The same id under another source is another event, and the same source with another id too."""
    playbook = new_playbook(local_server)
    assert publish(local_server, playbook, EVENT).status_code == 200
    assert publish(local_server, playbook, {**EVENT, "source": "/ledger/us"}).status_code == 200
    assert publish(local_server, playbook, {**EVENT, "id": "2026-10"}).status_code == 200
    assert len(published_events(local_server, playbook)) == 3
    other = new_playbook(local_server)
    assert publish(local_server, other, EVENT).status_code == 200


def test_a_made_id_can_be_retried_like_a_given_one(local_server: ServerProcess) -> None:
    """`id`: "Unique among the events of its source; the runtime makes one when you leave it out"."""
    playbook = new_playbook(local_server)
    without_id = {key: value for key, value in EVENT.items() if key != "id"}
    first = publish(local_server, playbook, without_id).json()
    again = publish(local_server, playbook, {**without_id, "id": first["id"]})
    assert again.status_code == 200
    assert again.json() == first
    assert len(published_events(local_server, playbook)) == 1


def test_the_same_event_at_the_same_moment_is_recorded_once(local_server: ServerProcess) -> None:
    """Requests at the same moment: one records the event and every one returns the first answer."""
    playbook = new_playbook(local_server)
    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(lambda _: publish(local_server, playbook, EVENT), range(8)))
    assert {r.status_code for r in responses} == {200}
    assert len({r.text for r in responses}) == 1
    assert len(published_events(local_server, playbook)) == 1
