"""A `stdio` tool server: a real process under the set's supervisor, reached over a kept MCP session."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from auto_runtime.settings import ToolServer
from auto_runtime.supervision import NO_BACKOFF, Backoff, RestartIntensity
from auto_runtime.tools import OfferedTool, ToolCallFailed, WantedTool
from auto_runtime.tools.kinds import Limits
from auto_runtime.tools.tool_server_set import ToolServerSet

FAKE = Path(__file__).resolve().parents[1] / "fakes" / "mcp_stdio_server.py"
KEY = "notes-key-0123456789"


def entry(starts: Path, env: dict[str, str] | None = None) -> ToolServer:
    return ToolServer.model_validate(
        {
            "command": sys.executable,
            "args": [str(FAKE), "--starts", str(starts)],
            "env": env if env is not None else {"NOTES_API_KEY": KEY},
            "org": "acme",
        }
    )


def tool(name: str, read_only: bool = False) -> OfferedTool:
    return OfferedTool("notes", name, "", {"type": "object"}, read_only)


def starts_of(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


CALL_SECONDS = 20.0
"""Room for a restarted process to start on a busy machine; `hang` is cut at this limit (shortened by its test)."""


@pytest.fixture
def call_seconds() -> float:
    return CALL_SECONDS


@pytest.fixture
async def running(tmp_path: Path, call_seconds: float) -> AsyncIterator[tuple[ToolServerSet, Path]]:
    starts = tmp_path / "starts.log"
    tools = ToolServerSet(
        {"notes": entry(starts)},
        secrets={KEY},
        limits=Limits(call=call_seconds),
        reconnect_backoff=NO_BACKOFF,
        stdio_backoff=Backoff(initial=0.0, maximum=0.0),
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(tools.run)
        yield tools, starts
        await tools.aclose()


async def test_the_process_starts_when_first_needed_and_one_session_serves_every_call(
    running: tuple[ToolServerSet, Path],
) -> None:
    tools, starts = running
    assert starts_of(starts) == []
    offered = await tools.offered("acme", "sales", [WantedTool("notes", "*")])
    assert [item.tool for item in offered][:2] == ["echo", "secret_echo"]
    assert offered[0].read_only and not offered[1].read_only
    for text in ("one", "two", "three"):
        result = await tools.call("acme", "sales", tool("echo", True), {"text": text}, "run-1")
        assert result.blocks[0].text == text
        assert result.jsonrpc_id is not None
    assert len(starts_of(starts)) == 1
    assert tools.clients["notes"].connection.connects == 1  # type: ignore[union-attr]


async def test_a_process_that_crashes_mid_call_fails_the_call_is_restarted_and_the_next_call_succeeds(
    running: tuple[ToolServerSet, Path],
) -> None:
    tools, starts = running
    await tools.call("acme", "sales", tool("echo"), {"text": "before"}, "run-1")
    with pytest.raises(ToolCallFailed) as failed:
        await tools.call("acme", "sales", tool("crash"), {}, "run-1")
    assert failed.value.because == "server_failure"
    result = await tools.call("acme", "sales", tool("echo"), {"text": "after"}, "run-1")
    assert result.blocks[0].text == "after"
    assert len(starts_of(starts)) == 2


@pytest.mark.parametrize("call_seconds", [1.0])
async def test_a_server_that_never_answers_is_cut_at_its_limit_and_the_server_stays_usable(
    running: tuple[ToolServerSet, Path],
) -> None:
    tools, _ = running
    await tools.offered("acme", "sales", [WantedTool("notes", "hang")])  # connects within the list limits
    with pytest.raises(ToolCallFailed) as failed:
        await tools.call("acme", "sales", tool("hang"), {}, "run-1")
    assert failed.value.because == "timed_out"
    result = await tools.call("acme", "sales", tool("echo"), {"text": "still here"}, "run-1")
    assert result.blocks[0].text == "still here"


async def test_a_result_past_four_mebibytes_is_too_large(running: tuple[ToolServerSet, Path]) -> None:
    tools, _ = running
    with pytest.raises(ToolCallFailed) as failed:
        await tools.call("acme", "sales", tool("huge"), {}, "run-1")
    assert failed.value.because == "too_large"
    result = await tools.call("acme", "sales", tool("echo"), {"text": "fine"}, "run-1")
    assert result.blocks[0].text == "fine"


class _StderrLines(logging.Handler):
    """Keeps the stderr lines logged, and sets `seen` at the first (logged on the Trio thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.seen = trio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "(stderr)" in record.getMessage():
            self.lines.append(record.getMessage())
            self.seen.set()


async def test_the_key_is_scrubbed_from_results_in_every_encoding_and_from_stderr_in_the_log(
    running: tuple[ToolServerSet, Path],
) -> None:
    tools, _ = running
    handler = _StderrLines()
    logging.getLogger("auto_runtime.tools").addHandler(handler)
    try:
        result = await tools.call("acme", "sales", tool("secret_echo"), {}, "run-1")
        text = result.blocks[0].text or ""
        assert text.count("[redacted]") == 3
        assert KEY not in text and "notes-key" not in text
        with trio.fail_after(10):
            await handler.seen.wait()
    finally:
        logging.getLogger("auto_runtime.tools").removeHandler(handler)
    assert handler.lines == ["tool server notes (stderr): the key is [redacted]"]


async def test_the_process_environment_is_the_entry_env_alone(tmp_path: Path) -> None:
    tools = ToolServerSet({"notes": entry(tmp_path / "starts.log", {"ONLY_THIS": "yes"})}, secrets=set())
    async with trio.open_nursery() as nursery:
        await nursery.start(tools.run)
        result = await tools.call("acme", "sales", tool("environment"), {}, "run-1")
        await tools.aclose()
    names = set((result.blocks[0].text or "").split())
    assert "ONLY_THIS" in names
    assert "HOME" not in names and "PATH" not in names


async def test_aclose_stops_the_process(running: tuple[ToolServerSet, Path]) -> None:
    tools, _ = running
    await tools.call("acme", "sales", tool("echo"), {"text": "x"}, "run-1")
    process = tools.clients["notes"].process.child  # type: ignore[union-attr]
    assert process.pid is not None
    await tools.aclose()
    assert process.pid is None


async def test_a_stdio_server_without_the_set_running_is_unreachable(tmp_path: Path) -> None:
    from auto_runtime.tools import ToolServerFailed

    tools = ToolServerSet({"notes": entry(tmp_path / "starts.log")}, secrets=set())
    with pytest.raises(ToolServerFailed) as failed:
        await tools.offered("acme", "sales", [WantedTool("notes", "*")])
    assert failed.value.because == "unreachable"
    await tools.aclose()


async def test_a_supervisor_that_gives_up_is_replaced_when_the_server_is_next_needed(tmp_path: Path) -> None:
    starts = tmp_path / "starts.log"
    tools = ToolServerSet(
        {"notes": entry(starts)},
        secrets=set(),
        limits=Limits(call=CALL_SECONDS),
        reconnect_backoff=NO_BACKOFF,
        stdio_backoff=NO_BACKOFF,
        stdio_intensity=RestartIntensity(max_restarts=0, period=60.0),
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(tools.run)
        with pytest.raises(ToolCallFailed):
            await tools.call("acme", "sales", tool("crash"), {}, "run-1")
        result = await tools.call("acme", "sales", tool("echo"), {"text": "again"}, "run-1")
        assert result.blocks[0].text == "again"
        assert len(starts_of(starts)) == 2
        assert tools.supervisor is not None and tools.supervisor.running
        await tools.aclose()
