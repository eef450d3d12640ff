"""Seeds, "Reasoning functions" (the rules of every type) and "A saved workflow"'s shared fields."""

from __future__ import annotations

import httpx

from tests.conformance.helpers import (
    ADD_PROGRAM,
    ECHO_PROGRAM,
    create_computation,
    new_playbook,
    pointers,
    problem,
)
from tests.e2e.server_process import ServerProcess

SERIES_PROGRAM = """---
language: python
output:
  shape: series
---
def main(input):
    return {"period": "month", "lines": [{"name": "observed", "points": [{"period": "2026-01", "value": 1}]}]}
"""


def _events(client: httpx.Client, playbook_url: str, event_type: str) -> list[dict[str, object]]:
    response = client.get(f"{playbook_url}/events", params={"type": event_type, "limit": 100})
    assert response.status_code == 200, response.text
    events: list[dict[str, object]] = response.json()["events"]
    return events


def test_create_answers_201_with_the_definition_and_its_overview(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        body = create_computation(client, playbook, "add", ADD_PROGRAM)
    assert body["type"] == "computation"
    assert body["name"] == "add"
    assert body["version"] == 1
    assert body["status"] == "active"
    assert body["media_type"] == "text/markdown"
    assert body["description"] == "Adds two numbers"
    assert body["input_schema"]["required"] == ["a", "b"]
    assert body["output_schema"]["required"] == ["sum"]
    assert "details" not in body
    assert body["source"] == ADD_PROGRAM
    assert body["overview"].startswith("#")
    assert "**Used by**" not in body["overview"]


def test_names_follow_the_id_rule(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        for bad in ("ab", "9lives", "Upper", "under_score", "x" * 49):
            response = client.post(f"{playbook}/definitions/computation", json={"name": bad, "source": ECHO_PROGRAM})
            assert pointers(problem(response, 422, "invalid_input")) == ["/name"]


def test_a_name_is_unique_within_its_type_and_never_reused(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "echo", ECHO_PROGRAM)
        again = client.post(f"{playbook}/definitions/computation", json={"name": "echo", "source": ECHO_PROGRAM})
        problem(again, 409, "conflict")
        assert client.post(f"{playbook}/definitions/computation/echo/retire").status_code == 200
        after = client.post(f"{playbook}/definitions/computation", json={"name": "echo", "source": ECHO_PROGRAM})
        problem(after, 409, "conflict")


def test_a_source_is_at_most_65536_utf8_bytes(local_server: ServerProcess) -> None:
    head = "---\nlanguage: python\n---\ndef main(input):\n    return 1\n"
    with local_server.client() as client:
        playbook = new_playbook(client)
        padding = 65_536 - len(head.encode()) - 1
        fits = head + "#" + "é" * (padding // 2 - 1) + "\n"
        assert len(fits.encode()) <= 65_536
        assert (
            client.post(f"{playbook}/definitions/computation", json={"name": "fits", "source": fits}).status_code == 201
        )
        too_big = head + "#" + "x" * (65_536 - len(head.encode())) + "\n"
        assert len(too_big.encode()) > 65_536
        response = client.post(f"{playbook}/definitions/computation", json={"name": "big", "source": too_big})
        assert pointers(problem(response, 422, "invalid_input")) == ["/source"]


def test_an_identical_update_records_nothing_and_a_change_makes_a_version(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "echo", ECHO_PROGRAM)
        same = client.put(f"{playbook}/definitions/computation/echo", json={"source": ECHO_PROGRAM})
        assert same.status_code == 200 and same.json()["version"] == 1
        assert _events(client, playbook, "definition_updated") == []
        changed = ECHO_PROGRAM.replace("Gives back its input", "Echoes")
        updated = client.put(f"{playbook}/definitions/computation/echo", json={"source": changed})
        assert updated.status_code == 200 and updated.json()["version"] == 2
        assert updated.json()["description"] == "Echoes"
        assert len(_events(client, playbook, "definition_updated")) == 1


def test_a_retired_definition_is_readable_but_not_editable_or_runnable(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "echo", ECHO_PROGRAM)
        retired = client.post(f"{playbook}/definitions/computation/echo/retire")
        assert retired.json()["status"] == "retired" and "retired_at" in retired.json()
        assert client.post(f"{playbook}/definitions/computation/echo/retire").status_code == 200
        assert client.get(f"{playbook}/definitions/computation/echo").json()["status"] == "retired"
        problem(client.put(f"{playbook}/definitions/computation/echo", json={"source": ADD_PROGRAM}), 409, "conflict")
        problem(client.post(f"{playbook}/definitions/computation/echo/run", json={"input": 1}), 409, "conflict")
        listed = client.get(f"{playbook}/definitions/computation").json()["definitions"]
        assert listed == []
        listed = client.get(f"{playbook}/definitions/computation", params={"include_retired": "true"}).json()
        assert [d["name"] for d in listed["definitions"]] == ["echo"]


def test_list_leaves_the_overview_out_and_shows_schemas(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "add", ADD_PROGRAM)
        listed = client.get(f"{playbook}/definitions/computation").json()["definitions"]
    assert len(listed) == 1
    assert "overview" not in listed[0]
    assert listed[0]["input_schema"]["required"] == ["a", "b"]


def test_an_output_shape_gives_its_schema_and_details(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        body = create_computation(client, playbook, "chart", SERIES_PROGRAM)
        assert body["details"] == {"shape": "series"}
        assert body["output_schema"]["$id"] == "https://on.auto/schemas/runtime/shapes/series"
        listed = client.get(f"{playbook}/definitions/computation").json()["definitions"]
        assert listed[0]["details"] == {"shape": "series"}
        run = client.post(f"{playbook}/definitions/computation/chart/run", json={})
        assert run.status_code == 200, run.text
        assert run.json()["output_shape"] == "series"


def test_unknown_definitions_are_not_found(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        problem(client.get(f"{playbook}/definitions/computation/nothing"), 404, "not_found")
        problem(
            client.put(f"{playbook}/definitions/computation/nothing", json={"source": ECHO_PROGRAM}), 404, "not_found"
        )
        problem(client.post(f"{playbook}/definitions/computation/nothing/retire"), 404, "not_found")
        problem(client.post(f"{playbook}/definitions/computation/nothing/run", json={}), 404, "not_found")


def test_commands_in_a_retired_playbook_are_conflicts_of_kind_retired(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        create_computation(client, playbook, "echo", ECHO_PROGRAM)
        org_url, playbook_id = playbook.rsplit("/", 1)
        assert client.post(f"{org_url}/{playbook_id}/retire").status_code == 200
        response = client.post(f"{playbook}/definitions/computation", json={"name": "more", "source": ECHO_PROGRAM})
        problem(response, 409, "conflict", kind="retired")
        problem(client.post(f"{playbook}/definitions/computation/echo/run", json={}), 409, "conflict", kind="retired")
        assert client.get(f"{playbook}/definitions/computation/echo").status_code == 200
        assert client.get(f"{playbook}/events").status_code == 200


def test_a_playbook_that_does_not_exist_is_not_found(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        problem(client.get("/v1/orgs/acme/playbooks/no-such-playbook/definitions/computation"), 404, "not_found")
