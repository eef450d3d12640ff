"""Saving interaction documents, end to end over HTTP: every key and save-time check (interaction-format §1)."""

from __future__ import annotations

import httpx
import pytest

from tests.conformance.helpers import new_playbook, problem
from tests.conformance.interactions.documents import QUESTION, define, defined

CALL = """---
description: Read the unpaid invoices of one customer
call:
  server: billing
  tool: listInvoices
  with: { customer: '{{ input.customer }}', status: unpaid, limit: '{{ input["limit"] }}' }
  read: /invoices
input:
  schema:
    type: object
    required: [customer, limit]
    properties: { customer: { type: string }, limit: { type: integer } }
output:
  schema: { type: array, items: { type: object } }
---
"""

FULL = """---
description: Ask the on-call lead in the team chat
to: '{{ input.lead }}'
expires: PT6H
deliver:
  server: teamchat
  tool: send_message
  with:
    room: '{{ input.room }}'
    body: '{{ message }}'
    mention: '{{ to }}'
  sent:
    conversation: /message/room
    id: /message/key
replies:
  conversation: '{{ sent.conversation }}:{{ sent.id }}'
  tool: list_replies
  with:
    room: '{{ sent.conversation }}'
    parent: '{{ sent.id }}'
    after: '{{ since | default: "" }}'
    max: 20
  read:
    list: /items
    order: oldest_first
    each: { id: /key, sender: /author, text: /body, to: /parent }
  wait: PT30S
  tell:
    with: { room: '{{ sent.conversation }}', reply_to: '{{ sent.id }}', body: '{{ message }}' }
reply:
  decision: { from: word, words: { go: [yes, ship], hold: [no, wait] } }
  reason: rest
input:
  schema:
    type: object
    required: [lead, room]
    properties:
      lead: { type: string }
      room: { type: string }
output:
  schema:
    type: object
    required: [decision]
    properties:
      decision: { type: string, enum: [go, hold] }
      reason: { type: string, maxLength: 1000 }
---
Deploy is ready. Reply `go` or `hold`.
"""


@pytest.fixture(scope="module")
def playbook(client: httpx.Client) -> str:
    return new_playbook(client)


def refusals(client: httpx.Client, playbook: str, source: str) -> list[str]:
    body = problem(define(client, playbook, "doc", source), 422, "invalid_input")
    assert all(error["pointer"] == "/source" for error in body["errors"])
    return [error["detail"] for error in body["errors"]]


