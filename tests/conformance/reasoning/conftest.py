"""A real server whose `fake` gateway is the fake model gateway, for the reasoning conformance tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conformance.helpers import new_playbook
from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.gateway_process import FakeGatewayProcess, start_fake_gateway

FAKE_KEY = "fake-gateway-key-0123456789"
HELPER_WITH_TOOLS = """---
model: fake/{model}
tools: [{tools}]
---
Help customer {{{{ input.customer_id }}}}.
"""
"""The `helper` function of the tool-loop tests: a model of the fake gateway and the tools it may call."""


@pytest.fixture(scope="session")
def reasoning_gateway() -> Iterator[FakeGatewayProcess]:
    process = start_fake_gateway()
    yield process
    process.stop()


def gateway_settings(gateway: FakeGatewayProcess) -> dict[str, str]:
    entry = {"name": "fake", "base_url": gateway.base_url, "api_key_env": "FAKE_GATEWAY_KEY"}
    return {
        "MODEL_GATEWAYS": json.dumps([entry]),
        "FAKE_GATEWAY_KEY": FAKE_KEY,
        "MODEL_ALIASES": json.dumps({"anthropic/*": "fake/anthropic/*"}),
    }


@pytest.fixture(scope="session")
def reasoning_server(
    tmp_path_factory: pytest.TempPathFactory, reasoning_gateway: FakeGatewayProcess
) -> Iterator[ServerProcess]:
    server = start_server(Path(tmp_path_factory.mktemp("reasoning-server")), gateway_settings(reasoning_gateway))
    yield server
    assert server.stop() == 0, server.log()


def define_helper(client: httpx.Client, model: str, tools: str, org: str = "acme") -> str:
    """A new playbook of `org` holding `helper` (`HELPER_WITH_TOOLS`); the playbook's URL."""
    playbook = new_playbook(client, org)
    source = HELPER_WITH_TOOLS.format(model=model, tools=tools)
    response = client.post(f"{playbook}/definitions/reasoning", json={"name": "helper", "source": source})
    assert response.status_code == 201, response.text
    return playbook


def run_helper(client: httpx.Client, playbook: str, run_id: str) -> httpx.Response:
    """Runs `helper` of the playbook at `playbook` for customer c-7 under `run_id`."""
    body = {"input": {"customer_id": "c-7"}, "run_id": run_id}
    return client.post(f"{playbook}/definitions/reasoning/helper/run", json=body)
