"""Access: local mode, API keys from the key command, permissions, playbook lists, orgs and origins."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.e2e.server_process import ServerProcess, run_command, start_server

KEY_SHAPE = re.compile(r"^abk_[0-9a-f]{8}_[A-Za-z0-9_-]{43}$")


@dataclass
class IssuedKey:
    secret: str
    entry: dict[str, object]


def issue_key(folder: Path, *arguments: str) -> IssuedKey:
    result = run_command(folder, "key", *arguments)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    secret = lines[0].rsplit(" ", 1)[1]
    entry_text = lines[1].split(": ", 1)[1]
    assert KEY_SHAPE.match(secret)
    assert secret not in entry_text
    assert entry_text == json.dumps(json.loads(entry_text), separators=(",", ":"))
    return IssuedKey(secret, json.loads(entry_text))


@dataclass
class KeyedServer:
    server: ServerProcess
    admin: str
    reader: str
    limited: str
    other_org: str

    def client(self, secret: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        return self.server.client(**headers)


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeyedServer]:
    folder = Path(tmp_path_factory.mktemp("keyed-server"))
    admin = issue_key(
        folder,
        "--org",
        "acme",
        *[part for p in ("org:read", "org:write", "playbook:read", "playbook:write") for part in ("--permission", p)],
    )
    reader = issue_key(folder, "--org", "acme", "--permission", "playbook:read")
    limited = issue_key(
        folder, "--org", "acme", "--permission", "org:write", "--permission", "org:read", "--playbook", "sales"
    )
    other = issue_key(folder, "--org", "globex", "--permission", "org:read", "--permission", "org:write")
    api_keys = json.dumps([k.entry for k in (admin, reader, limited, other)], separators=(",", ":"))
    server = start_server(folder, {"API_KEYS": api_keys})
    yield KeyedServer(server, admin.secret, reader.secret, limited.secret, other.secret)
    assert server.stop() == 0


def _problem(response: httpx.Response, status: int, reason: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    problem: dict[str, object] = response.json()
    assert problem["reason"] == reason
    return problem


def test_local_mode_asks_for_no_credential(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        response = client.get("/v1/orgs/anything/playbooks")
    assert response.status_code == 200


def test_the_printed_key_works(keyed: KeyedServer) -> None:
    with keyed.client(keyed.admin) as client:
        response = client.post("/v1/orgs/acme/playbooks", json={"playbook": "keyed", "name": "Keyed"})
    assert response.status_code == 201, response.text
    assert response.json()["created_by"].startswith("key_")


def test_a_missing_key_is_401_with_a_bearer_challenge(keyed: KeyedServer) -> None:
    with keyed.client(None) as client:
        response = client.get("/v1/orgs/acme/playbooks")
    _problem(response, 401, "unauthenticated")
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["type"] == "https://on.auto/problems/unauthenticated"


def test_a_wrong_key_is_401(keyed: KeyedServer) -> None:
    wrong = keyed.admin[:-4] + ("AAAA" if not keyed.admin.endswith("AAAA") else "BBBB")
    for secret in (wrong, "abk_00000000_" + "A" * 43, "not-a-key"):
        with keyed.client(secret) as client:
            response = client.get("/v1/orgs/acme/playbooks")
        _problem(response, 401, "unauthenticated")
        assert response.headers["www-authenticate"].startswith("Bearer")
    with keyed.server.client(Authorization=f"Basic {keyed.admin}") as client:
        _problem(client.get("/v1/orgs/acme/playbooks"), 401, "unauthenticated")


def test_an_unknown_path_without_a_key_is_401_and_with_one_404(keyed: KeyedServer) -> None:
    with keyed.client(None) as client:
        _problem(client.get("/v1/guides/no-such-guide"), 401, "unauthenticated")
        _problem(client.get("/v1/not-served"), 401, "unauthenticated")
    with keyed.client(keyed.reader) as client:
        _problem(client.get("/v1/guides/no-such-guide"), 404, "not_found")


def test_a_permission_the_key_lacks_is_403(keyed: KeyedServer) -> None:
    with keyed.client(keyed.reader) as client:
        response = client.post("/v1/orgs/acme/playbooks", json={"playbook": "nope", "name": "No"})
    _problem(response, 403, "forbidden")
    assert response.headers["www-authenticate"] == 'Bearer error="insufficient_scope"'


def test_a_key_limited_to_playbooks_creates_only_those(keyed: KeyedServer) -> None:
    with keyed.client(keyed.limited) as client:
        _problem(client.post("/v1/orgs/acme/playbooks", json={"playbook": "support", "name": "S"}), 403, "forbidden")
        assert client.post("/v1/orgs/acme/playbooks", json={"playbook": "sales", "name": "Sales"}).status_code == 201
        listed = client.get("/v1/orgs/acme/playbooks").json()["playbooks"]
        assert [p["id"] for p in listed] == ["sales"]
        _problem(client.get("/v1/orgs/acme/playbooks/keyed"), 403, "forbidden")


def test_another_org_is_403(keyed: KeyedServer) -> None:
    with keyed.client(keyed.other_org) as client:
        _problem(client.get("/v1/orgs/acme/playbooks"), 403, "forbidden")


def test_an_origin_that_is_not_allowed_is_403(keyed: KeyedServer) -> None:
    with keyed.server.client(Authorization=f"Bearer {keyed.admin}", Origin="https://evil.example") as client:
        response = client.get("/v1/orgs/acme/playbooks")
    _problem(response, 403, "origin_not_allowed")
    assert response.json()["type"] == "https://on.auto/problems/origin_not_allowed"


def test_an_allowed_origin_gets_cors_headers(tmp_path: Path) -> None:
    server = start_server(tmp_path, {"ALLOWED_ORIGINS": "https://app.example"})
    try:
        with server.client(Origin="https://app.example") as client:
            response = client.get("/v1/orgs/acme/playbooks")
            assert response.status_code == 200
            assert response.headers["access-control-allow-origin"] == "https://app.example"
            preflight = client.options("/v1/orgs/acme/playbooks", headers={"Access-Control-Request-Method": "POST"})
            assert preflight.status_code == 204
        with server.client(Origin="https://studio.on.auto") as client:
            assert client.get("/v1/orgs/acme/playbooks").status_code == 200
        with server.client(Origin="https://other.example") as client:
            _problem(client.get("/v1/orgs/acme/playbooks"), 403, "origin_not_allowed")
    finally:
        assert server.stop() == 0


def test_local_mode_refuses_a_host_that_is_not_loopback(local_server: ServerProcess) -> None:
    with local_server.client(Host="evil.example") as client:
        _problem(client.get("/v1/orgs/acme/playbooks"), 403, "origin_not_allowed")
