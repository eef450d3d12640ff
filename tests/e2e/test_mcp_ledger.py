"""An MCP tool call and the equivalent HTTP request leave the same facts in the ledger, and answer the same."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.e2e.mcp_client import mcp_client, output_of, problem_of
from tests.e2e.server_process import start_server

TIMES = ("created_at", "updated_at", "retired_at", "at", "trace_id", "span_id")
VIA_HTTP = "desk-via-http"
VIA_MCP = "desk-via-mcp"


def _steps(playbook: str) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(tool, HTTP method, HTTP path, arguments): the same calls over both transports."""
    base = f"/v1/orgs/local/playbooks/{playbook}"
    named = {"name": "Help desk", "description": "Tickets we answer."}
    return [
        ("create_playbook", "POST", "/v1/orgs/local/playbooks", {"name": "Desk", "description": "Tickets."}),
        ("update_playbook", "PUT", base, named),
        ("update_playbook", "PUT", base, named),
        ("create_definition", "POST", f"{base}/definitions/reasoning", {"name": "triage", "source": "---\n"}),
        ("run_definition", "POST", f"{base}/definitions/reasoning/triage/run", {"input": {"ticket": "Help"}}),
        ("list_runs", "GET", f"{base}/runs", {}),
        ("retire_playbook", "POST", f"{base}/retire", {}),
        ("retire_playbook", "POST", f"{base}/retire", {}),
        ("update_playbook", "PUT", base, named),
    ]


def _mcp_arguments(tool: str, playbook: str, arguments: dict[str, Any]) -> dict[str, Any]:
    extra = {"type": "reasoning"} if tool == "create_definition" else {}
    if tool == "run_definition":
        extra = {"type": "reasoning", "name": "triage"}
    return {"playbook": playbook, **extra, **arguments}


def _neutral(value: Any, playbook: str) -> Any:
    """The value with the playbook id and every time left out, so two playbooks' facts compare equal."""
    if isinstance(value, dict):
        return {k: _neutral(v, playbook) for k, v in value.items() if k not in TIMES}
    if isinstance(value, list):
        return [_neutral(v, playbook) for v in value]
    if isinstance(value, str):
        return value.replace(playbook, "<playbook>")
    return value


def _facts_of(ledger: Path, playbook: str) -> list[dict[str, Any]]:
    with sqlite3.connect(ledger) as connection:
        rows = connection.execute(
            "SELECT stream, type, data, metadata FROM ledger_records ORDER BY global_position"
        ).fetchall()
    facts = []
    for stream, kind, data, metadata in rows:
        if playbook not in stream and playbook not in data:
            continue
        facts.append(
            _neutral(
                {"stream": stream, "type": kind, "data": json.loads(data), "metadata": json.loads(metadata)}, playbook
            )
        )
    return facts


async def test_an_mcp_call_and_its_http_request_record_the_same_facts(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    try:
        http_answers = []
        with server.client() as http:
            for tool, method, path, arguments in _steps(VIA_HTTP):
                body = {"playbook": VIA_HTTP, **arguments} if tool == "create_playbook" else arguments
                response = http.request(method, path, json=body) if method != "GET" else http.get(path)
                kind = "problem" if response.headers["content-type"] == "application/problem+json" else "output"
                http_answers.append((tool, kind, _neutral(response.json(), VIA_HTTP)))
        mcp_answers = []
        async with mcp_client(server.base_url) as client:
            for tool, _, _, arguments in _steps(VIA_MCP):
                result = await client.call_tool(tool, _mcp_arguments(tool, VIA_MCP, arguments))
                if result.is_error:
                    mcp_answers.append((tool, "problem", _neutral(problem_of(result), VIA_MCP)))
                else:
                    mcp_answers.append((tool, "output", _neutral(output_of(result), VIA_MCP)))
        assert mcp_answers == http_answers
        assert [kind for _, kind, _ in http_answers] == [
            "output",
            "output",
            "output",
            "problem",
            "problem",
            "output",
            "output",
            "output",
            "problem",
        ]
    finally:
        assert server.stop() == 0, server.log()
    ledger = tmp_path / ".auto-runtime" / "ledger.db"
    via_http = _facts_of(ledger, VIA_HTTP)
    via_mcp = _facts_of(ledger, VIA_MCP)
    assert [fact["type"] for fact in via_http] == ["playbook_created", "playbook_updated", "playbook_retired"]
    assert via_mcp == via_http
