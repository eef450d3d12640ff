"""Seeds, "Analytics": every parameter rule and the shape of the result, through the real HTTP server.

The counting rules need runs; `test_analytics_counting.py` checks them over a real ledger. "Today" is read
before and after each request, so a test that meets midnight still knows which day the server took.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.conformance.events.publishing import new_playbook, pointers_of
from tests.e2e.server_process import ServerProcess

ZERO_RUNS = {"total": 0, "succeeded": 0, "failed": 0, "rejected": 0}
ZERO_TOKENS = {"input": 0, "output": 0, "cached": 0}


def analytics_url(playbook: str) -> str:
    return f"/v1/orgs/acme/playbooks/{playbook}/analytics"


def today() -> date:
    return datetime.now(UTC).date()


def ask(server: ServerProcess, playbook: str, params: Mapping[str, Any] | str = "") -> httpx.Response:
    with server.client() as client:
        if isinstance(params, str):
            return client.get(analytics_url(playbook) + params)
        return client.get(analytics_url(playbook), params=dict(params))


def days_of(first: date, last: date) -> list[str]:
    return [(first + timedelta(days=n)).isoformat() for n in range((last - first).days + 1)]


def test_seven_days_ending_today_when_nothing_is_given(local_server: ServerProcess) -> None:
    """`days`: "`7` when nothing is given"; `by_day` "holds every day of the window, oldest first, including
    days with no runs"."""
    playbook = new_playbook(local_server)
    before = today()
    response = ask(local_server, playbook)
    after = today()
    assert response.status_code == 200, response.text
    body = response.json()
    assert list(body) == ["days", "runs", "tokens", "duration_ms", "by_day", "by_function"]
    assert body["days"] == 7
    assert body["runs"] == ZERO_RUNS and body["tokens"] == ZERO_TOKENS
    assert body["duration_ms"] is None
    assert body["by_function"] == []
    assert [d["day"] for d in body["by_day"]] in (
        days_of(before - timedelta(days=6), before),
        days_of(after - timedelta(days=6), after),
    )
    for day in body["by_day"]:
        assert day == {"day": day["day"], "runs": ZERO_RUNS, "tokens": ZERO_TOKENS, "duration_ms": None}
    assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("days", [7, 14, 30])
def test_days_is_7_14_or_30_ending_today(local_server: ServerProcess, days: int) -> None:
    playbook = new_playbook(local_server)
    before = today()
    body = ask(local_server, playbook, {"days": days}).json()
    after = today()
    assert body["days"] == days
    assert len(body["by_day"]) == days
    assert body["by_day"][-1]["day"] in (before.isoformat(), after.isoformat())
    assert body["by_day"][0]["day"] == (date.fromisoformat(body["by_day"][-1]["day"]) - timedelta(days - 1)).isoformat()


@pytest.mark.parametrize("value", ["0", "1", "6", "8", "15", "31", "365", "-7", "7.0", "seven", "", "07x"])
def test_any_other_days_is_refused(local_server: ServerProcess, value: str) -> None:
    """ "Any other `days`" is refused with `invalid_input`, pointing at the parameter."""
    playbook = new_playbook(local_server)
    assert pointers_of(ask(local_server, playbook, {"days": value})) == ["/days"]


@pytest.mark.parametrize("given", [{"days": 7, "from": "2026-01-01"}, {"days": 7, "to": "2026-01-01"}])
def test_days_with_from_or_to_is_refused(local_server: ServerProcess, given: dict[str, Any]) -> None:
    playbook = new_playbook(local_server)
    assert pointers_of(ask(local_server, playbook, given)) == ["/days"]
    both = {**given, "from": "2026-01-01", "to": "2026-01-02"}
    assert pointers_of(ask(local_server, playbook, both)) == ["/days"]


