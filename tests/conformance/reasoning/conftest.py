"""A real server whose `fake` gateway is the fake model gateway, for the reasoning conformance tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.gateway_process import FakeGatewayProcess, start_fake_gateway

FAKE_KEY = "fake-gateway-key-0123456789"


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
