"""Replies read on their cadence and judged (interaction-format §5), driven in-process by a clock the test moves,
on each ledger (see `clocked`): the refusals `not_an_answer`, `invalid`, `too_long` and `ambiguous`, the caps of
10 refusals and 3 tellings, a telling that fails, and the reads' cadence after the first."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from auto_runtime.functions.interaction.conversations import cadence
from auto_runtime.functions.interaction.delivery_decisions import MAX_REFUSALS, MAX_TOLD
from auto_runtime.ledger import Ledger, Record
from auto_runtime.text_rule import NOT_UNICODE
from auto_runtime.workflow_host.run_store import RunStore
from tests.fakes.gateway_process import McpToolServerProcess
from tests.fakes.mcp_tool_server import LONE_SURROGATE_MARK
from tests.interaction_host.clocked import Host, desk, hosted
from tests.workflow_host.conftest import SCOPE, engine, ledger, postgres_database, postgres_url, store, target

__all__ = ["desk", "engine", "ledger", "postgres_database", "postgres_url", "store", "target"]

FIRST_READ = timedelta(seconds=5)
QUESTION = """---
to: ana
expires: PT1H
deliver:
  server: desk
  tool: say
  with: { text: '{"message": {"room": "ROOM", "key": "KEY"}}' }
  sent: { conversation: /message/room, id: /message/key }
replies:
  tool: replies
  with: { who: 'WHO', parent: '{{ sent.id }}', words: 'WORDS', since: '{{ since }}', count: COUNT }
  read: { list: /items, order: oldest_first, each: { id: /key, sender: /author, text: /body EACH_TO } }
  tell: { tool: TELL, with: { text: '{{ message }}', parent: '{{ sent.id }}', who: '{{ to }}' } }
reply:
  decision: { from: word, words: { go: [ship] } }
  reason: rest
output:
  schema:
    type: object
    required: [decision]
    properties: { decision: { type: string, enum: [go, hold] }, reason: { type: string, maxLength: 5 } }
