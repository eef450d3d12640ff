"""`list_models` through the real server process, with MODEL_GATEWAYS naming the fake gateway process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.gateway_process import FakeGatewayProcess
from tests.models.conftest import FAKE_KEY

SCRIPT = "e2e-list-models"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, gateway: FakeGatewayProcess) -> Iterator[ServerProcess]:
    gateway.models({"data": [{"id": "llama-3.3-70b"}, {"id": "whisper", "type": "audio"}]}, script=SCRIPT)
    entry = {
        "name": "fake",
        "base_url": gateway.base_url,
        "api_key_env": "FAKE_GATEWAY_KEY",
        "headers": {"x-fake-script": SCRIPT},
    }
    settings = {
        "MODEL_GATEWAYS": json.dumps([entry]),
        "FAKE_GATEWAY_KEY": FAKE_KEY,
        "MODEL_ALIASES": json.dumps({"anthropic/*": "fake/anthropic/*"}),
        "AWS_REGION": "eu-west-1",
        "DECLARED_MODELS": json.dumps({"bedrock": ["anthropic.claude-x"]}),
    }
    process = start_server(Path(tmp_path_factory.mktemp("models-server")), settings)
    yield process
    assert process.stop() == 0, process.log()


def test_list_models_over_http(server: ServerProcess, gateway: FakeGatewayProcess) -> None:
    with server.client() as client:
        response = client.get("/v1/orgs/acme/models")
    assert response.status_code == 200, response.text
    answer = response.json()
    assert [entry["id"] for entry in answer["data"]] == [
        "anthropic/*",
        "bedrock-anthropic/*",
        "bedrock/anthropic.claude-x",
        "fake/llama-3.3-70b",
    ]
    assert answer["catalog_status"] == "complete"
    assert answer["data"][0] == {
        "id": "anthropic/*",
        "object": "model",
        "created": 0,
        "owned_by": "fake",
        "resolved_to": "fake/anthropic/*",
        "pattern": True,
    }
    assert FAKE_KEY not in response.text
    assert gateway.base_url not in response.text
    received = gateway.requests(SCRIPT)
    assert received and received[0]["headers"]["authorization"] == f"Bearer {FAKE_KEY}"


def test_one_provider_and_a_malformed_provider(server: ServerProcess) -> None:
    with server.client() as client:
        bedrock = client.get("/v1/orgs/acme/models", params={"provider": "bedrock"})
        malformed = client.get("/v1/orgs/acme/models", params={"provider": "Not_A_Prefix"})
    assert bedrock.status_code == 200
    assert [entry["id"] for entry in bedrock.json()["data"]] == ["bedrock/anthropic.claude-x"]
    assert malformed.status_code == 422
    assert malformed.json()["errors"][0]["pointer"] == "/provider"


def test_the_openapi_document_describes_list_models(server: ServerProcess) -> None:
    with server.client() as client:
        document = client.get("/v1/openapi.json").json()
    operation = document["paths"]["/orgs/{org}/models"]["get"]
    assert operation["operationId"] == "list_models"
    assert operation["tags"] == ["models"]
