"""OAuth client credentials: tokens minted from an auth block, cached until expiry, renewed, scrubbed; and
authorization servers that misbehave (slow, wrong audience, a redirect, another issuer), real processes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from auto_runtime.settings import OAuthClient, ToolServer
from auto_runtime.tools import OfferedTool, ToolCallFailed
from auto_runtime.tools.hosts import HostPolicy, host_refusal
from auto_runtime.tools.kinds import Limits
from auto_runtime.tools.mcp_remote import http_client
from auto_runtime.tools.oauth import RENEW_BEFORE_SECONDS, ClientCredentials
from auto_runtime.tools.scrubbing import SecretSet
from auto_runtime.tools.tool_server_set import ToolServerSet
from tests.fakes.gateway_process import HttpFakeProcess, start_oauth_server
from tests.fakes.oauth_server import CLIENT_ID, CLIENT_SECRET
from tests.tools.conftest import AUDIENCE, SIGNING_KEY

REPORTS = OfferedTool("billing", "listReports", "", {}, True)


def auth(issuer: str) -> dict[str, Any]:
    return {"issuer": issuer, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "scope": "reports"}


def billing(service: HttpFakeProcess, issuer: str) -> ToolServer:
    return ToolServer.model_validate(
        {"document": f"{service.origin}/openapi.json", "auth": auth(issuer), "org": "acme", "allowed": ["listReports"]}
    )


def minted(server: HttpFakeProcess) -> int:
    count: int = server.get("/_fake/minted")["minted"]
    return count


@pytest.fixture(scope="module")
def misbehaving() -> Iterator[dict[str, HttpFakeProcess]]:
    servers = {
        mode: start_oauth_server(SIGNING_KEY, AUDIENCE, mode=mode, redirect_to="http://elsewhere.example/token")
        for mode in ("slow", "wrong_audience", "redirect", "wrong_issuer")
    }
    yield servers
    for server in servers.values():
        server.stop()


async def test_a_token_is_minted_once_sent_as_a_bearer_reused_and_scrubbed(
    openapi_service: HttpFakeProcess, oauth_server: HttpFakeProcess
) -> None:
    tools = ToolServerSet({"billing": billing(openapi_service, oauth_server.origin)}, secrets={CLIENT_SECRET})
    await tools.prepare()
    before = minted(oauth_server)
    first = await tools.call("acme", "sales", REPORTS, {}, "run-1")
    second = await tools.call("acme", "sales", REPORTS, {}, "run-2")
    assert minted(oauth_server) == before + 1
    assert first.structured["for"] == CLIENT_ID and second.structured["for"] == CLIENT_ID
    assert first.structured["token"] == "[redacted]"
    assert len(tools.secrets()) == 2  # the client secret and the minted token
    await tools.aclose()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_tokens_are_renewed_before_they_expire_and_the_window_keeps_the_one_before(
    oauth_server: HttpFakeProcess,
) -> None:
    clock = Clock()
    secrets = SecretSet()
    async with http_client(HostPolicy.everywhere()) as http:
        source = ClientCredentials(
            "billing",
            OAuthClient.model_validate(auth(oauth_server.origin)),
            http,
            secrets,
            resource_url=None,
            limit_seconds=10,
            clock=clock,
        )
        first = await source.token()
        assert await source.token() == first and source.mints == 1
        clock.now += 3600 - RENEW_BEFORE_SECONDS - 1
        assert await source.token() == first
        clock.now += 2
        second = await source.token()
        assert second != first and source.mints == 2
        assert {first, second} <= secrets.values()
        third = await source.renew(second)  # the server answered 401 to the second
        assert third not in (first, second)
        assert first not in secrets.values() and {second, third} <= secrets.values()
        assert await source.renew(second) == third  # a caller that saw the same 401 reuses the new one


async def test_a_token_the_api_refuses_is_minted_once_more_then_the_call_fails(
    openapi_service: HttpFakeProcess, misbehaving: dict[str, HttpFakeProcess]
) -> None:
    server = misbehaving["wrong_audience"]
    tools = ToolServerSet({"billing": billing(openapi_service, server.origin)}, secrets={CLIENT_SECRET})
    await tools.prepare()
    before = minted(server)
    with pytest.raises(ToolCallFailed) as failed:
        await tools.call("acme", "sales", REPORTS, {}, "run-1")
    assert failed.value.because == "server_failure" and "HTTP 401" in failed.value.detail
    assert minted(server) == before + 2
    await tools.aclose()


async def test_a_slow_authorization_server_is_cut_at_the_limit(
    openapi_service: HttpFakeProcess, misbehaving: dict[str, HttpFakeProcess]
) -> None:
    tools = ToolServerSet(
        {"billing": billing(openapi_service, misbehaving["slow"].origin)},
        secrets={CLIENT_SECRET},
        limits=Limits(token=0.5),
    )
    await tools.prepare()
    with pytest.raises(ToolCallFailed) as failed:
        await tools.call("acme", "sales", REPORTS, {}, "run-1")
    assert failed.value.because == "server_failure" and "did not answer in time" in failed.value.detail
    await tools.aclose()


async def test_a_token_endpoint_that_redirects_is_not_followed(
    openapi_service: HttpFakeProcess, misbehaving: dict[str, HttpFakeProcess]
) -> None:
    tools = ToolServerSet({"billing": billing(openapi_service, misbehaving["redirect"].origin)}, secrets=set())
    await tools.prepare()
    with pytest.raises(ToolCallFailed) as failed:
        await tools.call("acme", "sales", REPORTS, {}, "run-1")
    assert "answered a redirect, not followed" in failed.value.detail
    await tools.aclose()


async def test_credentials_go_only_to_an_authorization_server_whose_metadata_names_the_issuer(
    openapi_service: HttpFakeProcess, misbehaving: dict[str, HttpFakeProcess]
) -> None:
    server = misbehaving["wrong_issuer"]
    tools = ToolServerSet({"billing": billing(openapi_service, server.origin)}, secrets=set())
    await tools.prepare()
    with pytest.raises(ToolCallFailed) as failed:
        await tools.call("acme", "sales", REPORTS, {}, "run-1")
    assert "names another issuer, so its client credentials are not sent" in failed.value.detail
    assert minted(server) == 0
    await tools.aclose()


async def test_an_authorization_server_on_a_host_not_allowed_is_never_asked(
    openapi_service: HttpFakeProcess, oauth_server: HttpFakeProcess
) -> None:
    issuer = oauth_server.origin.replace("127.0.0.1", "localhost")
    tools = ToolServerSet(
        {"billing": billing(openapi_service, issuer)}, secrets=set(), hosts=HostPolicy.of(["127.0.0.1"])
    )
    await tools.prepare()
    before = minted(oauth_server)
    with pytest.raises(ToolCallFailed) as failed:
        await tools.call("acme", "sales", REPORTS, {}, "run-1")
    assert (failed.value.because, failed.value.detail) == ("server_failure", host_refusal("localhost"))
    assert tools.refused_host == "localhost"
    assert minted(oauth_server) == before
    await tools.aclose()


async def test_a_private_key_signs_a_client_assertion_instead_of_a_secret(
    tmp_path: Path, openapi_service: HttpFakeProcess
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
    public = tmp_path / "client.pub"
    public.write_bytes(key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    server = start_oauth_server(SIGNING_KEY, AUDIENCE, client_public_key=public)
    try:
        signed = {"issuer": server.origin, "client_id": CLIENT_ID, "private_key": private, "algorithm": "ES256"}
        entry = ToolServer.model_validate(
            {"document": f"{openapi_service.origin}/openapi.json", "auth": signed, "org": "acme"}
        )
        tools = ToolServerSet({"billing": entry}, secrets=set())
        await tools.prepare()
        result = await tools.call("acme", "sales", REPORTS, {}, "run-1")
        assert result.structured["for"] == CLIENT_ID and result.structured["token"] == "[redacted]"
        assert private in tools.secrets()
        await tools.aclose()
    finally:
        server.stop()
