"""A connection's OpenAPI document is hostile input (issue 37.8): a person adds the connection, and its document
comes from a server the rules allow. A `$ref` cycle, a document nested 5,000 deep, a YAML alias bomb, a schema
that holds itself, and a fan of references no walk finishes: each makes only its own server unavailable, with
its reason, in `search`, `introspect` and `execute`, while the org's other connection answers. Through the real
server (local mode, SQLite) and the fake OpenAPI service serving `tests/fakes/hostile_documents`; in the
operator's configuration file, the same documents stop the start with one line naming the entry."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conformance.helpers import problem
from tests.e2e.server_process import free_port, run_forked
from tests.fakes.gateway_process import HttpFakeProcess, start_openapi_service
from tests.fakes.hostile_documents import HOSTILE
from tests.fakes.openapi_service import KEY

SIGNING_KEY = "signing-key-for-the-fakes-0123456789"
ALIASES = "holds a YAML anchor or alias at line 4; write the value out where it is used"


@pytest.fixture(scope="module")
def service() -> Iterator[HttpFakeProcess]:
    started = start_openapi_service(SIGNING_KEY, "billing-api")
    yield started
    started.stop()


def connected(client: httpx.Client, org: str, name: str, document: str) -> dict[str, Any]:
    body = {"name": name, "kind": "openapi", "entry": {"document": document}, "credential": {"kind": "none"}}
    added = client.post(f"/v1/orgs/{org}/connections", json=body)
    assert added.status_code == 201, added.text
    token = added.json()["connect"]["url"].split("token=")[1]
    approved = client.post(f"/v1/orgs/{org}/connections/{added.json()['id']}/approve", json={"token": token})
    assert approved.status_code == 200, approved.text
    result: dict[str, Any] = approved.json()
    return result


def fresh_org() -> str:
    return f"org-{secrets.token_hex(4)}"


def searched(client: httpx.Client, org: str) -> dict[str, dict[str, Any]]:
    response = client.get(f"/v1/orgs/{org}/tool-servers/search")
    assert response.status_code == 200, response.text
    return {server["name"]: server for server in response.json()["servers"]}


def new_playbook(client: httpx.Client, org: str) -> str:
    playbook = f"pb-{secrets.token_hex(4)}"
    response = client.post(f"/v1/orgs/{org}/playbooks", json={"playbook": playbook, "name": "Hostile"})
    assert response.status_code == 201, response.text
    return playbook


def check_only_its_own_server_fails(client: httpx.Client, service: HttpFakeProcess, document: str, words: str) -> None:
    org = fresh_org()
    connected(client, org, "billing", f"{service.origin}/openapi.json")
    connected(client, org, "hostile", f"{service.origin}/hostile/{document}")
    playbook = new_playbook(client, org)
    for _ in range(2):  # the second time, the refusal kept for the same bytes
        servers = searched(client, org)
        assert servers["billing"]["tool_count"] >= 1, servers
        hostile = servers["hostile"]
        assert hostile["because"] == "failing", hostile
        assert "tool_count" not in hostile
        assert hostile["unavailable"].startswith("The tool server hostile could not be used: "), hostile
        assert words in hostile["unavailable"], hostile
    base = f"/v1/orgs/{org}/playbooks/{playbook}/tool-servers"
    for response in (
        client.get(f"{base}/hostile/tools/anything"),
        client.post(f"{base}/hostile/tools/anything/execute", json={"arguments": {}}),
    ):
        body = problem(response, 503, "unavailable", "tool_server_failed")
        assert body["because"] == "failing" and words in body["detail"], body
    answered = client.post(f"{base}/billing/tools/plainText/execute", json={"arguments": {}})
    assert answered.status_code == 200, answered.text
    assert answered.json()["outcome"] == "result"
    assert KEY not in answered.text


@pytest.mark.parametrize(
    ("document", "words"),
    [
        ("cycle.json", "tool_servers.hostile.document: holds references that loop, at #/paths/~1a"),
        ("deep.json", "tool_servers.hostile.document: expects a document nested at most 64 levels deep"),
        ("aliases.yaml", f"tool_servers.hostile.document: {ALIASES}"),
        ("holds_itself.json", "tool_servers.hostile.document: holds references the server cannot follow to an end"),
    ],
)
def test_a_hostile_document_makes_only_its_own_connection_unavailable(
    client: httpx.Client, service: HttpFakeProcess, document: str, words: str
) -> None:
    check_only_its_own_server_fails(client, service, document, words)


@pytest.mark.slow(seconds=18)
def test_a_document_no_check_finishes_is_cut_at_the_time_bound_and_the_org_still_searches(
    client: httpx.Client, service: HttpFakeProcess
) -> None:
    check_only_its_own_server_fails(
        client, service, "fan.json", "tool_servers.hostile.document: could not be checked within 20 seconds"
    )


@pytest.mark.parametrize(
    ("document", "words"),
    [
        ("cycle.json", "tool_servers.legacy.document: holds references that loop, at #/paths/~1a"),
        ("aliases.yaml", f"tool_servers.legacy.document: {ALIASES}"),
        ("deep.json", "tool_servers.legacy.document: expects a document nested at most 64 levels deep"),
    ],
)
def test_the_same_documents_in_the_configuration_file_stop_the_start_with_one_line(
    tmp_path: Path, document: str, words: str
) -> None:
    (tmp_path / document).write_bytes(HOSTILE[document])
    entry = {"document": document, "base_url": "http://127.0.0.1:9/v1", "org": "acme"}
    (tmp_path / "auto-runtime.yaml").write_text(json.dumps({"tool_servers": {"legacy": entry}}))
    settings = {"CONFIG_FILE": str(tmp_path / "auto-runtime.yaml"), "PORT": str(free_port()), "LOG_LEVEL": "error"}
    result = run_forked(tmp_path, "serve", settings=settings)
    assert result.returncode == 1, result.stdout + result.stderr
    output = (result.stdout + result.stderr).strip()
    assert "Traceback" not in output, output
    assert output.splitlines() == [words]