---
May it go out?
"""


def question(
    words: str,
    *,
    count: int = 1,
    tell: str = "say",
    who: str = "ana",
    room: str = "r-1",
    key: str = "m-1",
    each_to: bool = True,
) -> str:
    source = QUESTION.replace("WORDS", words).replace("COUNT", str(count)).replace("TELL", tell)
    source = source.replace("WHO", who).replace("ROOM", room).replace("KEY", key)
    return source.replace(" EACH_TO", ", to: /parent" if each_to else "")


async def ask(host: Host, name: str, source: str) -> str:
    await host.runs.definitions.create(SCOPE, "interaction", name, source, "tester")
    run_id = str(uuid.uuid4())
    started: dict[str, Any] = await host.runs.run_definition(SCOPE, "interaction", name, {}, run_id, "tester")
    assert started["status"] == "started", started
    return run_id


async def delivered(host: Host, run_id: str) -> None:
    """Sweep now: the first attempt delivers the request (and wakes its conversation, read 5 s later)."""
    await host.sweep_at(host.clock())
    await host.until(run_id, "delivery_succeeded")


def refusals(history: list[Record]) -> list[dict[str, Any]]:
    return [dict(record.data) for record in history if record.type == "reply_refused"]


async def test_refusals_are_capped_at_ten_and_tellings_at_three(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess
) -> None:
    async with hosted(ledger, store, desk) as host:
        run_id = await ask(host, "deploy", question("perhaps", count=MAX_REFUSALS + 2))
        await delivered(host, run_id)
        delivered_at = host.clock()
        await host.sweep_at(delivered_at + FIRST_READ - timedelta(milliseconds=1))
        assert await host.playbook_events("replies_read") == []
        await host.sweep_at(delivered_at + FIRST_READ)
        (read,) = await host.until_playbook("replies_read")
        assert (read.data["replies"], read.data["taken"], read.data["refused"]) == (MAX_REFUSALS + 2, 0, MAX_REFUSALS)
        refused = refusals(await host.history(run_id))
        assert len(refused) == MAX_REFUSALS
        assert {r["because"] for r in refused} == {"not_an_answer"}
        assert [r["told"] for r in refused] == [True] * MAX_TOLD + [False] * (MAX_REFUSALS - MAX_TOLD)
        assert [r["reply"]["id"] for r in refused][:2] == ["m-1-reply", "m-1-reply-2"]
        told = await host.until_playbook("telling_succeeded", MAX_TOLD)
        assert len(told) == MAX_TOLD
        assert len(await host.playbook_events("telling_started")) == MAX_TOLD
        assert (await host.history(run_id))[-1].type == "reply_refused"  # the question stays open


async def test_a_telling_that_fails_is_recorded_and_never_retried(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess
) -> None:
    async with hosted(ledger, store, desk) as host:
        run_id = await ask(host, "deploy", question("perhaps", tell="crash"))
        await delivered(host, run_id)
        await host.sweep_at(host.clock() + FIRST_READ)
        (failed,) = await host.until_playbook("telling_failed")
        assert failed.data["because"] == "server_failure" and failed.metadata["run_id"] == run_id
        (refused,) = refusals(await host.history(run_id))
        assert refused["told"] is True and failed.metadata["causation_id"] is not None
        await host.sweep_at(host.clock() + timedelta(hours=2))
        assert len(await host.playbook_events("telling_started")) == 1


async def test_a_reply_past_8_kib_is_too_long_and_one_that_fails_the_schema_is_invalid(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess
) -> None:
    async with hosted(ledger, store, desk) as host:
        long_run = await ask(host, "long", question("ship " + "x" * 8_200, key="m-long", room="r-long"))
        invalid_run = await ask(host, "invalid", question("ship after the freeze", key="m-bad", room="r-bad"))
        await delivered(host, long_run)
        await host.until(invalid_run, "delivery_succeeded")
        await host.sweep_at(host.clock() + FIRST_READ)
        await host.until(long_run, "reply_refused")
        await host.until(invalid_run, "reply_refused")
        (too_long,) = refusals(await host.history(long_run))
        assert too_long["because"] == "too_long" and "issues" not in too_long
        (invalid,) = refusals(await host.history(invalid_run))
        assert invalid["because"] == "invalid"
        assert [issue["pointer"] for issue in invalid["issues"]] == ["/answer/reason"]
        told = [record.data["because"] for record in await host.until_playbook("telling_started", 2)]
        assert sorted(told) == ["invalid", "too_long"]


async def test_a_reply_with_a_lone_surrogate_is_invalid_at_its_pointer_and_the_request_stays_open(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess
) -> None:
    """The text rule holds for a reply's words as for `answer_interaction`'s answer: the tool's text parses to a
    lone surrogate, the answer it gives is refused as `invalid` at its pointer, never taken."""
    async with hosted(ledger, store, desk) as host:
        run_id = await ask(host, "deploy", question(f"ship ok{LONE_SURROGATE_MARK}"))
        await delivered(host, run_id)
        await host.sweep_at(host.clock() + FIRST_READ)
        await host.until(run_id, "reply_refused")
        (refused,) = refusals(await host.history(run_id))
        assert refused["because"] == "invalid"
        assert refused["issues"] == [
            {"pointer": "/answer/reason", "detail": "answer, then reason: " + "expected " + NOT_UNICODE + "."}
        ]
        (read,) = await host.until_playbook("replies_read")
        assert (read.data["taken"], read.data["refused"]) == (0, 1)
        assert all(record.type != "request_answered" for record in await host.history(run_id))


async def test_a_reply_in_a_conversation_of_several_requests_that_names_none_is_ambiguous(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess
) -> None:
    async with hosted(ledger, store, desk) as host:
        older = await ask(host, "older", question("ship", key="m-1", room="r-shared", each_to=False))
        newer = await ask(host, "newer", question("ship", key="m-2", room="r-shared", each_to=False))
        await delivered(host, older)
        await host.until(newer, "delivery_succeeded")
        await host.sweep_at(host.clock() + FIRST_READ)
        await host.until(newer, "reply_refused")
        (ambiguous,) = refusals(await host.history(newer))
        assert ambiguous["because"] == "ambiguous" and ambiguous["told"] is True
        assert refusals(await host.history(older)) == []
        assert all(record.type != "request_answered" for record in await host.history(newer))


async def test_reads_after_the_first_follow_the_cadence(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess
) -> None:
    async with hosted(ledger, store, desk) as host:
        run_id = await ask(host, "deploy", question("ship", who="zed"))
        await delivered(host, run_id)
        moment = host.clock() + FIRST_READ
        await host.sweep_at(moment)
        await host.until_playbook("replies_read")  # a reply from someone else: read, recorded, nothing taken
        reads_before = len([c for c in desk.calls() if c["name"] == "replies"])
        for reads in range(1, 5):
            wait = cadence(reads)
            await host.sweep_at(moment + wait - timedelta(milliseconds=1))
            await host.settle_reads()
            assert len([c for c in desk.calls() if c["name"] == "replies"]) == reads_before, reads
            moment += wait
            await host.sweep_at(moment)
            await host.settle_reads()
            reads_before += 1
            assert len([c for c in desk.calls() if c["name"] == "replies"]) == reads_before, reads
        assert [record.type for record in await host.history(run_id)][-1] == "delivery_succeeded"


async def test_a_read_answered_429_waits_its_retry_after_before_the_next(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess
) -> None:
    """The fake's `swamped` answers 429 with the `retry_after` it is given: 150 s, past the cadence's 10 s."""
    async with hosted(ledger, store, desk) as host:
        source = question("ship").replace("  tool: replies\n", "  tool: swamped\n")
        run_id = await ask(host, "deploy", source.replace("count: 1 }", "count: 1, retry_after: 150 }"))
        await delivered(host, run_id)
        read_at = host.clock() + FIRST_READ
        await host.sweep_at(read_at)
        (failed,) = await host.until_playbook("reading_failed")
        assert failed.data["because"] == "server_failure" and failed.data["retry_after_ms"] == 150_000
        await host.sweep_at(read_at + timedelta(seconds=150) - timedelta(milliseconds=1))
        await host.settle_reads()
        assert len(await host.playbook_events("reading_failed")) == 1
        await host.sweep_at(read_at + timedelta(seconds=150))
        await host.until_playbook("reading_failed", 2)
