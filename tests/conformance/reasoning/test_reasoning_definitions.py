"""Saving reasoning documents over HTTP: refusals under /source with lines and pointers, warnings, the overview."""

from __future__ import annotations

from tests.conformance.helpers import new_playbook, pointers, problem
from tests.e2e.server_process import ServerProcess

LOOSE = """---
description: Drafts a reply
model: anthropic/claude-x
output:
  format: json
  schema:
    type: object
    properties:
      reply: { type: string, maxLength: 500 }
tools: [helpdesk/get_customer]
---
{% system %}Be kind.{% endsystem %}Reply to {{ input.ticket }}.
"""


def test_a_document_with_problems_is_refused_with_every_issue_under_source(reasoning_server: ServerProcess) -> None:
    source = "---\nmodel: nope\nconfig:\n  seed: -1\n---\nHi {{ who }}\n"
    with reasoning_server.client() as client:
        playbook = new_playbook(client)
        response = client.post(f"{playbook}/definitions/reasoning", json={"name": "broken", "source": source})
        body = problem(response, 422, "invalid_input")
    assert pointers(body) == ["/source", "/source", "/source"]
    assert [error["detail"] for error in body["errors"]] == [
        "Line 2, /model: Expected a model written provider/model",
        "Line 4, /config/seed: Expected an integer of 0 or more",
        "Line 6: The template reads who, which is neither input, today, now nor a name it creates",
    ]


def test_warnings_and_the_overview_of_a_saved_document(reasoning_server: ServerProcess) -> None:
    with reasoning_server.client() as client:
        playbook = new_playbook(client)
        created = client.post(f"{playbook}/definitions/reasoning", json={"name": "drafter", "source": LOOSE})
        assert created.status_code == 201, created.text
        definition = created.json()
        listed = client.get(f"{playbook}/definitions/reasoning").json()
    assert definition["description"] == "Drafts a reply"
    warnings = definition["warnings"]
    assert any(w["pointer"] == "/output/schema/properties/reply/maxLength" and w["line"] == 9 for w in warnings)
    assert any("openai" in w["providers"] for w in warnings)
    overview = definition["overview"]
    assert "## What it needs" in overview and "## What it produces" in overview and "## What it does" in overview
    assert "`anthropic/claude-x`" in overview and "`get_customer` of `helpdesk`" in overview
    assert "Be kind." in overview
    assert [d["name"] for d in listed["definitions"]] == ["drafter"]
    assert all("overview" not in d for d in listed["definitions"])
