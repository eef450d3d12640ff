"""Who may use the tool operations (HTTP page "Requests and access", "Tool servers"; configuration "Try the tools
by hand"), with API keys from the key command against a real server set up with the tool-server fakes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conformance.helpers import problem
from tests.conformance.tools.conftest import ORG, SALES, ToolFakes, tool_settings
from tests.e2e.server_process import ServerProcess, start_server
from tests.e2e.test_access import issue_key


@dataclass
class Keys:
    server: ServerProcess
    writer: str
    reader: str
    org_reader: str
    limited: str
    playbook: str

    def client(self, secret: str) -> httpx.Client:
        return self.server.client(Authorization=f"Bearer {secret}")


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory, tool_fakes: ToolFakes) -> Iterator[Keys]:
    folder = Path(tmp_path_factory.mktemp("keyed-tools"))
    every = [part for p in ("org:read", "org:write", "playbook:read", "playbook:write") for part in ("--permission", p)]
    writer = issue_key(folder, "--org", ORG, *every)
    reader = issue_key(folder, "--org", ORG, "--permission", "playbook:read")
    org_reader = issue_key(folder, "--org", ORG, "--permission", "org:read")
    limited = issue_key(
        folder, "--org", ORG, "--permission", "playbook:read", "--permission", "playbook:write", "--playbook", SALES
    )
    settings = tool_settings(tool_fakes)
    settings["API_KEYS"] = json.dumps([k.entry for k in (writer, reader, org_reader, limited)])
    server = start_server(folder, settings)
    playbook = "tools-open"
    with server.client(Authorization=f"Bearer {writer.secret}") as client:
        for name in (SALES, playbook):
            response = client.post(f"/v1/orgs/{ORG}/playbooks", json={"playbook": name, "name": "Tools"})
            assert response.status_code == 201, response.text
    yield Keys(server, writer.secret, reader.secret, org_reader.secret, limited.secret, playbook)
    assert server.stop() == 0, server.log()


def _url(playbook: str, action: str = "") -> str:
    return f"/v1/orgs/{ORG}/playbooks/{playbook}/tool-servers/notes/tools/echo" + (f"/{action}" if action else "")


def test_execute_needs_playbook_write_and_the_reads_need_playbook_read(keys: Keys) -> None:
    arguments = {"arguments": {"text": "hi"}}
    with keys.client(keys.reader) as reader:
        assert reader.get(f"/v1/orgs/{ORG}/playbooks/{keys.playbook}/tool-servers/search").status_code == 200
        assert reader.get(_url(keys.playbook)).status_code == 200
        assert reader.post(_url(keys.playbook, "validate"), json=arguments).status_code == 200
        dry = reader.post(_url(keys.playbook, "dry-run"), json=arguments)
        refused = reader.post(_url(keys.playbook, "execute"), json=arguments)
    assert dry.json()["caller_may"] is False and dry.json()["would_run"] is False
    assert problem(refused, 403, "forbidden")["detail"].startswith("execute needs the permission playbook:write")
    with keys.client(keys.writer) as writer:
        dry = writer.post(_url(keys.playbook, "dry-run"), json=arguments)
        called = writer.post(_url(keys.playbook, "execute"), json=arguments)
        events = writer.get(f"/v1/orgs/{ORG}/playbooks/{keys.playbook}/events", params={"type": "tool_call_started"})
    assert dry.json()["caller_may"] is True and dry.json()["would_run"] is True
    assert called.status_code == 200 and called.json()["text"] == "hi"
    by = events.json()["events"][0]["metadata"]["by"]
    assert by != "local" and by.startswith("key_")


def test_org_read_serves_the_org_search_but_not_the_playbook_routes(keys: Keys) -> None:
    with keys.client(keys.org_reader) as client:
        org = client.get(f"/v1/orgs/{ORG}/tool-servers/search")
        playbook = client.get(f"/v1/orgs/{ORG}/playbooks/{keys.playbook}/tool-servers/search")
        other_org = client.get("/v1/orgs/globex/tool-servers/search")
    assert org.status_code == 200 and {s["name"] for s in org.json()["servers"]} >= {"helpdesk", "sales-desk"}
    problem(playbook, 403, "forbidden")
    problem(other_org, 403, "forbidden")
    with keys.client(keys.reader) as client:
        assert client.get(f"/v1/orgs/{ORG}/tool-servers/search").status_code == 200


def test_a_key_limited_to_some_playbooks_must_name_one_and_sees_only_those(keys: Keys) -> None:
    with keys.client(keys.limited) as client:
        without = client.get(f"/v1/orgs/{ORG}/tool-servers/search")
        other = client.get(f"/v1/orgs/{ORG}/tool-servers/search", params={"playbook": keys.playbook})
        own = client.get(f"/v1/orgs/{ORG}/tool-servers/search", params={"playbook": SALES})
    assert "playbook" in problem(without, 403, "forbidden")["detail"]
    problem(other, 403, "forbidden")
    assert own.status_code == 200, own.text
    servers = {server["name"]: server for server in own.json()["servers"]}
    assert servers["sales-desk"]["playbooks"] == [SALES]
    assert servers["helpdesk"]["playbooks"] == [SALES]
