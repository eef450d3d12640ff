"""Tool-server benchmark: a call of a trivial tool over each kind of server through `ToolServerSet`, beside a
direct call of the same fake with the same client library, in the same run.

Run: `python -m benchmarks.tools` from the repository root (about 30 s). It starts the fakes of the tests as
real processes on loopback: the MCP server over Streamable HTTP (`get_customer`), the MCP server over stdio
(`echo`) and the OpenAPI service (`plainText`). For each kind, each round makes `CALLS` calls through the set
(its kept session or pooled client, scrubbing, tracking) and `CALLS` calls directly (the official `mcp` client
over one session it keeps open; `httpx2` over one pooled client), alternating; it prints the median time per
call of each and the median of the per-round ratios (set / direct). It asserts nothing.
"""

from __future__ import annotations

import logging
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from tempfile import TemporaryDirectory

import httpx2
import trio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from auto_runtime.settings import ToolServer
from auto_runtime.tools import OfferedTool
from auto_runtime.tools.tool_server_set import ToolServerSet
from tests.fakes.gateway_process import start_mcp_tool_server, start_openapi_service

ROOT = Path(__file__).resolve().parents[1]

ROUNDS = 7
CALLS = 40
STDIO_FAKE = ROOT / "tests" / "fakes" / "mcp_stdio_server.py"
KEY = "benchmark-key-0123456789"

Call = Callable[[], Awaitable[object]]


async def per_call(call: Call) -> float:
    started = time.perf_counter()
    for _ in range(CALLS):
        await call()
    return (time.perf_counter() - started) / CALLS


async def compare(kind: str, ours: Call, direct: Call) -> None:
    await ours()
    await direct()
    ours_times: list[float] = []
    direct_times: list[float] = []
    ratios: list[float] = []
    for _ in range(ROUNDS):
        mine = await per_call(ours)
        theirs = await per_call(direct)
        ours_times.append(mine)
        direct_times.append(theirs)
        ratios.append(mine / theirs)
    print(
        f"{kind:<8} set {statistics.median(ours_times) * 1e3:7.3f} ms/call   "
        f"direct {statistics.median(direct_times) * 1e3:7.3f} ms/call   ratio {statistics.median(ratios):5.2f}"
    )


async def main() -> None:
    logging.getLogger("auto_runtime.tools").setLevel(logging.ERROR)  # the document's left-out operations
    with TemporaryDirectory() as folder:
        http_mcp = start_mcp_tool_server(Path(folder))
        service = start_openapi_service("benchmark-signing-key-0123456789", "benchmark")
        try:
            entries = {
                "helpdesk": ToolServer.model_validate({"url": http_mcp.url, "org": "*"}),
                "notes": ToolServer.model_validate(
                    {"command": sys.executable, "args": [str(STDIO_FAKE)], "env": {"NOTES_API_KEY": KEY}, "org": "*"}
                ),
                "billing": ToolServer.model_validate(
                    {"document": f"{service.origin}/openapi.json", "org": "*", "security": {"apiKeyAuth": KEY}}
                ),
            }
            tools = ToolServerSet(entries, secrets={KEY})
            async with trio.open_nursery() as nursery:
                await nursery.start(tools.run)

                def through_set(server: str, tool: str, arguments: dict[str, str]) -> Call:
                    offered = OfferedTool(server, tool, "", {}, True)
                    return lambda: tools.call("acme", "sales", offered, arguments, "benchmark-run")

                async with Client(http_mcp.url, mode="legacy", cache=None) as direct_http:
                    await compare(
                        "mcp",
                        through_set("helpdesk", "get_customer", {"id": "c-1"}),
                        lambda: direct_http.call_tool("get_customer", {"id": "c-1"}),
                    )
                parameters = StdioServerParameters(command=sys.executable, args=[str(STDIO_FAKE)])
                async with Client(parameters, mode="legacy", cache=None) as direct_stdio:
                    await compare(
                        "stdio",
                        through_set("notes", "echo", {"text": "hello"}),
                        lambda: direct_stdio.call_tool("echo", {"text": "hello"}),
                    )
                async with httpx2.AsyncClient() as direct_api:
                    await compare(
                        "openapi",
                        through_set("billing", "plainText", {}),
                        lambda: direct_api.get(f"{service.origin}/v2/text"),
                    )
                await tools.aclose()
        finally:
            http_mcp.stop()
            service.stop()


if __name__ == "__main__":
    trio.run(main)