def test_from_without_to_and_the_reverse_are_refused(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    assert pointers_of(ask(local_server, playbook, {"from": "2026-01-01"})) == ["/from"]
    assert pointers_of(ask(local_server, playbook, {"to": "2026-01-01"})) == ["/to"]


def test_from_and_to_name_the_first_and_the_last_day_both_included(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    body = ask(local_server, playbook, {"from": "2024-02-27", "to": "2024-03-02"}).json()
    assert body["days"] == 5
    assert [d["day"] for d in body["by_day"]] == ["2024-02-27", "2024-02-28", "2024-02-29", "2024-03-01", "2024-03-02"]
    one = ask(local_server, playbook, {"from": "2025-12-31", "to": "2025-12-31"}).json()
    assert one["days"] == 1 and [d["day"] for d in one["by_day"]] == ["2025-12-31"]


@pytest.mark.parametrize("value", ["2026-02-30", "2025-02-29", "2026-13-01", "2026-00-10", "2026-04-31"])
def test_a_day_must_exist_in_the_calendar(local_server: ServerProcess, value: str) -> None:
    """ "`2026-02-30` is refused rather than read as 2 March"."""
    playbook = new_playbook(local_server)
    assert pointers_of(ask(local_server, playbook, {"from": value, "to": "2026-05-01"})) == ["/from"]
    assert pointers_of(ask(local_server, playbook, {"from": "2025-06-01", "to": value})) == ["/to"]


@pytest.mark.parametrize("value", ["2026-9-01", "20260901", "2026-09-01T00:00:00Z", "2026/09/01", "yesterday", ""])
def test_a_day_is_written_yyyy_mm_dd(local_server: ServerProcess, value: str) -> None:
    playbook = new_playbook(local_server)
    assert pointers_of(ask(local_server, playbook, {"from": value, "to": "2026-05-01"})) == ["/from"]


def test_to_is_not_before_from(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    assert pointers_of(ask(local_server, playbook, {"from": "2026-05-02", "to": "2026-05-01"})) == ["/to"]


def test_to_is_not_after_today(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    tomorrow = today() + timedelta(days=2)
    response = ask(local_server, playbook, {"from": today().isoformat(), "to": tomorrow.isoformat()})
    assert pointers_of(response) == ["/to"]
    until_today = ask(
        local_server, playbook, {"from": (today() - timedelta(days=1)).isoformat(), "to": today().isoformat()}
    )
    assert until_today.status_code == 200


def test_a_window_is_at_most_366_days(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    body = ask(local_server, playbook, {"from": "2024-01-01", "to": "2024-12-31"}).json()
    assert body["days"] == 366 and len(body["by_day"]) == 366
    assert body["by_day"][0]["day"] == "2024-01-01" and body["by_day"][-1]["day"] == "2024-12-31"
    response = ask(local_server, playbook, {"from": "2024-01-01", "to": "2025-01-01"})
    assert response.status_code == 422
    assert response.json()["errors"][0]["pointer"] in ("/from", "/to")


@pytest.mark.parametrize("name", ["day", "limit", "cursor", "status", "playbook", "From", "days[]"])
def test_any_other_parameter_is_refused(local_server: ServerProcess, name: str) -> None:
    playbook = new_playbook(local_server)
    assert pointers_of(ask(local_server, playbook, {name: "1"})) == [f"/{name}"]


def test_a_parameter_given_twice_is_a_bad_request(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    response = ask(local_server, playbook, "?days=7&days=14")
    assert response.status_code == 400


def test_type_and_name_keep_the_runs_of_one_definition(local_server: ServerProcess) -> None:
    """`type`, `name`: "Keep the runs of one definition, as they do for `list_runs`"."""
    playbook = new_playbook(local_server)
    for given in ({"type": "reasoning"}, {"name": "triage"}, {"type": "workflow", "name": "close", "days": 30}):
        response = ask(local_server, playbook, given)
        assert response.status_code == 200, response.text
        assert response.json()["runs"] == ZERO_RUNS
    assert pointers_of(ask(local_server, playbook, {"type": "function"})) == ["/type"]


def test_a_playbook_that_does_not_exist_is_not_found(local_server: ServerProcess) -> None:
    response = ask(local_server, "no-such-playbook")
    assert response.status_code == 404
    assert response.json()["reason"] == "not_found"


def test_a_retired_playbook_works_like_any_other(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    with local_server.client() as client:
        assert client.post(f"/v1/orgs/acme/playbooks/{playbook}/retire").status_code == 200
    response = ask(local_server, playbook, {"days": 14})
    assert response.status_code == 200
    assert response.json()["days"] == 14


def test_the_openapi_document_lists_the_parameters_and_no_tool_serves_it(local_server: ServerProcess) -> None:
    """HTTP only: "An operation served only over HTTP has no tool, so its description is its own"."""
    with local_server.client() as client:
        document = client.get("/v1/openapi.json").json()
    (path,) = [p for p in document["paths"] if p.endswith("/analytics")]
    operation = document["paths"][path]["get"]
    assert operation["operationId"] == "get_playbook_analytics"
    names = {p["name"] for p in operation["parameters"] if p["in"] == "query"}
    assert names == {"days", "from", "to", "type", "name"}
    assert operation["description"]
