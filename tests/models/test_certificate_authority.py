"""An https gateway with a certificate of a private authority: untrusted until NODE_EXTRA_CA_CERTS names it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from auto_runtime.models import ModelCallFailure, ModelDirectory, ModelRequest, UserTurn
from tests.fakes.gateway_process import FakeGatewayProcess, start_fake_gateway
from tests.fakes.tls import self_signed
from tests.models.conftest import settings_of


@pytest.fixture(scope="module")
def tls_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeGatewayProcess, Path]]:
    folder = tmp_path_factory.mktemp("tls-gateway")
    certificate, key = self_signed(folder)
    process = start_fake_gateway(tls=(certificate, key))
    yield process, certificate
    process.stop()


def environ_for(gateway: FakeGatewayProcess) -> dict[str, str]:
    return {"MODEL_GATEWAYS": json.dumps([{"name": "secure", "base_url": gateway.base_url}])}


async def test_an_untrusted_certificate_makes_the_provider_unusable(
    tmp_path: Path, tls_gateway: tuple[FakeGatewayProcess, Path]
) -> None:
    gateway, _ = tls_gateway
    model = gateway.new_script({"content": "unused"})
    directory = ModelDirectory.from_settings(settings_of(tmp_path, environ_for(gateway)))
    try:
        with pytest.raises(ModelCallFailure) as raised:
            await directory.call(directory.resolve(f"secure/{model}"), ModelRequest(turns=(UserTurn("Hi"),)))
    finally:
        await directory.aclose()
    assert raised.value.kind == "certificate_untrusted"
    assert "certificate authority" in raised.value.detail
    assert gateway.requests(model) == []


async def test_the_operators_authority_makes_it_trusted(
    tmp_path: Path, tls_gateway: tuple[FakeGatewayProcess, Path]
) -> None:
    gateway, certificate = tls_gateway
    model = gateway.new_script({"content": "over TLS"})
    environ = {**environ_for(gateway), "NODE_EXTRA_CA_CERTS": str(certificate)}
    directory = ModelDirectory.from_settings(settings_of(tmp_path, environ))
    try:
        answer = await directory.call(directory.resolve(f"secure/{model}"), ModelRequest(turns=(UserTurn("Hi"),)))
    finally:
        await directory.aclose()
    assert answer.text == "over TLS"
