"""An `openapi` tool server: a document read at start becomes tools; calls go to a real service on loopback."""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio

from auto_runtime.settings import ToolServer
from auto_runtime.tools import OfferedTool, ToolCallFailed, WantedTool
from auto_runtime.tools.kinds import Limits
from auto_runtime.tools.tool_server_set import ToolServerSet
from tests.fakes.gateway_process import HttpFakeProcess
from tests.fakes.openapi_service import KEY, PASSWORD, TOKEN

SECURITY = {"apiKeyAuth": KEY, "apiKeyQuery": KEY, "bearerAuth": TOKEN, "basicAuth": f"ada:{PASSWORD}"}
SECRETS = {KEY, TOKEN, f"ada:{PASSWORD}", PASSWORD}


def billing(service: HttpFakeProcess, **fields: Any) -> ToolServer:
    return ToolServer.model_validate(
        {
            "document": f"{service.origin}/openapi.json",
            "security": SECURITY,
            "headers": {"X-Tenant": "acme-eu"},
            "query_params": {"region": "eu"},
            "org": "acme",
            **fields,
        }
    )


def tool(name: str) -> OfferedTool:
    return OfferedTool("billing", name, "", {}, False)


@pytest.fixture
async def tools(openapi_service: HttpFakeProcess) -> AsyncIterator[ToolServerSet]:
    servers = ToolServerSet(
        {"billing": billing(openapi_service, request_id="x-request-id")}, secrets=SECRETS, limits=Limits(call=2.0)
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(servers.run)
        yield servers
        await servers.aclose()


def last_request(service: HttpFakeProcess) -> dict[str, Any]:
    seen: list[dict[str, Any]] = service.get("/_fake/requests")
    return seen[-1]


async def test_operations_become_tools_with_names_descriptions_inputs_and_hints(
    tools: ToolServerSet, caplog: pytest.LogCaptureFixture
) -> None:
    listed = {tool.name: tool for tool in await tools.list_tools("billing")}
    assert "delete_invoices_id" in listed  # no operationId: the method and the path
    assert listed["getInvoice"].description == "Reads one invoice.\n\nBy its id."
    assert listed["getInvoice"].annotations == {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": True}
    assert listed["delete_invoices_id"].annotations == {
        "destructiveHint": True,
        "idempotentHint": True,
        "openWorldHint": True,
    }
    assert listed["createInvoice"].annotations == {"openWorldHint": True}
    schema = listed["createInvoice"].input_schema
    assert schema["required"] == ["body"] and schema["properties"]["body"] == {"$ref": "#/$defs/Invoice"}
    assert set(schema["$defs"]) == {"Invoice", "Line"}
    assert schema["$defs"]["Invoice"]["properties"]["lines"]["items"] == {"$ref": "#/$defs/Line"}
    assert listed["getInvoice"].input_schema["required"] == ["id"]
    for left_out in ("needsHeader", "upload", "filter", "tracing", "listReports"):
        assert left_out not in listed


async def test_left_out_operations_are_warned_of_at_start(
    openapi_service: HttpFakeProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="auto_runtime.tools")
    await ToolServerSet({"billing": billing(openapi_service)}, secrets=SECRETS).prepare()
    words = "\n".join(record.getMessage() for record in caplog.records)
    assert "tool_servers.billing: GET /needs-header is not offered as a tool: it needs a header parameter" in words
    assert "POST /upload is not offered as a tool: it takes a body that is not JSON" in words
    assert "GET /filter is not offered as a tool: it takes an object in its query" in words
    assert "TRACE /trace is not offered" in words
    assert "listReports is not offered as a tool: the entry gives none of the schemes it needs (oauth)" in words
    assert KEY not in words


async def test_each_scheme_places_its_credential_and_only_the_first_alternative_is_sent(
    tools: ToolServerSet, openapi_service: HttpFakeProcess
) -> None:
    listed = await tools.call("acme", "sales", tool("listInvoices"), {"status": "open", "tag": ["a", "b"]}, "r")
    assert listed.structured["invoices"] == [{"id": "inv-1"}]
    sent = last_request(openapi_service)
    assert sent["path"] == "/v2/invoices"
    assert sent["query"] == "region=eu&status=open&tag=a&tag=b"
    assert sent["headers"]["x-api-key"] == KEY and sent["headers"]["x-tenant"] == "acme-eu"

    await tools.call("acme", "sales", tool("getInvoice"), {"id": "inv 7"}, "r")
    sent = last_request(openapi_service)
    assert sent["path"] == "/v2/invoices/inv%207" or sent["path"] == "/v2/invoices/inv 7"
    assert f"api_key={KEY}" in sent["query"] and "x-api-key" not in sent["headers"]

    created = await tools.call("acme", "sales", tool("createInvoice"), {"body": {"id": "inv-9"}}, "r")
    assert created.structured == {"created": {"id": "inv-9"}}
    sent = last_request(openapi_service)
    assert sent["headers"]["authorization"] == f"Bearer {TOKEN}"
    assert sent["headers"]["content-type"] == "application/json"

    me = await tools.call("acme", "sales", tool("whoAmI"), {}, "r")
    assert me.structured == {"user": "ada"}
    basic = base64.b64encode(f"ada:{PASSWORD}".encode()).decode()
    assert last_request(openapi_service)["headers"]["authorization"] == f"Basic {basic}"

    await tools.call("acme", "sales", tool("plainText"), {}, "r")
    sent = last_request(openapi_service)
    assert "authorization" not in sent["headers"] and "x-api-key" not in sent["headers"]


@pytest.mark.parametrize("value", ["", "a/b", ".", ".."])
async def test_a_path_argument_that_would_leave_the_path_is_refused_and_nothing_is_sent(
    tools: ToolServerSet, openapi_service: HttpFakeProcess, value: str
) -> None:
    before = len(openapi_service.get("/_fake/requests"))
    with pytest.raises(ToolCallFailed) as failed:
        await tools.call("acme", "sales", tool("getInvoice"), {"id": value}, "r")
    assert failed.value.because == "arguments_refused"
    assert len(openapi_service.get("/_fake/requests")) == before


async def test_responses_are_read_as_an_mcp_servers_results(tools: ToolServerSet) -> None:
    text = await tools.call("acme", "sales", tool("plainText"), {}, "r")
    assert [block.text for block in text.blocks] == ["plain words"] and text.structured is None
    picture = await tools.call("acme", "sales", tool("picture"), {}, "r")
    assert picture.blocks[0].text is None and picture.blocks[0].mime_type == "image/png"
    moved = await tools.call("acme", "sales", tool("moved"), {}, "r")
    assert moved.is_error and "HTTP 302" in (moved.blocks[0].text or "")
    missing = await tools.call("acme", "sales", tool("missing"), {}, "r")
    assert missing.is_error and missing.blocks[0].text == 'HTTP 404: {"error":"no such thing"}'
    busy = await tools.call("acme", "sales", tool("busy"), {}, "r")
    assert busy.structured == {"busy": False}
    for name, because in (("failing", "server_failure"), ("swamped", "server_failure"), ("slow", "timed_out")):
        with pytest.raises(ToolCallFailed) as failed:
            await tools.call("acme", "sales", tool(name), {}, "r")
        assert failed.value.because == because, name
        if name == "swamped":
            assert failed.value.extra == {"retry_after_ms": 60_000}


async def test_a_key_the_api_refuses_is_a_server_failure(openapi_service: HttpFakeProcess) -> None:
    wrong = {**SECURITY, "apiKeyAuth": "not-the-key-0123456789"}
    servers = ToolServerSet({"billing": billing(openapi_service, security=wrong)}, secrets=set())
    await servers.prepare()
    with pytest.raises(ToolCallFailed) as failed:
        await servers.call("acme", "sales", tool("listInvoices"), {}, "r")
    assert failed.value.because == "server_failure" and "HTTP 401" in failed.value.detail
    await servers.aclose()


async def test_the_key_an_api_echoes_is_scrubbed_in_every_encoding(tools: ToolServerSet) -> None:
    result = await tools.call("acme", "sales", tool("echoKey"), {}, "r")
    assert result.server_request_id == "req-42"
    assert result.structured == {
        "received": "[redacted]",
        "forms": {"json": '{"k": "[redacted]"}', "percent": "[redacted]", "base64": "[redacted]"},
    }
    assert KEY not in (result.blocks[0].text or "")


async def test_listing_asks_the_api_nothing_and_the_reasoning_interface_offers_the_allowed_tools(
    openapi_service: HttpFakeProcess,
) -> None:
    servers = ToolServerSet(
        {"billing": billing(openapi_service, allowed=["getInvoice", "listInvoices"])}, secrets=SECRETS
    )
    await servers.prepare()
    before = len(openapi_service.get("/_fake/requests"))
    offered = await servers.offered("acme", "sales", [WantedTool("billing", "*")])
    assert [(item.tool, item.read_only) for item in offered] == [("listInvoices", True), ("getInvoice", True)]
    assert len(openapi_service.get("/_fake/requests")) == before
    await servers.aclose()
