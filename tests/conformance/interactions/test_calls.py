"""Asking a system (`call`, interaction-format §2) and delivering a request through a tool (§4), end to end: the
real server and a real MCP tool server."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conformance.helpers import new_playbook, pointers, problem
from tests.conformance.interactions.conftest import ledger_settings
from tests.conformance.interactions.documents import (
    POLL_LIMIT_S,
    answer,
    ask,
    defined,
    ended,
    history_types,
    open_requests,
)
from tests.e2e.moved_clock import advance
from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.gateway_process import McpToolServerProcess, start_mcp_tool_server

INVOICES = """---
call:
  server: billing
  tool: list_invoices
  with: { customer: '{{ input.customer }}', status: unpaid, limit: '{{ input.count }}' }
  read: /invoices
input:
  schema:
    type: object
    required: [customer, count]
    properties: { customer: { type: string }, count: { type: integer } }
output:
  schema:
    type: array
    items: { type: object, required: [id, total], properties: { id: { type: string }, total: { type: number } } }
---
"""


def say(text: str, *, read: str | None = None, schema: str = "{}", tool: str = "say", server: str = "billing") -> str:
    reading = f"\n  read: {read}" if read else ""
    return (
        f"---\ncall:\n  server: {server}\n  tool: {tool}\n  with: {{ text: '{text}' }}{reading}\n"
        f"output:\n  schema: {schema}\n---\n"
    )


FIRST_READ = timedelta(seconds=5)


@pytest.fixture(scope="module")
def billing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpToolServerProcess]:
    process = start_mcp_tool_server(Path(tmp_path_factory.mktemp("billing")), "--interaction-tools")
    yield process
    process.stop()


@pytest.fixture(scope="module")
def server(
    ledger_kind: str, tmp_path_factory: pytest.TempPathFactory, billing: McpToolServerProcess
) -> Iterator[ServerProcess]:
    with ExitStack() as stack:
        settings = ledger_settings(stack, ledger_kind)
        settings["TOOL_SERVERS"] = json.dumps(
            {
                "billing": {"url": billing.url, "org": "acme"},
                "narrow": {"url": billing.url, "org": "acme", "allowed": ["get_customer"]},
                "private": {"url": billing.url, "org": "acme", "record_content": False},
            }
        )
        process = start_server(Path(tmp_path_factory.mktemp(f"calls-{ledger_kind}")), settings)
        yield process
        assert process.stop() == 0, process.log()


def run(client: httpx.Client, playbook: str, name: str, value: Any, run_id: str | None = None) -> httpx.Response:
    return ask(client, playbook, name, value, run_id)


def test_a_call_answers_the_value_at_read_and_records_its_call(
    client: httpx.Client, billing: McpToolServerProcess
) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "invoices", INVOICES)
    run_id = str(uuid.uuid4())
    response = run(client, playbook, "invoices", {"customer": "c-7", "count": 2}, run_id)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "succeeded"
    assert body["output"] == [{"id": "c-7-1", "total": 1}, {"id": "c-7-2", "total": 2}]
    record = client.get(f"{playbook}/runs/{run_id}").json()["record"]
    assert record == {"server": "billing", "tool": "list_invoices", "read": "/invoices"}
    call = [c for c in billing.calls() if c["name"] == "list_invoices"][-1]
    assert call["arguments"] == {"customer": "c-7", "status": "unpaid", "limit": 2}
    assert call["meta"]["auto.on/run_id"] == run_id
    assert history_types(client, playbook, run_id) == [
        "run_started",
        "tool_call_started",
        "tool_call_answered",
        "run_succeeded",
    ]
    assert open_requests(client, playbook)["interactions"] == []
    problem(answer(client, playbook, run_id, {}), 409, "conflict")
    problem(client.post(f"{playbook}/runs/{run_id}/cancel", json={}), 409, "conflict")
    assert run(client, playbook, "invoices", {"customer": "c-7", "count": 2}, run_id).json()["output"] == body["output"]


SPEC_EXAMPLE = """---
description: Read the unpaid invoices of one customer from the billing API
call:
  server: billing
  tool: list_invoices
  with: { customer: '{{ input.customer }}', status: unpaid, limit: '{{ input.limit }}' }
  read: /invoices
