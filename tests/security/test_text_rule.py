"""The text rule (`auto_runtime.text_rule`), end to end through the real server, on both ledgers.

- Every text field the catalog takes (each place an operation's input schema types as a string: in the body, the
  query or the path) refuses U+0000, which PostgreSQL cannot keep in a `text` column, as `invalid_input` at its
  pointer, on SQLite as well (a path parameter that takes a list of values is no route with another text). A
  body's text field refuses a lone surrogate the same way (a URL cannot carry one: its escapes decode as UTF-8,
  and the MCP SDK refuses one as a parse error before any tool).
- JSON data (a run's input, an event's data, an answer, and the message rendered from an input) keeps U+0000,
  and round-trips on both ledgers.
- A lone surrogate is refused wherever it is, JSON data included: a run's input, an event's data, an answer
  (which kept it before), a tool's arguments, always in the same words at its pointer.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from auto_runtime.guides import load_guides
from auto_runtime.operations.operation import Operation
from auto_runtime.operations.runtime_catalog import build_catalog
from auto_runtime.operations.schemas import input_schema_of
from tests.conformance.helpers import ECHO_PROGRAM, create_computation, new_playbook, pointers, problem
from tests.conformance.interactions.documents import QUESTION, answer, ask, defined, ended
from tests.e2e.mcp_client import sse_or_json
from tests.e2e.server_process import ServerProcess, start_server
from tests.postgres_support import fresh_database, server_on

LEDGERS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
NUL_WORDS = ": expected text without the character U+0000."
NOT_UNICODE_WORDS = ": expected text that is valid Unicode, without a lone surrogate."
JSON_HEADERS = {"Content-Type": "application/json"}
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-11-25",
}
RUN_ID = "0b5c3e9a-4f1d-4c8e-9a7b-2d6f1e3c5a90"
STAND_INS = {
    "name": "echo",
    "run_id": RUN_ID,
    "event_id": RUN_ID,
    "sha256": "0" * 64,
    "server": "crm",
    "tool": "lookup",
    "id": "crm",
    "token": "t0ken",
}
"""A value each path parameter takes, for the parameters of a route other than the one tried."""


@pytest.fixture(scope="module", params=LEDGERS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = Path(tmp_path_factory.mktemp(f"text-rule-{request.param}"))
    with ExitStack() as stack:
        settings = {"LEDGER_FILE": str(folder / "data" / "ledger.db")}
        if request.param == "postgres":
            settings = server_on(stack.enter_context(fresh_database("text_rule")))
        process = start_server(folder, settings)
        yield process
        assert process.stop() == 0, process.log()


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


@pytest.fixture(scope="module")
def playbook_url(client: httpx.Client) -> str:
    url = new_playbook(client)
    create_computation(client, url, "echo", ECHO_PROGRAM)
    defined(client, url, "ask", QUESTION)
    return url


def post_text(client: httpx.Client, url: str, text: str) -> httpx.Response:
    return client.post(url, content=text.encode("utf-8"), headers=JSON_HEADERS)


# Every text field of the catalog -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TextPlace:
    """A place an operation's input schema types as a string: its path in the input (`*` for an item, `{}` for
    a member of a map), and whether the URL carries it."""

    operation: Operation
    path: tuple[str, ...]
    in_url: bool

    @property
    def concrete(self) -> list[str | int]:
        return [0 if part == "*" else "x" if part == "{}" else part for part in self.path]

    @property
    def pointer(self) -> str:
        return "".join(f"/{part}" for part in self.concrete)

    def __str__(self) -> str:
        return f"{self.operation.name} {self.operation.method} {self.operation.path} {self.pointer}"


def _string_places(schema: Any, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    if not isinstance(schema, dict):
        return
    declared = schema.get("type")
    if declared == "string" or (isinstance(declared, list) and "string" in declared):
        yield path
    for name, sub in schema.get("properties", {}).items():
        yield from _string_places(sub, (*path, name))
    if isinstance(schema.get("items"), dict):
        yield from _string_places(schema["items"], (*path, "*"))
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _string_places(schema["additionalProperties"], (*path, "{}"))
    for keyword in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(keyword, []):
            yield from _string_places(sub, path)


def text_places() -> list[TextPlace]:
    places = []
    for operation in build_catalog(load_guides()):
        schema = input_schema_of(operation.name, operation.input_model)
        for path in dict.fromkeys(_string_places(schema, ())):
            in_url = path[0] in operation.path_fields or not operation.takes_body or operation.takes_bytes
            places.append(TextPlace(operation, path, in_url))
    return places


def _stand_in(operation: Operation, field: str, playbook: str) -> str:
    schema = input_schema_of(operation.name, operation.input_model)["properties"][field]
    if "enum" in schema:
        return str(schema["enum"][0])
    return {**STAND_INS, "playbook": playbook}[field]


def _nested(path: list[str | int], value: Any) -> Any:
    for part in reversed(path):
        value = [value] if isinstance(part, int) else {part: value}
    return value


def send(client: httpx.Client, playbook_url: str, place: TextPlace, text: str) -> httpx.Response:
    """The operation's request with `text` at the place, and nothing else but the path's other parameters."""
    operation = place.operation
    field = place.path[0]
    playbook = playbook_url.rsplit("/", 1)[1]
    values = {name: text if name == field else _stand_in(operation, name, playbook) for name in operation.path_fields}
    url = operation.route
    for name, value in values.items():
        url = url.replace("{" + name + "}", quote(value, safe=""))
    prefix = {"global": "/v1", "org": "/v1/orgs/acme", "playbook": playbook_url}[operation.scope]
    if field in operation.path_fields:
        if operation.takes_bytes:
            media_type = {"Content-Type": operation.body_media_types[0]}
            return client.request(operation.method, prefix + url, content=b"a", headers=media_type)
        if not operation.takes_body:
            return client.request(operation.method, prefix + url)
        return client.request(operation.method, prefix + url, content=b"{}", headers=JSON_HEADERS)
    if place.in_url:
        return client.request(operation.method, prefix + url, params={field: text})
    body = json.dumps(_nested(place.concrete, text))
    return client.request(operation.method, prefix + url, content=body.encode("ascii"), headers=JSON_HEADERS)


def _refused_there(response: httpx.Response, pointer: str, words: str) -> str | None:
    """Why the response is not `invalid_input` with an issue at `pointer` ending in `words`, or None."""
    if response.status_code != 422 or response.json().get("reason") != "invalid_input":
        return f"{response.status_code} {response.text[:300]}"
    issues = [issue for issue in response.json()["errors"] if issue["pointer"] == pointer]
    if not any(issue["detail"].endswith(words) for issue in issues):
        return f"no such issue at {pointer}: {response.json()['errors']}"
    return None


def _not_a_route(response: httpx.Response) -> str | None:
    """Why the response is not the `not_found` of a path the router does not serve (a parameter of the path that
    takes a list of values, such as a definition's type), or None."""
    if response.status_code == 404 and response.json()["detail"] == "This server serves nothing at that path.":
        return None
    return f"{response.status_code} {response.text[:300]}"


def test_every_text_field_of_the_catalog_refuses_nul_and_a_lone_surrogate_at_its_pointer(
    client: httpx.Client, playbook_url: str
) -> None:
    places = text_places()
    assert len({place.operation.name for place in places}) > 30
    failures = []
    tried = 0
    for place in places:
        cases = [("a\x00b", NUL_WORDS)]
        if not place.in_url:
            cases.append(("a\ud800b", NOT_UNICODE_WORDS))
        for text, words in cases:
            response = send(client, playbook_url, place, text)
            if place.path[0] in place.operation.path_enums:
                why = _not_a_route(response)
            else:
                why = _refused_there(response, place.pointer, words)
            tried += 1
            if why is not None:
                failures.append(f"{place} {text!r}: {why}")
    assert not failures, "\n".join(failures)
    assert tried > 100


def test_a_text_field_given_by_mcp_refuses_nul_alike(client: httpx.Client) -> None:
    arguments = {"playbook": "pb-nul-by-mcp", "name": "A\x00B"}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "create_playbook"}}
    call["params"]["arguments"] = arguments  # type: ignore[index]
    response = client.post("/orgs/acme/mcp", content=json.dumps(call).encode("ascii"), headers=MCP_HEADERS)
    assert response.status_code == 200, response.text
    result = sse_or_json(response)["result"]
    assert result["isError"] is True
    refused = json.loads(result["content"][1]["text"])
    assert refused["reason"] == "invalid_input" and refused["status"] == 422
    assert refused["errors"] == [
        {"detail": "name, The name of the playbook, 1 to 100 characters" + NUL_WORDS, "pointer": "/name"}
    ]
    assert client.get("/v1/orgs/acme/playbooks/pb-nul-by-mcp").status_code == 404


