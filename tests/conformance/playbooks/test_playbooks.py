"""Seeds, "Playbooks": every field rule and every case of its table, through the real HTTP server."""

from __future__ import annotations

import uuid

import httpx
import trio

from tests.e2e.server_process import ServerProcess


def fresh_id(prefix: str = "pb") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def org_url(org: str = "acme") -> str:
    return f"/v1/orgs/{org}/playbooks"


def _problem(response: httpx.Response, status: int, reason: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    problem: dict[str, object] = response.json()
    assert problem["reason"] == reason
    return problem


def test_create_returns_201_with_every_field(local_server: ServerProcess) -> None:
    playbook = fresh_id()
    with local_server.client() as client:
        response = client.post(
            org_url(), json={"playbook": playbook, "name": "  Sales  ", "description": "  Deals we win.  "}
        )
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "name", "description", "status", "created_at", "created_by", "updated_at"}
    assert body["id"] == playbook
    assert body["name"] == "Sales"
    assert body["description"] == "Deals we win."
    assert body["status"] == "active"
    assert body["created_by"] == "local"
    assert body["created_at"].endswith("Z") and body["created_at"] == body["updated_at"]


def test_ids_follow_the_rule(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        for bad in ("ab", "1abc", "Abc", "ab_c", "a" * 49, "abc-"[:0] + "-abc"):
            problem = _problem(client.post(org_url(), json={"playbook": bad, "name": "x"}), 422, "invalid_input")
            assert problem["errors"][0]["pointer"] == "/playbook"  # type: ignore[index]
        for good in ("abc", "a" + "b" * 47, f"a1-{uuid.uuid4().hex[:6]}"):
            assert client.post(org_url(), json={"playbook": good, "name": "x"}).status_code in (201, 409)


def test_names_are_trimmed_bounded_and_not_all_whitespace(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        for bad in ("", "   ", "x" * 101):
            problem = _problem(client.post(org_url(), json={"playbook": fresh_id(), "name": bad}), 422, "invalid_input")
            assert problem["errors"][0]["pointer"] == "/name"  # type: ignore[index]
        response = client.post(org_url(), json={"playbook": fresh_id(), "name": " " + "x" * 100 + " "})
        assert response.status_code == 201
        assert response.json()["name"] == "x" * 100


def test_descriptions_are_trimmed_and_at_most_2000_characters(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        problem = _problem(
            client.post(org_url(), json={"playbook": fresh_id(), "name": "n", "description": "d" * 2001}),
            422,
            "invalid_input",
        )
        assert problem["errors"][0]["pointer"] == "/description"  # type: ignore[index]
        response = client.post(org_url(), json={"playbook": fresh_id(), "name": "n", "description": "d" * 2000})
        assert response.status_code == 201


def test_an_id_the_org_has_or_had_is_a_conflict(local_server: ServerProcess) -> None:
    playbook = fresh_id()
    with local_server.client() as client:
        assert client.post(org_url(), json={"playbook": playbook, "name": "One"}).status_code == 201
        _problem(client.post(org_url(), json={"playbook": playbook, "name": "Two"}), 409, "conflict")
        assert client.post(f"{org_url()}/{playbook}/retire").status_code == 200
        _problem(client.post(org_url(), json={"playbook": playbook, "name": "Three"}), 409, "conflict")
        other_org = client.post(org_url("globex"), json={"playbook": playbook, "name": "Elsewhere"})
        assert other_org.status_code == 201


def test_get_update_and_retire_of_an_unknown_id_are_not_found(local_server: ServerProcess) -> None:
    missing = fresh_id("missing")
    with local_server.client() as client:
        _problem(client.get(f"{org_url()}/{missing}"), 404, "not_found")
        _problem(client.put(f"{org_url()}/{missing}", json={"name": "n", "description": ""}), 404, "not_found")
        _problem(client.post(f"{org_url()}/{missing}/retire"), 404, "not_found")


def test_update_needs_both_fields_and_an_update_that_changes_nothing_records_nothing(
    local_server: ServerProcess,
) -> None:
    playbook = fresh_id()
    with local_server.client() as client:
        created = client.post(org_url(), json={"playbook": playbook, "name": "Old", "description": "d"}).json()
        problem = _problem(client.put(f"{org_url()}/{playbook}", json={"name": "New"}), 422, "invalid_input")
        assert any(e["pointer"] == "" and "description" in e["detail"] for e in problem["errors"])  # type: ignore[union-attr,index]
        same = client.put(f"{org_url()}/{playbook}", json={"name": " Old ", "description": "d "})
        assert same.status_code == 200
        assert same.json()["updated_at"] == created["updated_at"]
        changed = client.put(f"{org_url()}/{playbook}", json={"name": "New", "description": "d"})
        assert changed.json()["name"] == "New"
        assert client.get(f"{org_url()}/{playbook}").json()["name"] == "New"


def test_retirement_is_permanent_and_readable(local_server: ServerProcess) -> None:
    playbook = fresh_id()
    with local_server.client() as client:
        client.post(org_url(), json={"playbook": playbook, "name": "Gone"})
        retired = client.post(f"{org_url()}/{playbook}/retire")
        assert retired.status_code == 200
        body = retired.json()
        assert body["status"] == "retired" and body["retired_at"].endswith("Z")
        again = client.post(f"{org_url()}/{playbook}/retire")
        assert again.status_code == 200 and again.json()["retired_at"] == body["retired_at"]
        assert client.get(f"{org_url()}/{playbook}").json()["status"] == "retired"
        _problem(client.put(f"{org_url()}/{playbook}", json={"name": "Back", "description": ""}), 409, "conflict")
        listed = [p["id"] for p in client.get(org_url()).json()["playbooks"]]
        assert playbook not in listed
        listed = [p["id"] for p in client.get(org_url(), params={"include_retired": "true"}).json()["playbooks"]]
        assert playbook in listed


async def test_concurrent_creates_of_one_id_give_one_playbook(local_server: ServerProcess) -> None:
    playbook = fresh_id("race")
    statuses: list[int] = []

    async def create(client: httpx.AsyncClient, name: str) -> None:
        response = await client.post(org_url(), json={"playbook": playbook, "name": name})
        statuses.append(response.status_code)

    async with httpx.AsyncClient(base_url=local_server.base_url, timeout=30) as client, trio.open_nursery() as nursery:
        for number in range(8):
            nursery.start_soon(create, client, f"Racer {number}")
    assert sorted(statuses) == [201] + [409] * 7
