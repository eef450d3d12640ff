"""References, aliases, the allow list and provider configuration: decided before anything is called."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auto_runtime.models import ModelDirectory, ModelNotOffered, ProviderOptionRefused
from auto_runtime.models.aliases import find_alias
from auto_runtime.models.allow_list import catalog_entry_allowed, is_allowed, pattern_allowed
from auto_runtime.models.references import split_reference
from auto_runtime.models.resolution import resolve_reference
from tests.models.conftest import settings_of

ALIASES = {
    "anthropic/*": "fake/anthropic/*",
    "anthropic/claude-special-*": "fake/special/*",
    "openai/fast": "fake/llama-3.3-70b",
}


def test_split_at_the_first_slash() -> None:
    reference = split_reference("fake/anthropic/claude-x")
    assert reference is not None
    assert (reference.provider, reference.model_id) == ("fake", "anthropic/claude-x")
    assert split_reference("no-slash") is None
    assert split_reference("/x") is None
    assert split_reference("x/") is None


def test_exact_alias_first_then_the_longest_wildcard() -> None:
    assert find_alias("openai/fast", ALIASES) is not None
    exact = find_alias("openai/fast", ALIASES)
    assert exact is not None and exact.target == "fake/llama-3.3-70b"
    longest = find_alias("anthropic/claude-special-2", ALIASES)
    assert longest is not None and (longest.alias, longest.target) == ("anthropic/claude-special-*", "fake/special/2")
    shorter = find_alias("anthropic/claude-x", ALIASES)
    assert shorter is not None and shorter.target == "fake/anthropic/claude-x"
    assert find_alias("anthropic/", ALIASES) is None  # the rest must not be empty
    assert find_alias("openai/gpt-x", ALIASES) is None


def test_the_allow_list_by_name_or_through_an_alias() -> None:
    allowed = ("anthropic/*", "fake/llama-3.3-70b")
    assert is_allowed(allowed, "anthropic/claude-x", "fake/anthropic/claude-x")
    assert is_allowed(allowed, "openai/fast", "fake/llama-3.3-70b")
    assert not is_allowed(allowed, "fake/other")
    assert is_allowed(None, "anything/at-all")
    assert pattern_allowed(("fake/*",), "fake/anthropic/*")
    assert not pattern_allowed(("fake/anthropic/claude-x",), "fake/anthropic/*")
    assert catalog_entry_allowed(("fake/*",), "anthropic/*", "fake/anthropic/*")
    assert not catalog_entry_allowed(("fake/llama",), "fake/*")


def resolve(reference: str, allowed: tuple[str, ...] | None = None) -> object:
    return resolve_reference(
        reference,
        aliases=ALIASES,
        allowed=allowed,
        configured={"fake"},
        known_prefixes={"anthropic", "openai", "google", "bedrock", "fake"},
    )


def test_a_model_outside_the_allow_list_is_refused_without_naming_the_list() -> None:
    with pytest.raises(ModelNotOffered) as raised:
        resolve("fake/secret-model", allowed=("fake/llama-*",))
    assert raised.value.because == "model_not_allowed"
    assert raised.value.kind == "model_not_offered"
    assert "llama" not in raised.value.detail
    assert "fake/secret-model" in raised.value.detail


def test_the_allow_list_comes_before_the_provider() -> None:
    with pytest.raises(ModelNotOffered) as raised:
        resolve("mistral/large", allowed=("fake/*",))
    assert raised.value.because == "model_not_allowed"


def test_a_provider_not_configured_and_a_provider_nobody_has() -> None:
    with pytest.raises(ModelNotOffered) as raised:
        resolve("openai/gpt-x")
    assert raised.value.because == "provider_not_configured"
    assert raised.value.detail == (
        "openai is not configured. Configured providers: fake. "
        "Aliases: anthropic/*, anthropic/claude-special-*, openai/fast"
    )
    with pytest.raises(ModelNotOffered) as raised:
        resolve("mistral/large")
    assert raised.value.detail.startswith("There is no provider named mistral.")


def test_an_alias_resolves_to_its_targets_provider() -> None:
    resolved = resolve("openai/fast", allowed=("openai/fast",))
    assert resolved == resolve_reference(
        "openai/fast", aliases=ALIASES, allowed=None, configured={"fake"}, known_prefixes=set()
    )


async def test_settings_decide_what_is_configured(tmp_path: Path) -> None:
    environ = {
        "MODEL_GATEWAYS": json.dumps([{"name": "gw", "base_url": "http://127.0.0.1:9/v1"}]),
        "GOOGLE_VERTEX_PROJECT": "p",  # no location: vertex is not configured
        "AZURE_API_KEY": "k" * 12,  # no resource nor base URL: azure is not configured
        "AWS_REGION": "eu-west-1",
    }
    directory = ModelDirectory.from_settings(settings_of(tmp_path, environ), environ=environ)
    try:
        assert directory.configured == {"gw", "bedrock", "bedrock-anthropic"}
        with pytest.raises(ModelNotOffered) as raised:
            directory.resolve("vertex/gemini")
        assert raised.value.detail.startswith("vertex is not configured. Configured providers: bedrock, ")
    finally:
        await directory.aclose()


async def test_gateway_options_are_checked_at_run_time(tmp_path: Path) -> None:
    entry = {"name": "my-gw", "base_url": "http://127.0.0.1:9/v1", "allowed_provider_options": ["transforms"]}
    environ = {"MODEL_GATEWAYS": json.dumps([entry])}
    directory = ModelDirectory.from_settings(settings_of(tmp_path, environ), environ=environ)
    try:
        directory.check_provider_options({"myGw": {"transforms": []}, "anthropic": {"thinking": {}}})
        with pytest.raises(ProviderOptionRefused) as raised:
            directory.check_provider_options({"my-gw": {"route": "fallback"}})
        assert raised.value.field == "/provider_options/my-gw/route"
        with pytest.raises(ProviderOptionRefused) as raised:
            directory.check_provider_options({"other-gw": {"x": 1}})
        assert raised.value.field == "/provider_options/other-gw"
    finally:
        await directory.aclose()