input:
  schema:
    type: object
    required: [customer, limit]
    properties: { customer: { type: string }, limit: { type: integer } }
output:
  schema:
    type: array
    items: { type: object, required: [id, total], properties: { id: { type: string }, total: { type: number } } }
---
"""

KEYWORD_QUESTION = """---
to: '{{ input.for }}'
expires: PT1H
input:
  schema:
    type: object
    required: [for, with, offset]
    properties: { for: { type: string }, with: { type: string }, offset: { type: integer }, in: { type: string } }
output:
  schema: { type: object, required: [ok], properties: { ok: { type: boolean } } }
---
Ship {{ input.with }} at {{ input.offset }}{% if input.in %} in {{ input.in }}{% endif %}?
"""


def test_the_specs_example_reads_a_property_named_like_a_keyword(
    client: httpx.Client, billing: McpToolServerProcess
) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "invoices", SPEC_EXAMPLE)
    response = run(client, playbook, "invoices", {"customer": "c-9", "limit": 3})
    assert response.status_code == 200, response.text
    assert response.json()["output"] == [{"id": f"c-9-{n}", "total": n} for n in (1, 2, 3)]
    call = [c for c in billing.calls() if c["name"] == "list_invoices" and c["arguments"]["customer"] == "c-9"][-1]
    assert call["arguments"]["limit"] == 3
    defined(client, playbook, "ship", KEYWORD_QUESTION)
    run_id = str(uuid.uuid4())
    asked = ask(client, playbook, "ship", {"for": "ana", "with": "v2", "offset": 4, "in": "eu"}, run_id)
    assert asked.status_code == 200, asked.text
    [item] = open_requests(client, playbook)["interactions"]
    assert (item["to"], item["message"]) == ("ana", "Ship v2 at 4 in eu?\n")


def test_a_call_that_cannot_run_sends_nothing(client: httpx.Client, billing: McpToolServerProcess) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "invoices", INVOICES)
    missing = problem(run(client, playbook, "invoices", {"customer": "c-7"}), 422, "invalid_input")
    assert "/input/count" in pointers(missing) or pointers(missing) == ["/input"]
    defined(client, playbook, "nowhere", say("hi", server="nowhere"))
    body = problem(run(client, playbook, "nowhere", {}), 503, "unavailable", "tool_not_offered")
    assert body["because"] == "tool_server_not_configured"
    defined(client, playbook, "narrowed", say("hi", server="narrow"))
    body = problem(run(client, playbook, "narrowed", {}), 503, "unavailable", "tool_not_offered")
    assert body["because"] == "tool_not_allowed"
    defined(client, playbook, "unlisted", say("hi", tool="no_such_tool"))
    body = problem(run(client, playbook, "unlisted", {}), 503, "unavailable", "tool_not_offered")
    assert body["because"] == "tool_not_listed"


@pytest.mark.parametrize(
    ("source", "status", "reason", "kind", "because"),
    [
        (say("hi", tool="picky"), 409, "conflict", "unworkable", None),
        (say("hi", tool="broken"), 409, "conflict", "effect_unknown", "tool_error"),
        (say("hi", tool="crash"), 409, "conflict", "effect_unknown", "server_failed"),
        (say("hi", tool="picture"), 409, "conflict", "unworkable", None),
        (say("not json", read="/x"), 409, "conflict", "unworkable", None),
        (say('{"x": 1}', read="/y"), 409, "conflict", "unworkable", None),
        (say('{"x": 1}', read="/x", schema="{ type: string }"), 409, "conflict", "unworkable", None),
    ],
)
def test_every_ending_of_a_call(
    client: httpx.Client, source: str, status: int, reason: str, kind: str, because: str | None
) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "asks", source)
    run_id = str(uuid.uuid4())
    body = problem(run(client, playbook, "asks", {}, run_id), status, reason, kind)
    assert body.get("because") == because
    if kind == "unworkable" and "picky" not in source:
        assert body["detail"].endswith("running the function again calls it again.")
    again = problem(run(client, playbook, "asks", {}, run_id), 409, "conflict", "tools_called")
    assert "because" not in again


def test_a_read_only_tool_that_fails_is_tools_unfinished(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    source = INVOICES.replace("limit: '{{ input.count }}'", "limit: 'many'")
    defined(client, playbook, "invoices", source)
    run_id = str(uuid.uuid4())
    response = run(client, playbook, "invoices", {"customer": "c", "count": 1}, run_id)
    body = problem(response, 503, "unavailable", "tools_unfinished")
    assert body["because"] == "server_failed"
    assert "retry-after" not in response.headers
    again = problem(run(client, playbook, "invoices", {"customer": "c", "count": 1}, run_id), 409, "conflict")
    assert again["kind"] == "tools_called" and again["because"] == "only_read"


def test_a_structure_among_text_in_the_arguments_is_unworkable(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "mixed", say("about {{ input.thing }}"))
    body = problem(run(client, playbook, "mixed", {"thing": {"a": 1}}), 409, "conflict", "unworkable")
    assert "write | json after it" in body["detail"]
    said = run(client, playbook, "mixed", {"thing": "tea"})
    assert said.status_code == 200, said.text
    assert said.json()["output"] == "about tea"


# -- delivering a request through a tool (§4) ------------------------------------------------------------------

DELIVERED = """---
to: '{{ input.lead }}'
expires: PT1H
deliver:
  server: billing
  tool: TOOL
  with: { text: 'TEXT', to: '{{ to }}', run: '{{ run_id }}', schema: '{{ answer_schema }}' }
  sent: { conversation: /message/room, id: /message/key }
