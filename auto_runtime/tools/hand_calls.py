"""`HandCalls`: one call of `execute`, recorded as a run's tool calls are (HTTP page "Calling a tool by hand").

Each call is recorded on a stream of its own, `playbook/<org>/<playbook>/tool-calls/<call id>`, with no run, so
`list_runs` and `get_run_history` never show it while `list_playbook_events` does: `tool_call_started` before it
is sent, then `tool_call_answered` or `tool_call_failed`. The facts have the shape a reasoning run's have
(`functions/reasoning/tool_loop.py`): sizes of the scrubbed texts the playbook keeps, their SHA-256 digests and
the texts themselves only when the entry keeps content (`record_content`), `content_kept`, `read_only`, the
server's JSON-RPC id and its own request id. The caller is the one who acted (`by`).

A caller that disconnects during the call cancels it: the start stays without an answer, as the seeds say, since
the call may have had its effect. The call id is passed on to an MCP server in the call's `_meta`, where a run
passes its run id.

Concurrency rules: runs on the Trio thread; each call appends to its own stream, so calls never contend.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import trio

from auto_runtime.clock_text import iso_utc
from auto_runtime.json_limits import compact_json, json_size
from auto_runtime.ledger import Ledger, NewRecord, PlaybookScope, StreamName, StreamWrite, uuid7
from auto_runtime.server_clock import ServerClock
from auto_runtime.tools.call_facts import answered_data, failed_data, started_data
from auto_runtime.tools.result_text import error_text, result_text
from auto_runtime.tools.servers import OfferedTool, ToolCallFailed, ToolCallResult
from auto_runtime.tools.tool_server_set import ToolServerSet

TOOL_CALLS = "tool-calls"
MAX_SHOWN_BYTES = 64 * 1024
FAILURE_WORDS = {
    "arguments_refused": "The tool server refused the arguments",
    "server_failure": "The tool server failed",
    "timed_out": "The tool did not answer within 30 seconds",
    "cancelled": "The call was cancelled",
    "too_large": "The tool's result was larger than one call may return",
}
OUTCOME_OF_FAILURE = {
    "arguments_refused": "tool_error",
    "server_failure": "server_failure",
    "timed_out": "timed_out",
    "too_large": "too_large",
    "cancelled": "server_failure",
}


def call_stream(scope: PlaybookScope, call_id: str) -> StreamName:
    return scope.stream(TOOL_CALLS, call_id)


def _cut(text: str, limit: int) -> tuple[str, bool]:
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text, False
    return encoded[:limit].decode("utf-8", "ignore"), True


def shown_text(text: str) -> str:
    """What a run's model would see, cut at 64 KiB with a note saying how much was shown."""
    cut, was_cut = _cut(text, MAX_SHOWN_BYTES)
    if not was_cut:
        return text
    size = len(text.encode("utf-8"))
    return cut + f"\n[Only the first {len(cut.encode('utf-8')):,} of {size:,} bytes of this result are shown.]"


def answer_of(result: ToolCallResult) -> tuple[bool, Any]:
    """The document a call's `read` points into: the structured content, else the first text block parsed as
    JSON, else that text; (False, None) when the tool returned neither."""
    if result.structured is not None:
        return True, result.structured
    first = next((block for block in result.blocks if block.kind == "text"), None)
    if first is None or first.text is None:
        return False, None
    try:
        return True, json.loads(first.text)
    except ValueError:
        return True, first.text


class HandCalls:
    """Calls of `execute` through the set, each recorded on its own stream."""

    def __init__(
        self,
        ledger: Ledger,
        servers: ToolServerSet | None,
        clock: Callable[[], float] = trio.current_time,
        server_clock: ServerClock | None = None,
    ):
        self.ledger = ledger
        self.servers = servers
        self.clock = clock
        """Measures a call's `duration_ms`."""
        self.server_clock = server_clock or ServerClock()
        """Judges the call's time limit (`Limits.call`): a test's clock cuts it when moved past it."""

    @staticmethod
    def _scrub_with(servers: ToolServerSet, text: str) -> str:
        return servers.scrub(text)

    async def call(
        self,
        scope: PlaybookScope,
        tool: OfferedTool,
        arguments: Mapping[str, Any],
        caller_id: str,
        *,
        through: ToolServerSet | None = None,
    ) -> dict[str, Any]:
        """One call through `through` (a connection's set), or the configuration's set by default."""
        servers = through if through is not None else self.servers
        assert servers is not None
        call_id = str(uuid7())
        stream = call_stream(scope, call_id)
        kept_arguments = self._scrub_with(servers, compact_json(dict(arguments)))
        started = started_data(1, call_id, tool, kept_arguments)
        metadata: dict[str, Any] = {"correlation_id": None, "causation_id": None, "by": caller_id}
        first = NewRecord("tool_call_started", started, metadata)
        appended = await self.ledger.append([StreamWrite(stream, 0, [first])])
        called_at = iso_utc(appended[0].recorded_at)
        ending_metadata = {**metadata, "causation_id": first.id}
        began = self.clock()
        failure: ToolCallFailed | None = None
        result: ToolCallResult | None = None
        try:
            with self.server_clock.fail_after(servers.limits.call):
                result = await servers.call(scope.org, scope.playbook, tool, arguments, call_id)
        except trio.TooSlowError:
            failure = ToolCallFailed("timed_out", f"No answer within {servers.limits.call:g} seconds.")
        except ToolCallFailed as failed:
            failure = failed
        duration_ms = int((self.clock() - began) * 1000)
        shown: dict[str, Any] = {"call_id": call_id, "server": tool.server, "tool": tool.tool}
        if failure is not None:
            await self._record_failed(servers, stream, ending_metadata, failure, duration_ms)
            words = FAILURE_WORDS[failure.because]
            if failure.because == "arguments_refused":
                words += ": " + error_text(self._scrub_with(servers, failure.detail))
            shown.update(outcome=OUTCOME_OF_FAILURE[failure.because], text=words + ".", result_bytes=None)
        else:
            assert result is not None
            shown.update(await self._record_answered(servers, stream, ending_metadata, tool, result, duration_ms))
        shown["duration_ms"] = duration_ms
        shown["called_at"] = called_at
        return dict(servers.secret_set.scrubber.value(shown))

    async def _record_failed(
        self,
        servers: ToolServerSet,
        stream: StreamName,
        metadata: Mapping[str, Any],
        failure: ToolCallFailed,
        duration_ms: int,
    ) -> None:
        data = failed_data(1, failure, self._scrub_with(servers, failure.detail), duration_ms)
        await self.ledger.append([StreamWrite(stream, 1, [NewRecord("tool_call_failed", data, dict(metadata))])])

    async def _record_answered(
        self,
        servers: ToolServerSet,
        stream: StreamName,
        metadata: Mapping[str, Any],
        tool: OfferedTool,
        result: ToolCallResult,
        duration_ms: int,
    ) -> dict[str, Any]:
        text = self._scrub_with(servers, result_text(result))
        size = len(text.encode("utf-8"))
        data = answered_data(1, tool, result, text, duration_ms)
        await self.ledger.append([StreamWrite(stream, 1, [NewRecord("tool_call_answered", data, dict(metadata))])])
        shown: dict[str, Any] = {
            "outcome": "tool_error" if result.is_error else "result",
            "text": error_text(text) if result.is_error else shown_text(text),
        }
        has_answer, answer = answer_of(result)
        if has_answer and json_size(answer) <= MAX_SHOWN_BYTES:
            shown["answer"] = answer
        shown["result_bytes"] = size
        if result.server_request_id is not None:
            shown["server_request_id"] = result.server_request_id
        return shown
