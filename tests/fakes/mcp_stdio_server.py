"""A small MCP server over stdio, a real process the stdio tool-server tests run under the supervisor.

    python -m tests.fakes.mcp_stdio_server --starts starts.log [--flood-stderr N]

Each start appends its pid to the `--starts` file. With `--flood-stderr N`, it first writes to stderr one line of
100,000 characters, then the lines `flood line 1` to `flood line N-1`, as fast as the pipe takes them. Its tools:

* ``echo`` (``readOnlyHint: true``): answers the text it is given;
* ``secret_echo``: answers the value of its environment variable ``NOTES_API_KEY`` JSON-escaped, percent-encoded
  and in base64, and writes it to stderr;
* ``crash``: ends the process mid-call (exit status 3), so the call never gets an answer;
* ``hang``: never answers;
* ``huge``: answers a text of 5 MiB, past the stdio cap;
* ``environment``: answers the names of the variables in its environment.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}}
TOOLS = [
    types.Tool(
        name="echo",
        description="Answers the text it is given.",
        input_schema=TEXT,
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(name="secret_echo", description="Echoes its key.", input_schema={"type": "object"}),
    types.Tool(name="crash", description="Ends the process mid-call.", input_schema={"type": "object"}),
    types.Tool(name="hang", description="Never answers.", input_schema={"type": "object"}),
    types.Tool(name="huge", description="Answers 5 MiB.", input_schema={"type": "object"}),
    types.Tool(name="environment", description="Names its variables.", input_schema={"type": "object"}),
]


def build() -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        if params.name == "echo":
            return types.CallToolResult(content=[types.TextContent(text=str(arguments.get("text", "")))])
        if params.name == "secret_echo":
            key = os.environ.get("NOTES_API_KEY", "")
            print(f"the key is {key}", file=sys.stderr, flush=True)
            forms = [json.dumps({"key": key}), quote(key, safe=""), base64.b64encode(key.encode()).decode()]
            return types.CallToolResult(content=[types.TextContent(text=" | ".join(forms))])
        if params.name == "crash":
            os._exit(3)
        if params.name == "hang":
            await anyio.sleep_forever()
        if params.name == "huge":
            return types.CallToolResult(content=[types.TextContent(text="x" * (5 * 1024 * 1024))])
        if params.name == "environment":
            return types.CallToolResult(content=[types.TextContent(text=" ".join(sorted(os.environ)))])
        raise MCPError(code=types.INVALID_PARAMS, message=f"no tool {params.name}")

    return Server("fake-stdio-tools", on_list_tools=list_tools, on_call_tool=call_tool)


async def run() -> None:
    server = build()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A small MCP server over stdio for tests")
    parser.add_argument("--starts", type=Path)
    parser.add_argument("--flood-stderr", type=int, default=0)
    arguments = parser.parse_args(argv)
    if arguments.flood_stderr:
        sys.stderr.write("flood line 0 " + "y" * 100_000 + "\n")
        sys.stderr.writelines(f"flood line {index}\n" for index in range(1, arguments.flood_stderr))
        sys.stderr.flush()
    if arguments.starts is not None:
        with arguments.starts.open("a") as file:
            file.write(f"{os.getpid()}\n")
    anyio.run(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
