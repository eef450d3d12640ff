"""``list_models``' catalog against the fake gateway's ``GET /v1/models`` and declared models (mcp.md §12)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auto_runtime.models import ModelDirectory, catalog_words
from auto_runtime.models.listing import iso_utc
from tests.fakes.gateway_process import FakeGatewayProcess
from tests.models.conftest import FAKE_KEY, gateway_environ, settings_of

START = 1_800_000_000.0
LISTED = {
    "data": [
        {"id": "mixtral", "type": "language", "name": "Mixtral", "context_window": 32000, "owned_by": "secret-org"},
        {"id": "embedder", "type": "embedding"},
        {"id": "llama", "created": 1_700_000_000},
    ]
}


@dataclass
class Clock:
    now: float = START

    def __call__(self) -> float:
        return self.now


@dataclass
class Listing:
    directory: ModelDirectory
    clock: Clock
    script: str


async def listing(
    folder: Path, gateway: FakeGatewayProcess, *replies: dict[str, Any], **extra: str
) -> AsyncIterator[Listing]:
    script = f"list-{uuid.uuid4().hex[:10]}"
    gateway.models(*replies, script=script)
    environ = {**gateway_environ(gateway, headers={"x-fake-script": script}), **extra}
    clock = Clock()
    directory = ModelDirectory.from_settings(settings_of(folder, environ), environ=environ, clock=clock)
    try:
        yield Listing(directory, clock, script)
    finally:
        await directory.aclose()


def ids(answer: Any) -> list[str]:
    return [entry["id"] for entry in answer.as_json()["data"]]


async def test_a_gateways_own_list(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    async for opened in listing(tmp_path, gateway, LISTED):
        answer = (await opened.directory.list_models()).as_json()
    assert answer == {
        "object": "list",
        "data": [
            {"id": "fake/llama", "object": "model", "created": 1_700_000_000, "owned_by": "fake"},
            {
                "id": "fake/mixtral",
                "object": "model",
                "created": 0,
                "owned_by": "fake",
                "name": "Mixtral",
                "context_window": 32000,
            },
        ],
        "catalog_status": "complete",
        "listed_at": iso_utc(START),
    }
    [received] = gateway.requests(opened.script)
    assert received["path"] == "/v1/models"
    assert received["headers"]["authorization"] == f"Bearer {FAKE_KEY}"


async def test_a_list_is_kept_five_minutes(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    async for opened in listing(tmp_path, gateway, LISTED, {"data": [{"id": "newer"}]}):
        first = await opened.directory.list_models()
        opened.clock.now += 299
        kept = await opened.directory.list_models()
        assert len(gateway.requests(opened.script)) == 1
        opened.clock.now += 2
        refreshed = await opened.directory.list_models()
    assert ids(first) == ids(kept) == ["fake/llama", "fake/mixtral"]
    assert kept.listed_at == iso_utc(START)
    assert ids(refreshed) == ["fake/newer"]
    assert refreshed.listed_at == iso_utc(START + 301)
    assert len(gateway.requests(opened.script)) == 2


async def test_a_failed_refresh_serves_the_previous_list_and_waits_a_minute(
    tmp_path: Path, gateway: FakeGatewayProcess
) -> None:
    failing = {"status": 503, "error": {"message": "down"}}
    async for opened in listing(tmp_path, gateway, LISTED, failing, {"data": [{"id": "back"}]}):
        await opened.directory.list_models()
        opened.clock.now += 301
        stale = await opened.directory.list_models()
        opened.clock.now += 59
        still_stale = await opened.directory.list_models()
        assert len(gateway.requests(opened.script)) == 2
        opened.clock.now += 2
        recovered = await opened.directory.list_models()
    assert (ids(stale), stale.catalog_status, stale.listed_at) == (
        ["fake/llama", "fake/mixtral"],
        "partial",
        iso_utc(START),
    )
    assert still_stale.catalog_status == "partial"
    assert (ids(recovered), recovered.catalog_status) == (["fake/back"], "complete")


async def test_an_unreadable_gateway_list_shows_its_declared_models(
    tmp_path: Path, gateway: FakeGatewayProcess
) -> None:
    declared = json.dumps({"fake": ["declared-a", "declared-b"]})
    async for opened in listing(tmp_path, gateway, {"status": 200, "raw": "not json"}, DECLARED_MODELS=declared):
        answer = await opened.directory.list_models()
    assert ids(answer) == ["fake/declared-a", "fake/declared-b"]
    assert answer.catalog_status == "partial"
    assert answer.listed_at == iso_utc(START)
    assert "incomplete" in catalog_words(answer)


async def test_aliases_hide_what_they_redirect(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    aliases = {
        "anthropic/*": "fake/anthropic/*",
        "openai/fast": "fake/llama",
        "fake/mixtral": "fake/llama",
        "google/*": "vertex/*",  # vertex is not configured: the alias is not shown
        "bedrock/big": "bedrock/arn:aws:bedrock:eu-west-1:1:inference-profile/x",
    }
    async for opened in listing(tmp_path, gateway, LISTED, MODEL_ALIASES=json.dumps(aliases), AWS_REGION="eu-west-1"):
        answer = (await opened.directory.list_models()).as_json()
    assert answer["data"] == [
        {
            "id": "anthropic/*",
            "object": "model",
            "created": 0,
            "owned_by": "fake",
            "resolved_to": "fake/anthropic/*",
            "pattern": True,
        },
        {
            "id": "bedrock-anthropic/*",
            "object": "model",
            "created": 0,
            "owned_by": "bedrock-anthropic",
            "pattern": True,
        },
        {"id": "bedrock/*", "object": "model", "created": 0, "owned_by": "bedrock", "pattern": True},
        {"id": "bedrock/big", "object": "model", "created": 0, "owned_by": "bedrock"},
        {"id": "fake/llama", "object": "model", "created": 1_700_000_000, "owned_by": "fake"},
        {"id": "fake/mixtral", "object": "model", "created": 0, "owned_by": "fake", "resolved_to": "fake/llama"},
        {"id": "openai/fast", "object": "model", "created": 0, "owned_by": "fake", "resolved_to": "fake/llama"},
    ]


async def test_allowed_models_filter_the_list(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    aliases = {"anthropic/*": "fake/anthropic/*", "openai/fast": "fake/llama", "openai/slow": "fake/mixtral"}
    allowed = ["fake/llama", "anthropic/*", "bedrock/anthropic.*"]
    declared = {"bedrock": ["anthropic.claude-x", "meta.llama-y"]}
    async for opened in listing(
        tmp_path,
        gateway,
        LISTED,
        MODEL_ALIASES=json.dumps(aliases),
        ALLOWED_MODELS=json.dumps(allowed),
        DECLARED_MODELS=json.dumps(declared),
        AWS_REGION="eu-west-1",
    ):
        answer = await opened.directory.list_models()
    assert ids(answer) == ["anthropic/*", "bedrock/anthropic.claude-x", "fake/llama", "openai/fast"]


async def test_one_provider_asks_no_other(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    aliases = {"openai/fast": "fake/llama"}
    async for opened in listing(tmp_path, gateway, LISTED, MODEL_ALIASES=json.dumps(aliases), AWS_REGION="eu-west-1"):
        bedrock = await opened.directory.list_models("bedrock")
        assert gateway.requests(opened.script) == []
        fake = await opened.directory.list_models("fake")
    assert ids(bedrock) == ["bedrock/*"]
    assert ids(fake) == ["fake/llama", "fake/mixtral", "openai/fast"]


async def test_nothing_secret_is_shown(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    async for opened in listing(tmp_path, gateway, LISTED):
        shown = json.dumps((await opened.directory.list_models()).as_json())
    for secret in (FAKE_KEY, gateway.base_url, "127.0.0.1", opened.script, "secret-org"):
        assert secret not in shown


async def test_the_success_words(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    many = {"data": [{"id": f"m{index:02d}"} for index in range(25)]}
    async for opened in listing(tmp_path, gateway, many, AWS_REGION="eu-west-1"):
        words = catalog_words(await opened.directory.list_models())
    assert "fake/m19" in words
    assert "fake/m20" not in words
    assert "and 5 more" in words
    assert "bedrock/*" in words
    assert "incomplete" not in words


async def test_the_context_window_comes_from_the_providers_list(tmp_path: Path, gateway: FakeGatewayProcess) -> None:
    async for opened in listing(tmp_path, gateway, LISTED):
        directory = opened.directory
        mixtral = await directory.context_window(directory.resolve("fake/mixtral"))
        llama = await directory.context_window(directory.resolve("fake/llama"))
        unknown = await directory.context_window(directory.resolve("fake/not-listed"))
    assert (mixtral, llama, unknown) == (32000, None, None)
    assert len(gateway.requests(opened.script)) == 1
