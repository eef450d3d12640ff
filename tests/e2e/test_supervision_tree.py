"""The supervision tree of a running server, read from its start log (issue 15, point 1; design §4). Both tests
read the log of one server's whole life, started, asked for `/health` and stopped (`life_log`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server_process import start_server

TREE = {
    "name": "root",
    "strategy": "one_for_one",
    "children": [
        {
            "name": "ledger",
            "restart": "permanent",
            "strategy": "one_for_one",
            "children": [{"name": "writer", "restart": "permanent"}],
        },
        {
            "name": "sandbox",
            "restart": "permanent",
            "strategy": "one_for_one",
            "children": [{"name": f"worker-{number}", "restart": "transient"} for number in range(1, 5)],
        },
        {
            "name": "playbooks",
            "restart": "permanent",
            "strategy": "one_for_one",
            "children": [
                {"name": "org-actors", "restart": "permanent"},
                {
                    "name": "playbook-actors",
                    "restart": "permanent",
                    "strategy": "one_for_all",
                    "children": [
                        {"name": "run-actors", "restart": "permanent"},
                    ],
                },
                {
                    "name": "recall-views",
                    "restart": "permanent",
                    "strategy": "one_for_all",
                    "children": [{"name": "recall-view-actors", "restart": "permanent"}],
                },
            ],
        },
        {
            "name": "model-processes",
            "restart": "permanent",
            "strategy": "one_for_one",
            "children": [
                {"name": "model-process-keeper", "restart": "permanent"},
                *({"name": f"model-process-{number}", "restart": "permanent"} for number in range(1, 5)),
            ],
        },
        {
            "name": "workflows",
            "restart": "permanent",
            "strategy": "one_for_one",
            "children": [
                {"name": name, "restart": "permanent"}
                for name in ("timer-loop", "deliveries", "reply-reads", "reactions", "recall-keeper")
            ],
        },
        {"name": "http", "restart": "transient"},
    ],
}


def tree_entries(log: str) -> list[dict[str, Any]]:
    entries = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    return [entry for entry in entries if entry["message"].startswith("supervision tree: ")]


@pytest.fixture(scope="module")
def life_log(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The log of a server started, asked for `/health` and stopped with SIGTERM (exit 0)."""
    server = start_server(Path(tmp_path_factory.mktemp("tree")), {"LOG_FORMAT": "json", "LOG_LEVEL": "info"})
    try:
        with server.client() as client:
            assert client.get("/health").status_code == 200
    finally:
        code = server.stop()
    assert code == 0, server.log()
    return server.log()


def test_a_server_logs_its_tree_once_at_start_with_every_child_in_start_order(life_log: str) -> None:
    entries = tree_entries(life_log)
    assert len(entries) == 1, life_log
    (entry,) = entries
    assert entry["level"] == "info"
    assert entry["logger"] == "auto_runtime.server"
    assert entry["tree"] == TREE
    assert entry["message"] == (
        "supervision tree: root (one_for_one) [ledger permanent one_for_one [writer permanent], "
        "sandbox permanent one_for_one [worker-1 transient, "
        "worker-2 transient, worker-3 transient, worker-4 transient], playbooks permanent one_for_one "
        "[org-actors permanent, playbook-actors permanent one_for_all "
        "[run-actors permanent], recall-views permanent one_for_all "
        "[recall-view-actors permanent]], "
        "model-processes permanent one_for_one [model-process-keeper permanent, model-process-1 permanent, "
        "model-process-2 permanent, model-process-3 permanent, model-process-4 permanent], "
        "workflows permanent one_for_one [timer-loop permanent, deliveries permanent, reply-reads permanent, "
        "reactions permanent, recall-keeper permanent], "
        "http transient]"
    )


def test_the_tree_is_logged_after_the_children_started_and_before_http_stops(life_log: str) -> None:
    messages = [json.loads(line)["message"] for line in life_log.splitlines() if line.startswith("{")]
    listening = next(i for i, message in enumerate(messages) if message.startswith("listening on "))
    tree = next(i for i, message in enumerate(messages) if message.startswith("supervision tree: "))
    stopped = messages.index("stopped")
    assert listening < tree < stopped
