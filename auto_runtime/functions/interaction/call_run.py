"""One run of an interaction function that asks a system (`call`, interaction-format §2), in the order of §2.1.

The input checked; `call.with` rendered at the run's moment; the tool offered (names, then the server's list);
`tool_call_started` recorded before the one call is sent; its answer or failure recorded; the value at `read`
read from the answer document and checked against `output.schema`. Every ending of §2.2 is a `Succeeded` or a
`Rejected`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import UTC
from typing import Any

import trio

from auto_runtime.functions.function_type import Rejected, RunEnding, RunRequest, Succeeded
from auto_runtime.functions.interaction.arguments import MAX_ARGUMENTS_BYTES, render_arguments
from auto_runtime.functions.interaction.document import InteractionDocument, resolve_pointer
from auto_runtime.functions.reasoning.endings import CalledTool, after_tools
from auto_runtime.functions.reasoning.json_schemas import is_draft7
from auto_runtime.functions.reasoning.template import STRUCTURE_AMONG_TEXT, RenderProblem, StructureAmongText
from auto_runtime.json_limits import compact_json, depth_of, json_size
from auto_runtime.ledger import PlaybookScope
from auto_runtime.problems import InputIssue, Rejection, conflict, invalid_input
from auto_runtime.schema_issues import check_off_the_loop
from auto_runtime.tools import (
    OfferedTool,
    ToolCallFailed,
    ToolCallResult,
    ToolNotOffered,
    ToolServerFailed,
    ToolServers,
    WantedTool,
)
from auto_runtime.tools.call_facts import answered_data, failed_data, started_data
from auto_runtime.tools.hand_calls import answer_of
from auto_runtime.tools.result_text import error_text, result_text

CALL_SECONDS = 30
MAX_OUTPUT_AND_RECORD = 1_048_576
MAX_DEPTH = 512
RAN_AGAIN = " The tool ran and may have changed something; running the function again calls it again."


def moments(request: RunRequest) -> tuple[str, str]:
    """`today` and `now` of a run: its start, in UTC."""
    started = request.started_at.astimezone(UTC)
    return started.strftime("%Y-%m-%d"), started.strftime("%Y-%m-%dT%H:%M:%S.") + f"{started.microsecond // 1000:03d}Z"


async def checked_input(document: InteractionDocument, value: Any) -> dict[str, Any] | Rejection:
    if not isinstance(value, dict):
        return invalid_input([InputIssue("The input: expected an object.", "/input")])
    schema = document.input_schema
    if schema is not None:
        issues = await check_off_the_loop(schema, value, "/input", draft7=is_draft7(schema))
        if issues:
            return invalid_input(issues)
    return value


def rendered_arguments(written: Any, values: dict[str, Any], what: str) -> dict[str, Any] | Rejection:
    """The arguments, or the rejection of §1.3: the input's fault `invalid_input`, the definition's `unworkable`."""
    try:
        arguments = render_arguments(written, values)
    except RenderProblem as problem:
        return invalid_input(
            [
                InputIssue(
                    f"Line {problem.line}: {what} cannot be rendered with this input: {problem.words}", problem.pointer
                )
            ]
        )
    except StructureAmongText:
        return conflict(f"{what} render an object or array among text: {STRUCTURE_AMONG_TEXT}.", kind="unworkable")
    size = json_size(arguments)
    if size > MAX_ARGUMENTS_BYTES:
        return conflict(
            f"{what} take {size:,} bytes as JSON, more than the {MAX_ARGUMENTS_BYTES:,} a call may send.",
            kind="unworkable",
        )
    return dict(arguments)


def not_offered(refusal: ToolNotOffered) -> Rejection:
    return Rejection("unavailable", refusal.detail, kind="tool_not_offered", because=refusal.because)


def no_tool_servers() -> Rejection:
    return Rejection(
        "unavailable",
        "This server has no tool servers, so the tool the function names is not offered.",
        kind="tool_not_offered",
        because="tool_server_not_configured",
    )


async def tools_not_offered(
    tools: ToolServers | None, scope: PlaybookScope, server: str, names: Iterable[str]
) -> Rejection | None:
    """A request's check before it is recorded (interaction-format §3.1 step 2): `server` serves the playbook and
    its `allowed` names every tool of `names`, checked by name without connecting (a connection must be ready);
    else the `unavailable`, `tool_not_offered` rejection, without Retry-After."""
    if tools is None:
        return no_tool_servers()
    try:
        await tools.named(scope.org, scope.playbook, [WantedTool(server, name) for name in sorted(set(names))])
    except ToolNotOffered as refusal:
        return not_offered(refusal)
    return None


def _unworkable(detail: str, tool: CalledTool, errors: tuple[InputIssue, ...] = ()) -> Rejection:
    if not tool.read_only:
        detail += RAN_AGAIN
    return Rejection("conflict", detail, kind="unworkable", errors=errors)


async def run_call(document: InteractionDocument, request: RunRequest, tools: ToolServers | None) -> RunEnding:
    call = document.call
    assert call is not None
    value = await checked_input(document, request.input)
    if isinstance(value, Rejection):
        return Rejected(value)
    today, now = moments(request)
    arguments = rendered_arguments(call.place.arguments, {"input": value, "today": today, "now": now}, "call.with")
    if isinstance(arguments, Rejection):
        return Rejected(arguments)
    if tools is None:
        return Rejected(no_tool_servers())
    try:
        offered = await tools.offered(request.org, request.playbook, [WantedTool(call.place.server, call.place.tool)])
    except ToolNotOffered as refusal:
        return Rejected(not_offered(refusal))
    except ToolServerFailed as failure:
        return Rejected(
            Rejection(
                "unavailable",
                failure.detail,
                kind="tool_server_failed",
                because=failure.because,
                retry_after=failure.retry_after or 5,
            )
        )
    tool = offered[0]
    called = CalledTool(tool.server, tool.tool, tool.read_only)
    secrets = tools.secrets()

    def scrub(text: str) -> str:
        for secret in secrets:
            if len(secret) >= 8:
                text = text.replace(secret, "[redacted]")
        return text

    await request.record("tool_call_started", started_data(1, request.run_id, tool, scrub(compact_json(arguments))))
    began = trio.current_time()
    try:
        with trio.fail_after(CALL_SECONDS):
            result = await tools.call(request.org, request.playbook, tool, arguments, request.run_id)
    except trio.TooSlowError:
        return await _failed(
            request, ToolCallFailed("timed_out", f"No answer within {CALL_SECONDS} seconds."), called, scrub, began
        )
    except ToolCallFailed as failure:
        return await _failed(request, failure, called, scrub, began)
    duration_ms = int((trio.current_time() - began) * 1000)
    return await _answered(document, request, tool, result, called, scrub, duration_ms)


async def _failed(
    request: RunRequest, failure: ToolCallFailed, called: CalledTool, scrub: Callable[[str], str], began: float
) -> RunEnding:
    duration = int((trio.current_time() - began) * 1000)
    await request.record("tool_call_failed", failed_data(1, failure, scrub(failure.detail), duration))
    if failure.because == "arguments_refused":
        detail = f"The tool {called.tool} of {called.server} refused the arguments: {error_text(scrub(failure.detail))}"
        return Rejected(_unworkable(detail, called))
    ending = after_tools(
        "server_failed", f"The tool {called.tool} of {called.server} failed: {scrub(failure.detail)}", [called]
    )
    retry = failure.extra.get("retry_after_ms")
    return Rejected(ending, {"retry_after_ms": retry} if isinstance(retry, int) else None)


async def _answered(
    document: InteractionDocument,
    request: RunRequest,
    tool: OfferedTool,
    result: ToolCallResult,
    called: CalledTool,
    scrub: Callable[[str], str],
    duration: int,
) -> RunEnding:
    call = document.call
    assert call is not None
    text = scrub(result_text(result))
    await request.record("tool_call_answered", answered_data(1, tool, result, text, duration))
    if result.is_error:
        words = error_text(text)
        return Rejected(
            after_tools("tool_error", f"The tool {tool.tool} of {tool.server} answered an error: {words}", [called])
        )
    has_answer, answer = answer_of(result)
    if not has_answer:
        return Rejected(_unworkable("The tool answered neither structured content nor text.", called))
    output = answer
    if call.read is not None:
        found, output = resolve_pointer(answer, call.read)
        if not found:
            return Rejected(_unworkable(f"The tool's answer has nothing at {call.read}.", called))
    record: dict[str, Any] = {"server": tool.server, "tool": tool.tool}
    if call.read is not None:
        record["read"] = call.read
    if depth_of(output) > MAX_DEPTH:
        return Rejected(_unworkable(f"The value nests deeper than {MAX_DEPTH} levels.", called))
    size = json_size(output) + json_size(record)
    if size > MAX_OUTPUT_AND_RECORD:
        return Rejected(
            _unworkable(
                f"The value and the run's record take {size:,} bytes as JSON, more than the "
                f"{MAX_OUTPUT_AND_RECORD:,} a run may record.",
                called,
            )
        )
    schema = document.output_schema or {}
    issues = await check_off_the_loop(schema, output, "/output", draft7=is_draft7(schema))
    if issues:
        shown = " ".join(issue.detail for issue in issues[:5])
        return Rejected(_unworkable(f"The value does not match output.schema: {shown}", called, tuple(issues)))
    return Succeeded(json.loads(json.dumps(output)), record)
