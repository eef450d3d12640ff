"""Secrets of the tool servers scrubbed from what the tool operations answer, record and log (HTTP page "Tool
servers"; configuration "Keep secrets out of the file"): the stdio server's key from its environment and the HTTP
API's key, echoed by the fakes as written, JSON-escaped, percent-encoded and in base64, then looked for in every
response, in the ledger's files and in the server's log."""

from __future__ import annotations

from pathlib import Path

from tests.conformance.helpers import new_playbook
from tests.conformance.secret_search import found_in, found_in_bytes
from tests.conformance.secret_search import stored as stored_by
from tests.conformance.tools.conftest import NOTES_SECRET, ORG, ToolsServer
from tests.fakes.openapi_service import KEY

SECRETS = (NOTES_SECRET, KEY)


def test_no_secret_reaches_a_response_the_ledger_or_the_log(tools_server: ToolsServer) -> None:
    responses: list[str] = []
    with tools_server.client() as client:
        playbook = new_playbook(client)
        echoed = client.post(f"{playbook}/tool-servers/notes/tools/secret_echo/execute", json={"arguments": {}})
        assert echoed.status_code == 200, echoed.text
        assert echoed.json()["outcome"] == "result" and "[redacted]" in echoed.json()["text"]
        key = client.post(f"{playbook}/tool-servers/billing/tools/echoKey/execute", json={})
        assert key.status_code == 200, key.text
        assert key.json()["answer"]["received"] == "[redacted]"
        assert key.json()["server_request_id"] == "req-42"
        sent = client.post(
            f"{playbook}/tool-servers/notes/tools/echo/execute", json={"arguments": {"text": f"say {NOTES_SECRET}"}}
        )
        assert sent.json()["text"] == "say [redacted]"
        responses += [echoed.text, key.text, sent.text]
        events = client.get(f"{playbook}/events", params={"limit": 100})
        responses.append(events.text)
        for event in events.json()["events"]:
            responses.append(client.get(f"{playbook}/events/{event['id']}").text)
        for route in ("tool-servers/search", "tool-servers/billing/tools/echoKey", "tool-servers/notes/tools/echo"):
            responses.append(client.get(f"{playbook}/{route}").text)
        responses.append(client.get(f"/v1/orgs/{ORG}/tool-servers/search").text)
        responses.append(client.get("/v1/openapi.json").text)
    for text in responses:
        assert found_in(text, SECRETS) == []
    stored = stored_by(Path(tools_server.server.folder), tools_server.database_url)
    assert any(b"tool_call_answered" in data for data in stored)
    for data in stored:
        assert found_in_bytes(data, SECRETS) == []
    log = tools_server.server.log()
    assert "the key is [redacted]" in log
    assert found_in(log, SECRETS) == []
