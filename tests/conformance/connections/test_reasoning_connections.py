"""The reasoning tool loop reaching connections (reasoning-format "Tools"; HTTP page "A connection that is not
ready"): a function names a connection's tools by its name, its calls carry the connection's id and its
credential, and a connection that is not ready refuses the run before the model is called."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.connections.conftest import (
    SECRET,
    ConnectionFakes,
    add,
    connection_settings,
    secret_connection,
)
from tests.conformance.helpers import problem
from tests.conformance.reasoning.conftest import define_helper, gateway_settings, run_helper
from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.gateway_process import FakeGatewayProcess, start_fake_gateway


@pytest.fixture(scope="module")
def gateway() -> Iterator[FakeGatewayProcess]:
    process = start_fake_gateway()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, gateway: FakeGatewayProcess, connection_fakes: ConnectionFakes
) -> Iterator[ServerProcess]:
    settings = {**connection_settings(connection_fakes), **gateway_settings(gateway)}
    started = start_server(Path(tmp_path_factory.mktemp("reasoning-connections")), settings)
    yield started
    assert started.stop() == 0, started.log()


def test_a_function_calls_a_connections_tool_under_its_credential(
    server: ServerProcess, gateway: FakeGatewayProcess, connection_fakes: ConnectionFakes
) -> None:
    call = {"id": "call-1", "name": "crmconn__get_customer", "arguments": json.dumps({"id": "c-7"})}
    model = gateway.new_script(
        {"tool_calls": [call], "usage": {"prompt_tokens": 50}},
        {"content": "Customer c-7 is on the pro plan.", "usage": {"prompt_tokens": 80, "completion_tokens": 9}},
    )
    run_id = str(uuid.uuid4())
    with server.client() as client:
        connected = secret_connection(client, connection_fakes.guarded.url, name="crmconn")
        playbook = define_helper(client, model, "crmconn/get_customer")
        response = run_helper(client, playbook, run_id)
        assert response.status_code == 200, response.text
        assert response.json()["output"] == "Customer c-7 is on the pro plan."
        history = client.get(f"{playbook}/runs/{run_id}/history", params={"limit": 100})
    events: list[dict[str, Any]] = history.json()["events"]
    started = next(event["data"] for event in events if event["type"] == "tool_call_started")
    assert started["server"] == "crmconn" and started["connection_id"] == connected["id"]
    answered = next(event["data"] for event in events if event["type"] == "tool_call_answered")
    assert answered["is_error"] is False
    assert SECRET not in history.text + response.text


def test_a_connection_that_is_not_ready_refuses_the_run_before_the_model(
    server: ServerProcess, gateway: FakeGatewayProcess, connection_fakes: ConnectionFakes
) -> None:
    model = gateway.new_script({"content": "never asked"})
    with server.client() as client:
        add(client, "mcp", {"url": connection_fakes.open.url}, {"kind": "none"}, name="waiting")
        playbook = define_helper(client, model, "waiting/*")
        refused = problem(run_helper(client, playbook, str(uuid.uuid4())), 503, "unavailable", "tool_not_offered")
    assert refused["because"] == "connection_pending"
    assert gateway.requests(model) == []
