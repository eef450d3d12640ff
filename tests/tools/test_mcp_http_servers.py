"""An `mcp` tool server over Streamable HTTP: one kept session, reconnected after the server comes back; its
header or minted token sent on every request; refusals and secrets as the seeds say. Real processes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import trio

from auto_runtime.settings import ToolServer
from auto_runtime.supervision import NO_BACKOFF
from auto_runtime.tools import OfferedTool, ToolCallFailed, ToolNotOffered, ToolServerFailed, WantedTool
from auto_runtime.tools.hosts import HostPolicy, host_refusal
from auto_runtime.tools.tool_server_set import ToolServerSet
from tests.fakes.gateway_process import HttpFakeProcess, McpToolServerProcess, start_mcp_tool_server, start_oauth_server
from tests.fakes.oauth_server import CLIENT_ID, CLIENT_SECRET
from tests.tools.conftest import AUDIENCE, SIGNING_KEY

KEY = "helpdesk-key-0123456789"
GET_CUSTOMER = OfferedTool("helpdesk", "get_customer", "", {}, True)


def helpdesk(url: str, **fields: object) -> ToolServer:
    return ToolServer.model_validate({"url": url, "org": "*", **fields})


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpToolServerProcess]:
    folder = Path(tmp_path_factory.mktemp("mcp-guarded"))
    server = start_mcp_tool_server(folder, "--require-header", f"Authorization=Bearer {KEY}")
    yield server
    server.stop()


@pytest.fixture
async def tools(guarded: McpToolServerProcess) -> AsyncIterator[ToolServerSet]:
    entry = helpdesk(guarded.url, headers={"Authorization": f"Bearer {KEY}"}, request_id="fake/request_id")
    servers = ToolServerSet({"helpdesk": entry}, secrets={f"Bearer {KEY}", KEY}, reconnect_backoff=NO_BACKOFF)
    async with trio.open_nursery() as nursery:
        await nursery.start(servers.run)
        yield servers
        await servers.aclose()


async def test_one_kept_session_serves_lists_and_calls(tools: ToolServerSet, guarded: McpToolServerProcess) -> None:
    offered = await tools.offered("acme", "sales", [WantedTool("helpdesk", "get_customer")])
    assert [(item.tool, item.read_only) for item in offered] == [("get_customer", True)]
    for number in range(3):
        result = await tools.call("acme", "sales", GET_CUSTOMER, {"id": f"c-{number}"}, "run-1")
        assert result.server_request_id == f"req-c-{number}"
        assert isinstance(result.jsonrpc_id, int)
    assert tools.clients["helpdesk"].connection.connects == 1  # type: ignore[union-attr]
    assert [call["meta"] for call in guarded.calls()][-1] == {"auto.on/run_id": "run-1"}


async def test_a_secret_the_server_echoes_is_scrubbed(tools: ToolServerSet) -> None:
    result = await tools.call("acme", "sales", GET_CUSTOMER, {"id": KEY}, "run-1")
    assert result.blocks[0].text == '{"id": "[redacted]", "plan": "pro"}'
    assert result.server_request_id == "req-[redacted]"


async def test_a_header_the_server_refuses_is_key_refused(guarded: McpToolServerProcess) -> None:
    servers = ToolServerSet({"helpdesk": helpdesk(guarded.url, headers={"Authorization": "Bearer wrong-key-0123"})})
    with pytest.raises(ToolServerFailed) as failed:
        await servers.offered("acme", "sales", [WantedTool("helpdesk", "*")])
    assert failed.value.because == "key_refused"
    assert "wrong-key" not in failed.value.detail
    await servers.aclose()


async def test_a_session_lost_when_the_server_goes_away_is_opened_again_when_it_is_back(tmp_path: Path) -> None:
    first = start_mcp_tool_server(tmp_path)
    port = urlsplit(first.url).port
    assert port is not None
    servers = ToolServerSet({"helpdesk": helpdesk(first.url)}, secrets=set(), reconnect_backoff=NO_BACKOFF)
    async with trio.open_nursery() as nursery:
        await nursery.start(servers.run)
        await servers.call("acme", "sales", GET_CUSTOMER, {"id": "c-1"}, "run-1")
        first.stop()
        with pytest.raises(ToolCallFailed) as failed:
            await servers.call("acme", "sales", GET_CUSTOMER, {"id": "c-2"}, "run-1")
        assert failed.value.because == "server_failure"
        second = start_mcp_tool_server(tmp_path, port=port)
        try:
            result = await servers.call("acme", "sales", GET_CUSTOMER, {"id": "c-3"}, "run-1")
            assert result.blocks[0].text == '{"id": "c-3", "plan": "pro"}'
            assert servers.clients["helpdesk"].connection.connects == 2  # type: ignore[union-attr]
        finally:
            await servers.aclose()
            second.stop()


async def test_a_server_on_a_host_not_allowed_is_never_reached(guarded: McpToolServerProcess) -> None:
    """A request to a host the rules do not allow makes the set's connection not allowed, in the rule's words."""
    servers = ToolServerSet({"helpdesk": helpdesk(guarded.url)}, hosts=HostPolicy.of(["*.example.com"]))
    before = len(guarded.calls())
    with pytest.raises(ToolNotOffered) as refused:
        await servers.offered("acme", "sales", [WantedTool("helpdesk", "*")])
    assert (refused.value.because, refused.value.detail) == ("connection_not_allowed", host_refusal("127.0.0.1"))
    assert servers.refused_host == "127.0.0.1"
    assert len(guarded.calls()) == before
    await servers.aclose()


async def test_an_authorization_server_whose_token_endpoint_is_on_a_host_not_allowed_is_not_asked(
    tmp_path: Path,
) -> None:
    """The MCP server and its authorization server are on an allowed host, the token endpoint the metadata names
    is not: listing stops before the token request, `connection_not_allowed`, and nothing is minted."""
    elsewhere = start_oauth_server(SIGNING_KEY, AUDIENCE, mode="token_elsewhere")
    options = ["--issuer", elsewhere.origin, "--signing-key", SIGNING_KEY, "--audience", AUDIENCE]
    protected = start_mcp_tool_server(tmp_path, *options)
    auth = {"issuer": elsewhere.origin, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET}
    servers = ToolServerSet(
        {"helpdesk": helpdesk(protected.url, auth=auth)}, secrets=set(), hosts=HostPolicy.of(["127.0.0.1"])
    )
    try:
        with pytest.raises(ToolNotOffered) as refused:
            await servers.offered("acme", "sales", [WantedTool("helpdesk", "get_customer")])
        assert (refused.value.because, refused.value.detail) == ("connection_not_allowed", host_refusal("localhost"))
        assert elsewhere.get("/_fake/minted") == {"minted": 0}
    finally:
        await servers.aclose()
        protected.stop()
        elsewhere.stop()


async def test_an_mcp_server_s_authorization_server_is_found_through_its_protected_resource_metadata(
    tmp_path: Path, oauth_server: HttpFakeProcess
) -> None:
    options = ["--issuer", oauth_server.origin, "--signing-key", SIGNING_KEY, "--audience", AUDIENCE]
    protected = start_mcp_tool_server(tmp_path, *options)
    auth = {"issuer": oauth_server.origin, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET}
    servers = ToolServerSet({"helpdesk": helpdesk(protected.url, auth=auth)}, secrets=set())
    try:
        offered = await servers.offered("acme", "sales", [WantedTool("helpdesk", "get_customer")])
        result = await servers.call("acme", "sales", offered[0], {"id": "c-1"}, "run-1")
        assert result.blocks[0].text == '{"id": "c-1", "plan": "pro"}'
        assert servers.clients["helpdesk"].credentials.mints == 1  # type: ignore[union-attr]
        assert CLIENT_SECRET in servers.secrets() and len(servers.secrets()) == 2
    finally:
        await servers.aclose()
        protected.stop()
