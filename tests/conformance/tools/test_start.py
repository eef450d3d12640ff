"""What the server checks at start (configuration "What the server checks at start"), through the real command:
an HTTP API whose document is refused stops the start with one line naming the entry, never a value."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conformance.tools.conftest import ORG, ToolFakes
from tests.e2e.server_process import free_port, run_forked


def test_a_refused_document_stops_the_start_naming_its_entry(tmp_path: Path, tool_fakes: ToolFakes) -> None:
    entries = {"legacy": {"document": f"{tool_fakes.billing.origin}/swagger.json", "org": ORG}}
    settings = {"TOOL_SERVERS": json.dumps(entries), "PORT": str(free_port())}
    result = run_forked(tmp_path, "serve", settings=settings)
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("tool_servers.legacy.document: ")
    assert tool_fakes.billing.origin not in last
    assert "Traceback" not in result.stderr
