"""Seeds, route tables: `publish_event` needs `playbook:write`, `get_playbook_analytics` needs `playbook:read`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.server_process import ServerProcess, run_command, start_server

EVENT = {"source": "/ledger/eu", "type": "com.acme.ledger.month-closed"}


def issue_key(folder: Path, *permissions: str) -> tuple[str, dict[str, object]]:
    """The secret and the entry the `key` command prints."""
    arguments = [part for permission in permissions for part in ("--permission", permission)]
    result = run_command(folder, "key", "--org", "acme", *arguments)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    return lines[0].rsplit(" ", 1)[1], json.loads(lines[1].split(": ", 1)[1])


class Keys:
    def __init__(self, server: ServerProcess, secrets: dict[str, str]) -> None:
        self.server = server
        self.secrets = secrets

    def client(self, who: str) -> httpx.Client:
        return self.server.client(Authorization=f"Bearer {self.secrets[who]}")


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keys]:
    folder = Path(tmp_path_factory.mktemp("events-keys"))
    issued = {
        "admin": issue_key(folder, "org:read", "org:write", "playbook:read", "playbook:write"),
        "writer": issue_key(folder, "playbook:write"),
        "reader": issue_key(folder, "playbook:read"),
        "org_reader": issue_key(folder, "org:read"),
    }
    entries = json.dumps([entry for _, entry in issued.values()], separators=(",", ":"))
    server = start_server(folder, {"API_KEYS": entries})
    keys = Keys(server, {name: secret for name, (secret, _) in issued.items()})
    with keys.client("admin") as client:
        assert client.post("/v1/orgs/acme/playbooks", json={"playbook": "finance", "name": "F"}).status_code == 201
    yield keys
    assert server.stop() == 0


def test_publish_event_needs_playbook_write(keys: Keys) -> None:
    url = "/v1/orgs/acme/playbooks/finance/events"
    for who in ("admin", "writer"):
        with keys.client(who) as client:
            response = client.post(url, json={"event": EVENT})
        assert response.status_code == 200, response.text
    for who in ("reader", "org_reader"):
        with keys.client(who) as client:
            response = client.post(url, json={"event": EVENT})
        assert response.status_code == 403
        assert response.json()["reason"] == "forbidden"
    with keys.server.client() as client:
        assert client.post(url, json={"event": EVENT}).status_code == 401


def test_the_caller_is_who_published(keys: Keys) -> None:
    """`metadata.by`: "Who acted: a caller's id"."""
    with keys.client("writer") as client:
        client.post("/v1/orgs/acme/playbooks/finance/events", json={"event": {**EVENT, "id": "by-writer"}})
    with keys.client("reader") as client:
        events = client.get("/v1/orgs/acme/playbooks/finance/events", params={"type": "event_published"}).json()
    (mine,) = [e for e in events["events"] if e["data"]["event_id"] == "by-writer"]
    assert str(mine["metadata"]["by"]).startswith("key_")


def test_get_playbook_analytics_needs_playbook_read(keys: Keys) -> None:
    url = "/v1/orgs/acme/playbooks/finance/analytics"
    for who in ("admin", "reader"):
        with keys.client(who) as client:
            assert client.get(url).status_code == 200
    for who in ("writer", "org_reader"):
        with keys.client(who) as client:
            response = client.get(url)
        assert response.status_code == 403
        assert response.json()["reason"] == "forbidden"
