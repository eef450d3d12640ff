"""Secrets of the tool servers scrubbed from what the tool operations answer, record and log (HTTP page "Tool
servers"; configuration "Keep secrets out of the file"): the stdio server's key from its environment and the HTTP
API's key, echoed by the fakes as written, JSON-escaped, percent-encoded and in base64, then looked for in every
response, in the ledger's files and in the server's log."""

from __future__ import annotations

from pathlib import Path

from auto_runtime.tools.scrubbing import encodings_of
from tests.conformance.helpers import new_playbook
from tests.conformance.tools.conftest import NOTES_SECRET, ORG, ToolsServer
from tests.fakes.openapi_service import KEY

SECRETS = (NOTES_SECRET, KEY)


def _forms() -> set[str]:
    return {form for secret in SECRETS for form in encodings_of(secret)}


def _found_in(text: str) -> list[str]:
    return [form for form in _forms() if form in text]


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
        assert _found_in(text) == []
    files = [path for path in Path(tools_server.server.folder).rglob("ledger.db*") if path.is_file()]
    assert files, "the server keeps its ledger in SQLite under its folder"
    for path in files:
        data = path.read_bytes()
        assert [form for form in _forms() if form.encode() in data] == []
    log = tools_server.server.log()
    assert "the key is [redacted]" in log
    assert _found_in(log) == []
