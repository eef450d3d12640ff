"""Reading replies in conversations (interaction-format §5), by the lease holder.

A conversation is (`server`, reading `tool`, `key`); its id is a digest of the three, and its facts
(`replies_read`, `reading_failed`) are playbook events on its own stream, `conversations/<id>`. A
`delivery_succeeded` with `replies_in` wakes it: a read is due work on the conversation (`interaction:read:<id>`,
5 s after the activity). A read serves the conversation's **kept** requests (the `open_requests` rows with its
key, standing `delivered` or `retrying`, at most 100, oldest first); with none kept it rests and records nothing.

One read: render `replies.with` of the oldest kept request, call the reading tool, take the array at
`read.list`, and judge each item in the tool's order (§5.2): an answer that fits records `request_answered` on its
request's run (with the `interaction:settle` entry that ends it), a reply that gives none `reply_refused` (an
answer holding a lone surrogate is `invalid` at its pointer, by the text rule of `auto_runtime.text_rule`); a reply
from anyone but the answerer, for no kept request, or already judged leaves no trace. The read is recorded when
its list held an item (`replies_read`, whose `since` is the cursor of the next read) or it failed
(`reading_failed`); the next read is armed in the same append, on the cadence of §5.1 (5, 10, 20, 40 s, then 60 s
to the 18th read, then 300 s; never shorter than the oldest kept request's `replies.wait`; a 429's `Retry-After`
up to an hour). A read runs in a task beside the timer loop: it takes its entry (marked fired) and arms the same
read a minute later, which its last append cancels; so a read a stop cut short is made again after a minute, and
the cursor moves only after every item up to it was judged.

A reply is judged in its request's run actor (`JudgeReply`, decided by `functions.interaction.delivery_decisions`);
a reply its run's mailbox cannot take, or whose run other writers kept moving, is judged again at the next read.
A read's own facts go to the conversation's stream with the version it was read at: a read another recorded first
is not recorded (a `VersionConflict`, logged as a read not recorded) and its entry fires again.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import trio

from auto_runtime.actors import MailboxFull
from auto_runtime.clock_text import now_utc
from auto_runtime.functions.interaction.arguments import (
    MAX_ARGUMENTS_BYTES,
    REPLIES_NAMES,
    TELL_NAMES,
    ArgumentsUnreadable,
    recorded_arguments,
)
from auto_runtime.functions.interaction.conversations import READ_PREFIX, cadence, read_entry, wait_floor
from auto_runtime.functions.interaction.delivery_decisions import ReplyJudgement, delivered_as
from auto_runtime.functions.interaction.document import resolve_pointer
from auto_runtime.functions.interaction.reply_rule import rule_words
from auto_runtime.functions.reasoning.template import RenderProblem, StructureAmongText
from auto_runtime.interaction_host.call_measures import arguments_measures, named_server, result_measures
from auto_runtime.interaction_host.request_facts import request_facts
from auto_runtime.json_limits import json_size
from auto_runtime.ledger import (
    DueEntry,
    DueWorkChanges,
    LeaseFence,
    LeaseLost,
    Ledger,
    LedgerError,
    NewRecord,
    PlaybookScope,
    Record,
    StreamWrite,
)
from auto_runtime.runs import RunKeptMoving, Runs, RunWriter
from auto_runtime.runs.facts import run_stream
from auto_runtime.runs.interaction_messages import JudgeReply, ReplyJudged, Telling
from auto_runtime.tools import ToolCallFailed, ToolNotOffered, ToolServerFailed, ToolServers, WantedTool
from auto_runtime.tools.hand_calls import answer_of

log = logging.getLogger("auto_runtime.interactions")

REPLIES_READ = "replies_read"
READING_FAILED = "reading_failed"
KEPT_AT_MOST = 100
MAX_DOCUMENT_BYTES = 64 * 1024
CONNECT_SECONDS = 10
CALL_SECONDS = 30
MAX_RETRY_AFTER = timedelta(hours=1)
LOST_AFTER = timedelta(minutes=1)
"""A read still in flight a minute after it started is considered lost and made again (§5.1)."""


@dataclass(frozen=True)
class ReadCall:
    """One read's call: the failure's `because` and `detail` (None when it read a list), the items read, a
    429's wait in ms, and the call's sizes, digests and duration (`call_measures`) when it answered."""

    failure: dict[str, Any] | None
    items: list[dict[str, Any]]
    retry_after_ms: int | None
    measures: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def failed(because: str, detail: str, retry_after_ms: int | None = None) -> ReadCall:
        return ReadCall({"because": because, "detail": detail}, [], retry_after_ms)


class ReplyReads:
    """The reads of one server while it holds the lease. `follow` keeps the task group the reads run in (a follower
    of the workflow runtime, a child of its own); `fire` starts a read in it."""

    def __init__(
        self, ledger: Ledger, runs: Runs, tools: ToolServers | None, clock: Callable[[], datetime] = now_utc
    ) -> None:
        self.ledger = ledger
        self.runs = runs
        self.tools = tools
        self.clock = clock
        """The time due work is armed at (a test's own clock)."""
        self._in_flight: set[tuple[str, str]] = set()
        self._locks: dict[str, trio.Lock] = {}
        self._ended = trio.lowlevel.ParkingLot()
        self._nursery: trio.Nursery | None = None

    @staticmethod
    def handles(key: str) -> bool:
        return key.startswith(READ_PREFIX)

    async def follow(self, fence: Any) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                await trio.sleep_forever()
            finally:
                self._nursery = None

    def fire(self, entry: DueEntry, fence: LeaseFence) -> None:
        name = (entry.run_id, entry.key)
        if self._nursery is None or name in self._in_flight:
            return  # not following yet (the entry stays armed and a later sweep reads), or read already
        self._in_flight.add(name)
        self._nursery.start_soon(self._read_guarded, entry, fence)

    async def _read_guarded(self, entry: DueEntry, fence: LeaseFence) -> None:
        lock = self._locks.setdefault(entry.run_id, trio.Lock())
        try:
            async with lock:
                await self._read(entry, fence)
        except (LeaseLost, LedgerError) as error:
            log.warning("a read of the conversation %s was not recorded: %s", entry.run_id, error)
        except Exception:
            log.exception("a read of the conversation %s broke down", entry.run_id)
        finally:
            self._in_flight.discard((entry.run_id, entry.key))
            if not lock.locked() and not any(run == entry.run_id for run, _ in self._in_flight):
                self._locks.pop(entry.run_id, None)
            if not self._in_flight:
                self._ended.unpark_all()

    async def wait_idle(self) -> None:
        """Until no read is in flight, its tellings included (for a test that moved its clock and swept)."""
        while self._in_flight:
            await self._ended.park()

    async def _kept(self, scope: PlaybookScope, key: str) -> list[str]:
        return await self.ledger.queries.open_requests.awaiting_reply(scope.org, scope.playbook, key, KEPT_AT_MOST)

    async def _read(self, entry: DueEntry, fence: LeaseFence) -> None:
        scope = entry.scope
        assert isinstance(scope, PlaybookScope)
        payload = entry.payload if isinstance(entry.payload, dict) else {}
        server, tool, key = str(payload.get("server")), str(payload.get("tool")), str(payload.get("key"))
        reads = int(payload.get("reads", 0))
        stream = scope.stream("conversations", entry.run_id)
        kept = await self._kept(scope, key)
        if not kept:
            await self.ledger.due_work.mark_fired([entry.due_key], fence=fence)
            return
        # In flight: the entry is taken, and the same read is made again a minute later unless this one ends first.
        again = DueEntry(scope, entry.run_id, f"{READ_PREFIX}{uuid.uuid4()}", self.clock() + LOST_AFTER, payload)
        await self.ledger.due_work.change(DueWorkChanges(arm=[again], fire=[entry.due_key]), fence=fence)
        entry = again
        requests = {run_id: await self.ledger.read_stream(run_stream(scope, run_id)) for run_id in kept}
        oldest = request_facts(requests[kept[0]]).request
        floor = wait_floor(oldest.get("replies"))
        history = await self.ledger.read_stream(stream)
        cursor = next((r.data.get("since") for r in reversed(history) if r.type == REPLIES_READ), None)
        read = await self._call(scope, kept[0], requests[kept[0]], key, cursor, tool, server)
        outcome, items, retry_after_ms = read.failure, read.items, read.retry_after_ms
        conversation_metadata = {"by": f"playbook:{scope.playbook}", "correlation_id": None, "causation_id": None}
        next_reads = reads + 1
        if outcome is not None:
            data: dict[str, Any] = {"conversation": key, "server": server, "tool": tool, **outcome}
            if retry_after_ms is not None:
                data["retry_after_ms"] = retry_after_ms
            record = NewRecord(READING_FAILED, data, conversation_metadata)
            wait = max(cadence(next_reads), floor)
            if retry_after_ms is not None:
                wait = min(timedelta(milliseconds=retry_after_ms), MAX_RETRY_AFTER)
            following = read_entry(scope, server, tool, key, next_reads, timedelta(0), self.clock())
            following = DueEntry(
                following.scope, following.run_id, following.key, self.clock() + wait, following.payload
            )
            await self._append_read(stream, history, [record], entry, following, fence)
            return
        if not items:
            following = read_entry(scope, server, tool, key, next_reads, floor, self.clock())
            await self.ledger.due_work.change(DueWorkChanges(arm=[following], cancel=[entry.due_key]), fence=fence)
            return
        taken = refused = 0
        found_answerer = False
        for item in items:
            judged = await self._judge(scope, kept, requests, item, server, tool)
            if judged == "taken":
                taken += 1
            elif judged == "refused":
                refused += 1
            if judged in ("taken", "refused"):
                found_answerer = True
        newest = items[-1] if oldest.get("replies", {}).get("read", {}).get("order") != "newest_first" else items[0]
        data = {
            "conversation": key,
            "server": server,
            "tool": tool,
            "since": newest.get("id"),
            "replies": len(items),
            "taken": taken,
            "refused": refused,
            **read.measures,
        }
        record = NewRecord(REPLIES_READ, data, conversation_metadata)
        following = read_entry(scope, server, tool, key, 0 if found_answerer else next_reads, floor, self.clock())
        await self._append_read(stream, history, [record], entry, following, fence)

    async def _append_read(
        self,
        stream: Any,
        history: list[Record],
        records: list[NewRecord],
        entry: DueEntry,
        following: DueEntry,
        fence: LeaseFence,
    ) -> None:
        expected = history[-1].position if history else 0
        due = DueWorkChanges(arm=[following], cancel=[entry.due_key])
        await self.ledger.append([StreamWrite(stream, expected, records)], due_work=due, fence=fence)

    async def _call(
        self,
        scope: PlaybookScope,
        run_id: str,
        history: list[Record],
        key: str,
        cursor: Any,
        tool: str,
        server: str,
    ) -> ReadCall:
        """The read's call: its failure or the items it read, and what the history keeps of the call."""
        request = request_facts(history).request
        replies = request.get("replies") if isinstance(request.get("replies"), dict) else {}
        assert isinstance(replies, dict)
        values = {
            "to": request.get("to"),
            "sent": delivered_as(history) or {},
            "conversation": key,
            "since": cursor or "",
        }
        try:
            arguments = await trio.to_thread.run_sync(
                recorded_arguments, replies.get("with", {}), REPLIES_NAMES, values
            )
        except (ArgumentsUnreadable, RenderProblem, StructureAmongText) as problem:
            return ReadCall.failed("unworkable", str(problem)[:1024])
        if self.tools is None:
            return ReadCall.failed("tool_not_offered", "This server has no tool servers.")
        named = await named_server(self.tools, scope, server, tool)
        content_kept = named.record_content if named is not None else True
        began = trio.current_time()
        try:
            with trio.fail_after(CONNECT_SECONDS):
                offered = await self.tools.offered(scope.org, scope.playbook, [WantedTool(server, tool)])
        except ToolNotOffered as refusal:
            return ReadCall.failed("tool_not_offered", refusal.detail)
        except ToolServerFailed as failure:
            wait = failure.retry_after * 1000 if failure.retry_after is not None else None
            return ReadCall.failed("server_failure", failure.detail, wait)
        except trio.TooSlowError:
            return ReadCall.failed("timed_out", f"No connection within {CONNECT_SECONDS} seconds.")
        try:
            with trio.fail_after(CALL_SECONDS):
                result = await self.tools.call(scope.org, scope.playbook, offered[0], arguments, run_id)
        except ToolServerFailed as failure:
            wait = failure.retry_after * 1000 if failure.retry_after is not None else None
            return ReadCall.failed("server_failure", failure.detail, wait)
        except ToolCallFailed as failure:
            because = "server_failure" if failure.because == "cancelled" else failure.because
            retry = failure.extra.get("retry_after_ms")
            return ReadCall.failed(because, failure.detail, retry if isinstance(retry, int) else None)
        except trio.TooSlowError:
            return ReadCall.failed("timed_out", f"No answer within {CALL_SECONDS} seconds.")
        measures = {
            **arguments_measures(self.tools, arguments, content_kept),
            **result_measures(self.tools, result, content_kept),
            "content_kept": content_kept,
            "duration_ms": int((trio.current_time() - began) * 1000),
        }
        if result.is_error:
            return ReadCall.failed("tool_error", "The reading tool answered an error.")
        has_document, document = answer_of(result)
        if has_document and json_size(document) > MAX_DOCUMENT_BYTES:
            return ReadCall.failed("too_large", "The read's document exceeds 64 KiB as JSON.")
        read = replies.get("read") if isinstance(replies.get("read"), dict) else {}
        assert isinstance(read, dict)
        there, listed = resolve_pointer(document, str(read.get("list", ""))) if has_document else (False, None)
        if not there or not isinstance(listed, list):
            return ReadCall.failed("unreadable", f"No array at {read.get('list')}.")
        each = read.get("each") if isinstance(read.get("each"), dict) else {}
        assert isinstance(each, dict)
        items: list[dict[str, Any]] = []
        for raw in listed:
            item: dict[str, Any] = {}
            for name in ("id", "sender", "text", "to"):
                pointer = each.get(name)
                found, value = resolve_pointer(raw, str(pointer)) if isinstance(pointer, str) else (False, None)
                if found and value is not None:
                    item[name] = str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
            if isinstance(item.get("id"), str) and isinstance(item.get("sender"), str):
                items.append(item)
        return ReadCall(None, items, None, measures)

    async def _judge(
        self,
        scope: PlaybookScope,
        kept: list[str],
        requests: dict[str, list[Record]],
        item: Mapping[str, Any],
        server: str,
        tool: str,
    ) -> str:
        """Judge one reply (§5.2 step 3 and 4): `taken`, `refused` or `nothing`."""
        ambiguous = False
        target: str | None = None
        if "to" in item:
            for run_id in kept:
                sent = delivered_as(requests[run_id])
                if isinstance(sent, dict) and sent.get("id") == item["to"]:
                    target = run_id
        elif len(kept) == 1:
            target = kept[0]
        else:
            target, ambiguous = kept[-1], True
        if target is None:
            return "nothing"
        asked = JudgeReply(dict(item), server, tool, self.clock(), ambiguous)
        try:
            judged = await self.runs.ask(scope, target, asked)
        except (MailboxFull, RunKeptMoving):
            return "nothing"  # the reply is judged again at the next read
        if judged.telling is not None:
            await self._tell(scope, target, judged.telling)
        return judged.outcome

    async def record_judgement(self, writer: RunWriter, message: JudgeReply) -> ReplyJudged:
        """The run's actor's handler of a reply read: `request_answered` (and `interaction:settle`) or
        `reply_refused`, or nothing."""
        return (await writer.write(ReplyJudgement(), message)).reply

    async def _tell(self, scope: PlaybookScope, run_id: str, telling: Telling) -> None:
        """Tell the answerer how to answer (§5.4): `telling_started`, then `telling_succeeded` or `telling_failed`,
        on a stream of its own; never retried."""
        request, because, issues = telling.request, telling.because, telling.issues
        replies = request.get("replies") if isinstance(request.get("replies"), dict) else {}
        deliver = request.get("deliver") if isinstance(request.get("deliver"), dict) else {}
        assert isinstance(replies, dict) and isinstance(deliver, dict)
        tell = replies.get("tell") if isinstance(replies.get("tell"), dict) else {}
        assert isinstance(tell, dict)
        server, tool = str(deliver.get("server")), str(tell.get("tool", deliver.get("tool")))
        rule = request.get("reply") if isinstance(request.get("reply"), dict) else {}
        schema = request.get("answer_schema") if isinstance(request.get("answer_schema"), dict) else {}
        assert isinstance(rule, dict) and isinstance(schema, dict)
        message = telling_words(because, issues, rule, schema)
        stream = scope.stream("tellings", str(uuid.uuid4()))
        metadata = {
            "by": f"playbook:{scope.playbook}",
            "run_id": run_id,
            "correlation_id": run_id,
            "causation_id": telling.refused_id,
        }
        values = {"to": request.get("to"), "sent": telling.sent or {}, "message": message}
        try:
            arguments = await trio.to_thread.run_sync(recorded_arguments, tell.get("with", {}), TELL_NAMES, values)
        except (ArgumentsUnreadable, RenderProblem, StructureAmongText):
            arguments = None
        if arguments is None or json_size(arguments) > MAX_ARGUMENTS_BYTES:
            return  # a telling whose arguments cannot be sent is not sent (§10)
        started = NewRecord(
            "telling_started",
            {"server": server, "tool": tool, "because": because, "arguments_bytes": json_size(arguments)},
            metadata,
        )
        await self.ledger.append([StreamWrite(stream, 0, [started])])
        began = trio.current_time()
        outcome: dict[str, Any] | None = None
        if self.tools is None:
            outcome = {"because": "tool_not_offered", "detail": "This server has no tool servers."}
        else:
            try:
                with trio.fail_after(CONNECT_SECONDS):
                    offered = await self.tools.offered(scope.org, scope.playbook, [WantedTool(server, tool)])
                with trio.fail_after(CALL_SECONDS):
                    result = await self.tools.call(scope.org, scope.playbook, offered[0], arguments, run_id)
                if result.is_error:
                    outcome = {"because": "tool_error", "detail": "The tool answered an error."}
            except ToolNotOffered as refusal:
                outcome = {"because": "tool_not_offered", "detail": refusal.detail}
            except (ToolServerFailed, ToolCallFailed) as failure:
                outcome = {"because": "server_failure", "detail": failure.detail}
            except trio.TooSlowError:
                outcome = {"because": "timed_out", "detail": "No answer in time."}
        data: dict[str, Any] = {"duration_ms": int((trio.current_time() - began) * 1000), **(outcome or {})}
        ending = NewRecord(
            "telling_failed" if outcome else "telling_succeeded", data, {**metadata, "causation_id": started.id}
        )
        await self.ledger.append([StreamWrite(stream, 1, [ending])])


def telling_words(
    because: str, issues: Sequence[Mapping[str, str]], rule: Mapping[str, Any], schema: Mapping[str, Any]
) -> str:
    """What a telling says for a refusal's `because` (§5.4, decision on wording)."""
    if because == "too_long":
        return "A reply may hold at most 8,192 bytes."
    if because == "ambiguous":
        return "Several requests are open here; reply to the message of the one you are answering."
    how = rule_words(rule, schema)
    if because == "invalid":
        shown = "; ".join(f"{issue['pointer']}: {issue['detail']}" for issue in issues[:5])
        return f"That reply does not fit this request: {shown}. {how}"
    return how
