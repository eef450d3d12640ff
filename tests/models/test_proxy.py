"""HTTPS_PROXY with NODE_USE_ENV_PROXY: requests go through the proxy, except to hosts in NO_PROXY.

The fake gateway plays the proxy: httpx sends a plain-http request to a proxy in absolute form, which the
fake answers like any other, so a gateway entry whose own address is closed still gets its answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auto_runtime.models import ModelCallFailure, ModelDirectory, ModelRequest, RetryPolicy, UserTurn
from tests.e2e.server_process import free_port
from tests.fakes.gateway_process import FakeGatewayProcess
from tests.models.conftest import settings_of


async def call_through(folder: Path, environ: dict[str, str], model: str) -> str | None:
    directory = ModelDirectory.from_settings(
        settings_of(folder, environ), environ=environ, retry=RetryPolicy(waits=(0.01, 0.01))
    )
    try:
        answer = await directory.call(directory.resolve(f"far/{model}"), ModelRequest(turns=(UserTurn("Hi"),)))
    finally:
        await directory.aclose()
    return answer.text


def far_gateway() -> dict[str, str]:
    closed = f"http://localhost:{free_port()}/v1"
    return {"MODEL_GATEWAYS": json.dumps([{"name": "far", "base_url": closed}])}


async def test_requests_go_through_the_proxy(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    model = gateway.new_script({"content": "proxied"})
    environ = {**far_gateway(), "NODE_USE_ENV_PROXY": "1", "HTTPS_PROXY": gateway.origin}
    assert await call_through(tmp_path, environ, model) == "proxied"
    [received] = gateway.requests(model)
    assert received["headers"]["host"].startswith("localhost:")


async def test_no_proxy_hosts_go_direct(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    model = gateway.new_script({"content": "unused"})
    environ = {**far_gateway(), "NODE_USE_ENV_PROXY": "1", "HTTPS_PROXY": gateway.origin, "NO_PROXY": "localhost"}
    with pytest.raises(ModelCallFailure) as raised:
        await call_through(tmp_path, environ, model)
    assert raised.value.kind == "provider_unavailable"
    assert gateway.requests(model) == []


async def test_without_node_use_env_proxy_the_proxy_is_not_used(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    model = gateway.new_script({"content": "unused"})
    environ = {**far_gateway(), "HTTPS_PROXY": gateway.origin}
    with pytest.raises(ModelCallFailure):
        await call_through(tmp_path, environ, model)
    assert gateway.requests(model) == []
