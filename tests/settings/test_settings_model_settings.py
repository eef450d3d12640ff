"""Gateways, aliases, declared and allowed models."""

import pytest

from tests.settings.start_folder import StartFolder

GATEWAYS = """
model_gateways:
  - name: gateway
    base_url: https://gateway.example.com/v1/
    api_key: ${GATEWAY_API_KEY}
    headers:
      X-Team: research
    structured_outputs: true
    allowed_provider_options: [top_k, safe_prompt]
"""


def test_a_gateway_from_the_file(start: StartFolder) -> None:
    start.file(GATEWAYS + "model_aliases:\n  anthropic/*: gateway/anthropic/*\n  fast/model: gateway/llama\n")
    loaded = start.load({"GATEWAY_API_KEY": "gateway-key-1"})
    gateway = loaded.settings.model_gateways[0]
    assert (gateway.name, gateway.base_url, gateway.api_key) == (
        "gateway",
        "https://gateway.example.com/v1",
        "gateway-key-1",
    )
    assert gateway.structured_outputs is True
    assert gateway.expose_provider_messages is False
    assert loaded.settings.model_aliases == {
        "anthropic/*": "gateway/anthropic/*",
        "fast/model": "gateway/llama",
    }
    assert {"gateway-key-1", "research"} <= loaded.secret_values


def test_a_gateway_from_the_environment_may_name_its_key_by_variable(start: StartFolder) -> None:
    env = {
        "MODEL_GATEWAYS": '[{"name": "fake", "base_url": "http://127.0.0.1:9999/v1", "api_key_env": "FAKE_KEY"}]',
        "FAKE_KEY": "fake-key-123",
    }
    loaded = start.load(env)
    assert loaded.settings.model_gateways[0].api_key_env == "FAKE_KEY"
    assert "fake-key-123" in loaded.secret_values
    assert "names FAKE_KEY, which is not set" in start.refused({"MODEL_GATEWAYS": env["MODEL_GATEWAYS"]})


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            "name: anthropic\n    base_url: https://g.example.com",
            "[0].name: expects a name that is not a built-in",
        ),
        ("name: Gate\n    base_url: https://g.example.com", "[0].name: expects 1 to 32 lowercase letters"),
        ("name: gate\n    base_url: ftp://g.example.com", "[0].base_url: expects an http or https URL"),
        (
            "name: gate\n    base_url: https://g.example.com\n    api_key_env: KEY",
            "[0].api_key_env: is for MODEL_GATEWAYS only",
        ),
        (
            "name: gate\n    base_url: https://g.example.com\n    allowed_provider_options: [model]",
            "expects no field the runtime sets",
        ),
        (
            "name: gate\n    base_url: https://g.example.com\n    retries: 3",
            "[0].retries: is not a key the server knows",
        ),
    ],
)
def test_a_gateway_the_server_refuses(start: StartFolder, entry: str, expected: str) -> None:
    start.file(f"model_gateways:\n  - {entry}\n")
    assert expected in start.refused()


def test_two_gateways_with_one_name(start: StartFolder) -> None:
    start.file(
        "model_gateways:\n  - {name: g, base_url: 'https://a.example.com'}\n  - {name: g, base_url: 'https://b.example.com'}\n"
    )
    assert start.refused() == "auto-runtime.yaml:3:12: model_gateways[1].name: expects each gateway's name once"


@pytest.mark.parametrize(
    ("aliases", "expected"),
    [
        ("anthropic/*: gateway/anthropic/x", "model_aliases.anthropic/*: expects * at the end of both"),
        ("fast: gateway/x", "model_aliases.fast: expects a model reference provider/model"),
        ("a/*b*: gateway/*", "expects a model reference provider/model, with * only once, at the end"),
        ("a/x: b/y\n  b/y: c/z", "model_aliases.a/x: expects a target that is not itself an alias"),
        ("a/*: b/*\n  b/*: c/*", "model_aliases.a/*: expects a target that is not itself an alias"),
        ("a/x: b/y\n  b/*: c/*", "model_aliases.a/x: expects a target that is not itself an alias"),
    ],
)
def test_aliases_the_server_refuses(start: StartFolder, aliases: str, expected: str) -> None:
    start.file(f"model_aliases:\n  {aliases}\n")
    assert expected in start.refused()


def test_declared_and_allowed_models(start: StartFolder) -> None:
    start.file(
        GATEWAYS
        + "declared_models:\n  bedrock: [anthropic.claude-x]\n  gateway: [llama-3.3-70b]\n"
        + "allowed_models: [anthropic/*, gateway/llama-3.3-70b]\n"
    )
    settings = start.load({"GATEWAY_API_KEY": "k-12345678"}).settings
    assert settings.declared_models == {"bedrock": ("anthropic.claude-x",), "gateway": ("llama-3.3-70b",)}
    assert settings.allowed_models == ("anthropic/*", "gateway/llama-3.3-70b")


def test_declared_models_of_an_unknown_provider(start: StartFolder) -> None:
    start.file("declared_models:\n  mistral: [large]\n")
    assert start.refused() == (
        "auto-runtime.yaml:2:3: declared_models.mistral: expects the prefix of a built-in provider or of a gateway"
    )


def test_allowed_models_from_the_environment_are_json(start: StartFolder) -> None:
    assert start.load({"ALLOWED_MODELS": '["openai/gpt-x"]'}).settings.allowed_models == ("openai/gpt-x",)
    assert "ALLOWED_MODELS: [0]: expects a model reference" in start.refused({"ALLOWED_MODELS": '["gpt"]'})