output:
  schema: { type: object, required: [decision], properties: { decision: { type: string, enum: [go, hold] } } }
---
May {{ input.service }} go out?
"""
LANDED = '{"message": {"room": "r-1", "key": 7}}'


def delivered(tool: str = "say", text: str = LANDED, *, notification: bool = False) -> str:
    source = DELIVERED.replace("TOOL", tool).replace("TEXT", text)
    if notification:
        source = source.replace(source[source.index("output:") : source.index("---\nMay")], "")
    return source


def history(client: httpx.Client, playbook: str, run_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = client.get(f"{playbook}/runs/{run_id}/history", params={"limit": 100}).json()[
        "events"
    ]
    return events


def settled(client: httpx.Client, playbook: str, run_id: str, fact: str) -> list[dict[str, Any]]:
    """The run's history once it holds `fact` (waits for the attempt's end, never for a time)."""
    deadline = time.monotonic() + POLL_LIMIT_S
    while True:
        events = history(client, playbook, run_id)
        if any(event["type"] == fact for event in events):
            return events
        assert time.monotonic() < deadline, f"no {fact} on {run_id}: {[e['type'] for e in events]}"
        time.sleep(0.05)


def first_read_due(client: httpx.Client, playbook: str, run_id: str) -> None:
    """Once the request is delivered, the server's clock (a test's) moved past its conversation's first read, 5 s
    after the delivery (interaction-format §5.1), instead of waiting them out."""
    settled(client, playbook, run_id, "delivery_succeeded")
    advance(client, FIRST_READ)


def test_a_question_is_delivered_through_its_tool_and_then_answered(
    client: httpx.Client, billing: McpToolServerProcess
) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", delivered())
    run_id = str(uuid.uuid4())
    response = ask(client, playbook, "deploy", {"lead": "ana", "service": "billing"}, run_id)
    assert response.status_code == 200 and response.json()["status"] == "started", response.text
    events = settled(client, playbook, run_id, "delivery_succeeded")
    assert [e["type"] for e in events] == [
        "run_started",
        "interaction_requested",
        "delivery_started",
        "delivery_succeeded",
    ]
    assert events[1]["data"]["delivery"] == {"server": "billing", "tool": "say"}
    assert events[2]["data"]["number"] == 1 and events[2]["data"]["server"] == "billing"
    assert events[2]["data"]["content_kept"] is True and "connection_id" not in events[2]["data"]
    assert events[3]["data"]["content_kept"] is True and len(events[3]["data"]["result_sha256"]) == 64
    assert events[3]["data"]["delivered_as"] == {"conversation": "r-1", "id": "7"}
    assert events[3]["metadata"]["causation_id"] == events[2]["id"]
    call = [c for c in billing.calls() if c["name"] == "say" and c["arguments"].get("run") == run_id][-1]
    assert call["arguments"]["to"] == "ana"
    assert call["meta"]["auto.on/run_id"] == run_id and call["meta"]["auto.on/delivery_id"] == f"{run_id}:1"
    assert call["arguments"]["schema"]["required"] == ["decision"]
    [item] = open_requests(client, playbook)["interactions"]
    assert item["standing"] == "delivered" and item["attempts"] == 1
    assert item["delivery"] == {"server": "billing", "tool": "say"}
    assert answer(client, playbook, run_id, {"decision": "go"}).status_code == 200
    assert ended(client, playbook, run_id)["output"] == {"decision": "go"}


def test_a_server_that_keeps_no_content_keeps_only_sizes(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", delivered().replace("server: billing", "server: private"))
    run_id = str(uuid.uuid4())
    assert ask(client, playbook, "deploy", {"lead": "ana", "service": "billing"}, run_id).status_code == 200
    events = settled(client, playbook, run_id, "delivery_succeeded")
    started, succeeded = events[2]["data"], events[3]["data"]
    assert started["content_kept"] is False and "arguments" not in started and "arguments_sha256" not in started
    assert started["arguments_bytes"] > 0
    assert succeeded["content_kept"] is False and "result_sha256" not in succeeded and succeeded["result_bytes"] > 0


def test_a_notification_ends_when_it_is_delivered(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "shipped", delivered(notification=True))
    run_id = str(uuid.uuid4())
    response = ask(client, playbook, "shipped", {"lead": "ana", "service": "billing"}, run_id)
    assert response.status_code == 200 and response.json()["status"] == "started", response.text
    run = ended(client, playbook, run_id)
    assert run["status"] == "succeeded", run
    assert run["output"] == {"message": {"room": "r-1", "key": 7}}
    assert run["record"]["delivered_as"] == {"conversation": "r-1", "id": "7"}
    problem(answer(client, playbook, run_id, {}), 409, "conflict")


def test_a_failed_attempt_leaves_the_question_retrying_and_answerable(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", delivered(tool="broken"))
    run_id = str(uuid.uuid4())
    assert ask(client, playbook, "deploy", {"lead": "ana", "service": "billing"}, run_id).status_code == 200
    events = settled(client, playbook, run_id, "delivery_failed")
    failed = events[-1]["data"]
    assert failed["number"] == 1 and failed["because"] == "tool_error"
    [item] = open_requests(client, playbook)["interactions"]
    assert item["standing"] == "retrying" and item["attempts"] == 1
    assert answer(client, playbook, run_id, {"decision": "hold"}).status_code == 200
    assert ended(client, playbook, run_id)["output"] == {"decision": "hold"}


def test_a_tool_the_playbook_may_not_use_is_refused_at_the_start(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "nowhere", delivered().replace("server: billing", "server: nowhere"))
    defined(client, playbook, "narrowed", delivered().replace("server: billing", "server: narrow"))
    value = {"lead": "ana", "service": "billing"}
    response = ask(client, playbook, "nowhere", value)
    body = problem(response, 503, "unavailable", "tool_not_offered")
    assert body["because"] == "tool_server_not_configured" and "retry-after" not in response.headers
    body = problem(ask(client, playbook, "narrowed", value), 503, "unavailable", "tool_not_offered")
    assert body["because"] == "tool_not_allowed"
    assert open_requests(client, playbook)["interactions"] == []


def test_a_tool_the_server_does_not_list_fails_the_attempt(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", delivered(tool="no_such_tool"))
    run_id = str(uuid.uuid4())
    assert ask(client, playbook, "deploy", {"lead": "ana", "service": "billing"}, run_id).status_code == 200
    failed = settled(client, playbook, run_id, "delivery_failed")[-1]["data"]
    assert failed["because"] == "tool_not_offered"
    assert open_requests(client, playbook)["interactions"][0]["standing"] == "retrying"


def test_arguments_the_request_cannot_render_are_unworkable_at_start(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", delivered(text="about {{ input.thing }}"))
    value = {"lead": "ana", "service": "billing", "thing": {"a": 1}}
    body = problem(ask(client, playbook, "deploy", value), 409, "conflict", "unworkable")
    assert "write | json after it" in body["detail"]
    big = {"lead": "ana", "service": "billing", "thing": "x" * 17_000}
    problem(ask(client, playbook, "deploy", big), 409, "conflict", "unworkable")
    assert open_requests(client, playbook)["interactions"] == []


# -- reading replies (§5) --------------------------------------------------------------------------------------

REPLIED = """---
to: '{{ input.lead }}'
expires: PT1H
deliver:
  server: billing
  tool: say
  with: { text: '{"message": {"room": "r-1", "key": "m-0"}}' }
  sent: { conversation: /message/room, id: /message/key }
