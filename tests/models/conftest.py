from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from auto_runtime.settings import Settings, load_settings
from tests.fakes.gateway_process import FakeGatewayProcess, start_fake_gateway

FAKE_KEY = "fake-gateway-key-0123456789"


@pytest.fixture(scope="session")
def gateway() -> Iterator[FakeGatewayProcess]:
    """One fake gateway process for the session; each test scripts its own model names."""
    process = start_fake_gateway()
    yield process
    process.stop()


def settings_of(folder: Path, environ: Mapping[str, str]) -> Settings:
    """Settings read by the real loader from a clean environment (no .env, no implicit file)."""
    return load_settings({"HOST": "127.0.0.1", **environ}, folder, mode="image").settings


def gateway_environ(gateway: FakeGatewayProcess, **entry: Any) -> dict[str, str]:
    """MODEL_GATEWAYS naming the fake as ``fake``, its key in FAKE_GATEWAY_KEY."""
    fields: dict[str, Any] = {"name": "fake", "base_url": gateway.base_url, "api_key_env": "FAKE_GATEWAY_KEY"}
    fields.update(entry)
    return {"MODEL_GATEWAYS": json.dumps([fields]), "FAKE_GATEWAY_KEY": FAKE_KEY}