def test_a_playbooks_name_or_description_with_nul_is_refused_and_nothing_changes(
    client: httpx.Client, playbook_url: str
) -> None:
    created = client.post(
        "/v1/orgs/acme/playbooks", json={"playbook": "pb-nul", "name": "A\x00", "description": "\x00"}
    )
    body = problem(created, 422, "invalid_input")
    assert pointers(body) == ["/description", "/name"]
    assert body["errors"][0]["detail"] == "description, What the playbook is for, at most 2,000 characters" + NUL_WORDS
    assert client.get("/v1/orgs/acme/playbooks/pb-nul").status_code == 404
    before = client.get(playbook_url).json()
    updated = client.put(playbook_url, json={"name": "Renamed\x00", "description": "Fine"})
    assert pointers(problem(updated, 422, "invalid_input")) == ["/name"]
    assert client.get(playbook_url).json() == before


# JSON data: U+0000 kept, a lone surrogate refused --------------------------------------------------------------


def test_nul_in_json_data_round_trips(client: httpx.Client, playbook_url: str) -> None:
    value = {"a\x00": ["b\x00c", {"\x00": "\x00"}]}
    ran = client.post(f"{playbook_url}/definitions/computation/echo/run", json={"input": value})
    assert ran.status_code == 200, ran.text
    assert ran.json()["output"] == value
    assert client.get(f"{playbook_url}/runs/{ran.json()['run_id']}").json()["output"] == value

    event = {"source": "/ledger", "type": "t.nul", "id": "nul-1", "data": value}
    assert client.post(f"{playbook_url}/events", json={"event": event}).status_code == 200
    listed = client.get(f"{playbook_url}/events", params={"type": "event_published"}).json()["events"]
    assert [item["data"]["data"] for item in listed if item["data"]["event_id"] == "nul-1"] == [value]

    run_id = str(uuid.uuid4())
    asked = ask(client, playbook_url, "ask", {"lead": "boss", "service": "api\x00v2"}, run_id)
    assert asked.status_code == 200, asked.text
    waiting = client.get(f"{playbook_url}/interactions").json()["interactions"]
    assert [item["message"] for item in waiting if item["run_id"] == run_id] == [
        "May **api\x00v2** go out tonight? Reply go or hold.\n"
    ]
    answered = answer(client, playbook_url, run_id, {"decision": "go", "reason": "ok\x00"})
    assert answered.status_code == 200, answered.text
    assert answered.json()["answer"] == {"decision": "go", "reason": "ok\x00"}
    assert ended(client, playbook_url, run_id)["output"] == {"decision": "go", "reason": "ok\x00"}