replies:
  tool: replies
  with: { who: '{{ to }}', parent: '{{ sent.id }}', words: 'WORDS', since: '{{ since }}' }
  read: { list: /items, order: oldest_first, each: { id: /key, sender: /author, text: /body, to: /parent } }
reply:
  decision: { from: word, words: { go: [ship] } }
  reason: rest
output:
  schema:
    type: object
    required: [decision]
    properties: { decision: { type: string, enum: [go, hold] }, reason: { type: string } }
---
May it go out?
"""


def playbook_events(client: httpx.Client, playbook: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = client.get(f"{playbook}/events", params={"limit": 100}).json()["events"]
    return events


def test_a_reply_from_the_answerer_answers_the_question(client: httpx.Client, billing: McpToolServerProcess) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", REPLIED.replace("WORDS", "Ship! after the freeze"))
    run_id = str(uuid.uuid4())
    assert ask(client, playbook, "deploy", {"lead": "ana"}, run_id).status_code == 200
    first_read_due(client, playbook, run_id)
    delivered_event = settled(client, playbook, run_id, "delivery_succeeded")[-1]
    assert delivered_event["data"]["replies_in"] == {"server": "billing", "tool": "replies", "key": "r-1"}
    run = ended(client, playbook, run_id)
    assert run["status"] == "succeeded", run
    assert run["output"] == {"decision": "go", "reason": "after the freeze"}
    assert run["record"]["answered_by"] == f"playbook:{playbook.rsplit('/', 1)[1]}"
    assert run["record"]["reply"] == {"id": "m-0-reply", "sender": "ana"}
    [read] = [event for event in playbook_events(client, playbook) if event["type"] == "replies_read"]
    assert read["data"]["conversation"] == "r-1" and read["data"]["since"] == "m-0-reply"
    assert read["data"]["taken"] == 1 and read["data"]["refused"] == 0
    call = [c for c in billing.calls() if c["name"] == "replies" and c["arguments"].get("parent") == "m-0"][-1]
    arguments = json.dumps(call["arguments"], ensure_ascii=False, separators=(",", ":"))
    assert read["data"]["arguments_bytes"] == len(arguments.encode("utf-8"))
    assert read["data"]["arguments_sha256"] == hashlib.sha256(arguments.encode("utf-8")).hexdigest()
    assert read["data"]["result_bytes"] > 0 and len(read["data"]["result_sha256"]) == 64
    assert read["data"]["content_kept"] is True and isinstance(read["data"]["duration_ms"], int)


def test_a_read_through_a_server_that_keeps_no_content_keeps_only_sizes(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    source = REPLIED.replace("WORDS", "Ship!").replace("server: billing", "server: private")
    defined(client, playbook, "deploy", source)
    run_id = str(uuid.uuid4())
    assert ask(client, playbook, "deploy", {"lead": "ana"}, run_id).status_code == 200
    first_read_due(client, playbook, run_id)
    assert ended(client, playbook, run_id)["output"] == {"decision": "go"}
    [read] = [event for event in playbook_events(client, playbook) if event["type"] == "replies_read"]
    assert read["data"]["content_kept"] is False and read["data"]["server"] == "private"
    assert read["data"]["arguments_bytes"] > 0 and read["data"]["result_bytes"] > 0
    assert "arguments_sha256" not in read["data"] and "result_sha256" not in read["data"]


def test_a_reply_that_gives_no_answer_is_refused_and_the_question_stays_open(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", REPLIED.replace("WORDS", "maybe tomorrow"))
    run_id = str(uuid.uuid4())
    assert ask(client, playbook, "deploy", {"lead": "ana"}, run_id).status_code == 200
    first_read_due(client, playbook, run_id)
    refused = settled(client, playbook, run_id, "reply_refused")[-1]["data"]
    assert refused["because"] == "not_an_answer" and refused["reply"] == {"id": "m-0-reply", "sender": "ana"}
    assert "maybe" not in json.dumps(refused)
    [item] = open_requests(client, playbook)["interactions"]
    assert item["reply_refusals"] == 1 and item["conversation"] == "r-1" and item["answerer"] == "ana"
    assert answer(client, playbook, run_id, {"decision": "hold"}).status_code == 200
    assert ended(client, playbook, run_id)["output"] == {"decision": "hold"}


def test_a_reply_from_anyone_but_the_answerer_leaves_no_trace(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    source = REPLIED.replace("WORDS", "go").replace("who: '{{ to }}'", "who: 'someone else'")
    defined(client, playbook, "deploy", source)
    run_id = str(uuid.uuid4())
    assert ask(client, playbook, "deploy", {"lead": "ana"}, run_id).status_code == 200
    first_read_due(client, playbook, run_id)
    deadline = time.monotonic() + POLL_LIMIT_S
    while not any(event["type"] == "replies_read" for event in playbook_events(client, playbook)):
        assert time.monotonic() < deadline, "the conversation was never read"
        time.sleep(0.05)
    [read] = [event for event in playbook_events(client, playbook) if event["type"] == "replies_read"]
    assert read["data"]["taken"] == 0 and read["data"]["refused"] == 0
    assert [e["type"] for e in history(client, playbook, run_id)][-1] == "delivery_succeeded"
    assert open_requests(client, playbook)["interactions"][0]["reply_refusals"] == 0


def test_a_refused_reply_tells_the_answerer_how_to_answer(client: httpx.Client, billing: McpToolServerProcess) -> None:
    playbook = new_playbook(client)
    source = REPLIED.replace("WORDS", "perhaps").replace(
        "reply:\n", "  tell: { with: { text: '{{ message }}', parent: '{{ sent.id }}', who: '{{ to }}' } }\nreply:\n"
    )
    defined(client, playbook, "deploy", source)
    run_id = str(uuid.uuid4())
    lead = f"bea-{uuid.uuid4().hex[:6]}"
    assert ask(client, playbook, "deploy", {"lead": lead}, run_id).status_code == 200
    first_read_due(client, playbook, run_id)
    refused = settled(client, playbook, run_id, "reply_refused")[-1]["data"]
    assert refused["told"] is True
    deadline = time.monotonic() + POLL_LIMIT_S
    while not any(event["type"] == "telling_succeeded" for event in playbook_events(client, playbook)):
        assert time.monotonic() < deadline, "nobody was told"
        time.sleep(0.05)
    kinds = [event["type"] for event in playbook_events(client, playbook)]
    assert "telling_started" in kinds
    told = [c for c in billing.calls() if c["name"] == "say" and c["arguments"].get("who") == lead]
    assert [c["arguments"]["text"] for c in told] == [
        "To answer, reply with one of: go, hold. Words after it are kept as reason."
    ]
    assert told[0]["arguments"]["parent"] == "m-0"