def test_every_shape_of_the_format_saves_with_its_overview(client: httpx.Client, playbook: str) -> None:
    call = defined(client, playbook, "invoices", CALL)
    assert call["type"] == "interaction" and call["version"] == 1
    assert "listInvoices" in call["overview"] and "/invoices" in call["overview"]
    full = defined(client, playbook, "full", FULL)
    assert "send_message" in full["overview"]
    question = defined(client, playbook, "question", QUESTION)
    assert "inbox" in question["overview"] and "May **{{ input.service }}**" in question["overview"]
    shown = client.get(f"{playbook}/definitions/interaction/question").json()
    assert shown["output_schema"]["required"] == ["decision"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (QUESTION.replace("expires: PT1H\n", ""), "Line 3, /to: A request needs expires"),
        (
            QUESTION.split("---\nMay")[0] + "---\n",
            "Line 20: The definition has no message: write it after the front matter",
        ),
        (
            QUESTION.replace("expires: PT1H", "expires: PT30S"),
            "Line 4, /expires: Expected an ISO 8601 duration from PT1M to P30D",
        ),
        (QUESTION.replace("expires: PT1H", "expires: P1M"), "/expires: Expected an ISO 8601 duration"),
        (QUESTION.replace("expires: PT1H", "expires: P31D"), "/expires: Expected an ISO 8601 duration"),
        (
            QUESTION.replace("to: '{{ input.lead }}'", "to: '${TOKEN}'"),
            "Line 3, /to: Expected no ${ in a template, which never holds a secret",
        ),
        (QUESTION.replace("expires: PT1H", "expires: PT1H\nmodel: fake/x"), "Line 5, /model: Unknown key model"),
        (
            QUESTION.replace("to: '{{ input.lead }}'", "to: '{{ who }}'"),
            "Line 3, /to: The template reads who, which is neither input, today, now nor a name it creates",
        ),
        (QUESTION.replace("Reply go or hold.", "{{ input.x | money }}"), "There is no filter named money"),
        (QUESTION.replace("Reply go or hold.", "{% system %}x{% endsystem %}"), "There is no tag named system"),
        (
            CALL.replace("read: /invoices", "read: invoices"),
            "Line 7, /call/read: Expected a JSON Pointer such as /items: it starts with a slash, writes ~ as ~0 "
            "and a slash within a name as ~1",
        ),
        (
            CALL.replace("---\n", "---\nto: x\n", 1),
            "/to: to cannot stand beside call",
        ),
        (CALL + "Hello\n", "A function with call has no message"),
        (
            CALL.replace("output:\n  schema: { type: array, items: { type: object } }\n", ""),
            "/call: A function with call needs output.schema",
        ),
        (
            "---\ndescription: nothing\n---\nHi\n",
            "Line 2: The front matter needs call (to ask a system) or to (to ask a party)",
        ),
        (CALL.replace("server: billing", "server: Billing"), "/call/server: Expected a server name"),
        (CALL.replace("tool: listInvoices", "tool: 'list invoices'"), "/call/tool: Expected a tool name"),
        (
            FULL.replace("  sent:\n    conversation: /message/room\n    id: /message/key\n", ""),
            "/replies: replies needs deliver.sent",
        ),
        (
            FULL.replace("    id: /message/key\n", ""),
            "/deliver/sent: deliver.sent takes both conversation and id, or neither",
        ),
        (
            FULL.replace("order: oldest_first", "order: random"),
            "/replies/read/order: Expected order: oldest_first or newest_first",
        ),
        (FULL.replace("wait: PT30S", "wait: PT2S"), "/replies/wait: Expected a duration from PT5S to PT1H"),
        (FULL.replace("go: [yes, ship]", "go: [yes, no]"), "/reply/decision/words/hold: The word no means go already"),
        (FULL.replace("go: [yes, ship]", "later: [yes]"), "later is not a value of the enum of decision"),
        (
            FULL.replace("reason: rest", "reason: rest\n  mood: text"),
            "/reply/mood: The answer schema has no top-level string property mood",
        ),
        (
            QUESTION.replace("output:", "from: '{{ input.lead }}'\nnothing:"),
            "from needs output.schema",
        ),
        (
            FULL.replace("body: '{{ message }}'\n    mention", "body: 'Hi {{ answer_schema }}'\n    mention"),
            "/deliver/with/body: The template renders an object or array among text: write | json after it, "
            "or write it alone as one {{ }}",
        ),
        (
            FULL.replace("room: '{{ sent.conversation }}'\n    parent", "room: '{{ message }}'\n    parent"),
            "/replies/with/room: The template reads message, which is neither conversation, sent, since, to nor",
        ),
        (
            FULL.replace("max: 20", "max: '" + "x" * 17000 + "'"),
            "/replies/with: The arguments take more than 16,384 bytes as JSON",
        ),
    ],
)
def test_each_problem_is_refused_at_its_line_and_pointer(
    client: httpx.Client, playbook: str, source: str, expected: str
) -> None:
    found = refusals(client, playbook, source)
    assert any(expected in detail for detail in found), found


def test_a_closed_input_schema_refuses_a_field_it_does_not_list(client: httpx.Client, playbook: str) -> None:
    source = QUESTION.replace("required: [lead, service]", "required: [lead, service]\n    additionalProperties: false")
    source = source.replace("to: '{{ input.lead }}'", "to: '{{ input.boss }}'")
    found = refusals(client, playbook, source)
    assert any("input.boss, which the input schema does not list" in detail for detail in found), found