@pytest.mark.parametrize(
    ("where", "text", "pointer", "name"),
    [
        ("run", '{"input": {"rows": [1, "\\ud800"]}}', "/input/rows/1", "input, then rows, then item 2"),
        ("run", '{"input": {"\\udc00": 1}}', "/input/\udc00", "input, then \udc00"),
        ("publish", '{"event": {"source": "/s", "type": "t", "data": {"a": "\\ud83d"}}}', "/event/data/a", None),
        ("publish", '{"event": {"source": "/s", "type": "t", "data": "\\udfff"}}', "/event/data", None),
        ("validate", '{"arguments": {"q": "\\ud800"}}', "/arguments/q", "arguments, then q"),
    ],
)
def test_a_lone_surrogate_in_json_data_is_refused_at_its_pointer(
    client: httpx.Client, playbook_url: str, where: str, text: str, pointer: str, name: str | None
) -> None:
    url = {
        "run": f"{playbook_url}/definitions/computation/echo/run",
        "publish": f"{playbook_url}/events",
        "validate": f"{playbook_url}/tool-servers/crm/tools/lookup/validate",
    }[where]
    body = problem(post_text(client, url, text), 422, "invalid_input")
    assert pointers(body) == [pointer]
    words = "event, then data" + pointer.removeprefix("/event/data").replace("/", ", then ") if name is None else name
    assert body["errors"][0]["detail"] == words + NOT_UNICODE_WORDS
    assert body["detail"] == body["errors"][0]["detail"]


def test_an_answer_with_a_lone_surrogate_is_refused_and_the_request_stays_open(
    client: httpx.Client, playbook_url: str
) -> None:
    run_id = str(uuid.uuid4())
    assert ask(client, playbook_url, "ask", {"lead": "boss", "service": "api"}, run_id).status_code == 200
    url = f"{playbook_url}/runs/{run_id}/answer"
    for text, pointer, name in (
        ('{"answer": {"decision": "go", "reason": "\\ud800"}}', "/answer/reason", "answer, then reason"),
        ('{"answer": {"decision": "go", "\\udc00": 1}}', "/answer/\udc00", "answer, then \udc00"),
        ('{"answer": {"decision": "go"}, "claimed_for": "\\ud800"}', "/claimed_for", None),
    ):
        body = problem(post_text(client, url, text), 422, "invalid_input")
        assert pointers(body) == [pointer]
        assert body["errors"][0]["detail"].endswith(NOT_UNICODE_WORDS)
        if name is not None:
            assert body["errors"][0]["detail"] == name + NOT_UNICODE_WORDS
    assert client.get(f"{playbook_url}/runs/{run_id}").json()["status"] == "started"
    answered = answer(client, playbook_url, run_id, {"decision": "hold"})
    assert answered.status_code == 200, answered.text


def test_the_server_log_has_no_incident_from_these_inputs(server: ServerProcess) -> None:
    """Every case above was refused by name or kept, never an incident (a 500)."""
    assert '"level": "error"' not in server.log(), server.log()[-4000:]
