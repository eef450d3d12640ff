"""Delivery attempts of requests through a tool (interaction-format §4), carried out by the lease holder.

An attempt is due work on the request's run: `interaction:attempt:<n>`, armed at once for the first (in the
request's own append) and 1, 2, 4 and 8 minutes after the previous attempt ended for the others (a server's
`Retry-After` replaces the wait when longer, capped at 8 minutes). When it comes due, `start` records
`delivery_started` (the stream's version makes an attempt number unique, so of two servers racing for one attempt
only the first sends), marks the entry fired and arms `interaction:lost:<n>` a minute later, all in one append;
the call itself runs in a task of its own, outside the timer loop's sweep, and its ending is one append:
`delivery_succeeded`, `delivery_failed` or `delivery_refused`, the next attempt armed (or the attempts spent),
the `lost` entry cancelled, and for a notification the run's ending. An attempt a restart cut short is found by
its `lost` entry: `delivery_failed`, `because: "lost"`, and the next attempt.

No attempt starts after the run has ended, a cancel was asked or the question was answered; an attempt that ends
after that records nothing.

The requests delivered are those of interaction functions (`interaction_requested`) and of every request source
handed to `deliver_for` (a prediction build's `build_asked`, whose request goes to its trainer's party through
the trainer's delivery): each attempt reads the request as its source does, and records the same facts on the
request's run stream.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

import trio

from auto_runtime.clock_text import iso_utc, now_utc
from auto_runtime.functions.interaction.arguments import (
    CONVERSATION_NAMES,
    DELIVER_NAMES,
    MAX_ARGUMENTS_BYTES,
    ArgumentsUnreadable,
    compile_text,
    recorded_arguments,
)
from auto_runtime.functions.interaction.document import resolve_pointer
from auto_runtime.functions.interaction.request_sources import ATTEMPT_PREFIX, MAX_ATTEMPTS, RequestSource, attempt_key
from auto_runtime.functions.reasoning.template import RenderProblem, StructureAmongText, render_text
from auto_runtime.interaction_host.call_measures import named_server, scrubbed, sha256
from auto_runtime.interaction_host.replies import ReplyReads, woken_read
from auto_runtime.interaction_host.request_facts import INTERACTION_SOURCES, RequestFacts, request_facts
from auto_runtime.json_limits import compact_json, json_size
from auto_runtime.ledger import (
    DueEntry,
    DueKey,
    DueWorkChanges,
    LeaseFence,
    LeaseLost,
    Ledger,
    LedgerError,
    NewRecord,
    PlaybookScope,
    Record,
    StreamWrite,
    VersionConflict,
)
from auto_runtime.problems import Rejection
from auto_runtime.runs.facts import RUN_REJECTED, RUN_SUCCEEDED, carried_metadata, run_stream
from auto_runtime.runs.view import RunState, fold_run
from auto_runtime.tools import (
    NamedServer,
    ToolCallFailed,
    ToolNotOffered,
    ToolServerFailed,
    ToolServers,
    WantedTool,
)
from auto_runtime.tools.hand_calls import answer_of
from auto_runtime.tools.result_text import result_text
from auto_runtime.workflow_host.outbox import answer_key, answer_payload, caller_call_key

log = logging.getLogger("auto_runtime.interactions")

LOST_PREFIX = "interaction:lost:"
WAITS_MINUTES = (1, 2, 4, 8)
MAX_RETRY_AFTER = timedelta(minutes=8)
LOST_AFTER = timedelta(minutes=1)
CONNECT_SECONDS = 10
CALL_SECONDS = 30
MAX_SENT_BYTES = 256
DELIVERY_STARTED = "delivery_started"
DELIVERY_SUCCEEDED = "delivery_succeeded"
DELIVERY_FAILED = "delivery_failed"
DELIVERY_REFUSED = "delivery_refused"
DELIVERY_ENDINGS = (DELIVERY_SUCCEEDED, DELIVERY_FAILED, DELIVERY_REFUSED)


def next_attempt_wait(number: int, retry_after_ms: int | None) -> timedelta:
    """The wait after failed attempt `number` (1 to 4) ended: 1, 2, 4 or 8 minutes, or the server's
    `Retry-After` when longer, capped at 8 minutes (§4.1)."""
    wait = timedelta(minutes=WAITS_MINUTES[number - 1])
    if retry_after_ms is not None:
        wait = max(wait, min(timedelta(milliseconds=retry_after_ms), MAX_RETRY_AFTER))
    return wait


def _number(key: str, prefix: str) -> int:
    return int(key.removeprefix(prefix))


def _sent_text(value: Any) -> str | None:
    """A `sent` value as text (a whole number written as text), or None when it cannot be one (§4.2)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        value = str(value)
    if not isinstance(value, str) or not value or len(value.encode("utf-8")) > MAX_SENT_BYTES:
        return None
    if any(ord(character) < 0x20 or ord(character) == 0x7F for character in value):
        return None
    return value


class Deliveries:
    """The delivery attempts of one server, while it holds the lease. `follow` keeps the task group the calls run
    in (a follower of the workflow runtime, a child of its own); `fire` takes the due entries under
    `interaction:attempt:` and `interaction:lost:`, and hands the reads' to `reads` (a follower of its own)."""

    def __init__(self, ledger: Ledger, tools: ToolServers | None, clock: Callable[[], datetime] = now_utc) -> None:
        self.ledger = ledger
        self.tools = tools
        self.clock = clock
        """The time due work is armed at (a test's own clock)."""
        self.reads = ReplyReads(ledger, tools, clock)
        self._nursery: trio.Nursery | None = None
        self._sources: dict[str, RequestSource] = dict(INTERACTION_SOURCES)

    def deliver_for(self, source: RequestSource) -> None:
        """Deliver the requests `source` opens as well: those whose request (`source.request_of`) has `deliver`
        are armed their first attempt by whoever records them (`interaction:attempt:1`, due at once)."""
        if source.opened_by in self._sources:
            raise ValueError(f"the requests of {source.opened_by} are delivered already")
        self._sources[source.opened_by] = source

    def _facts(self, history: list[Record]) -> RequestFacts:
        return request_facts(history, self._sources)

    async def follow(self, fence: Any) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                await trio.sleep_forever()
            finally:
                self._nursery = None

    def scrub(self, text: str) -> str:
        """`text` without the secrets of the tool servers (those of 8 characters or more), as a call keeps it."""
        return scrubbed(self.tools, text)

    @staticmethod
    def handles(key: str) -> bool:
        return key.startswith((ATTEMPT_PREFIX, LOST_PREFIX)) or ReplyReads.handles(key)

    async def fire(self, entry: DueEntry, fence: LeaseFence) -> None:
        if entry.key.startswith(LOST_PREFIX):
            await self._lost(entry, fence)
        elif ReplyReads.handles(entry.key):
            self.reads.fire(entry, fence)
        elif self._nursery is not None:  # else not following yet: the entry stays armed and a later sweep starts it
            await self._start(entry, fence)

    async def _read(self, scope: PlaybookScope, run_id: str) -> tuple[list[Record], RunState | None]:
        history = await self.ledger.read_stream(run_stream(scope, run_id))
        return history, fold_run(run_id, history)

    @staticmethod
    def _metadata(state: RunState) -> dict[str, Any]:
        started = state.started_metadata
        return carried_metadata(started)

    def _stopped(self, state: RunState | None, history: list[Record]) -> bool:
        facts = self._facts(history)
        return state is None or state.status != "started" or state.cancel_requested or facts.answered is not None

    async def _start(self, entry: DueEntry, fence: LeaseFence) -> None:
        scope = entry.scope
        assert isinstance(scope, PlaybookScope)
        number = _number(entry.key, ATTEMPT_PREFIX)
        history, state = await self._read(scope, entry.run_id)
        facts = self._facts(history)
        started_before = any(r.type == DELIVERY_STARTED and r.data.get("number") == number for r in history)
        if state is None or self._stopped(state, history) or facts.requested is None or started_before:
            await self.ledger.due_work.mark_fired([entry.due_key], fence=fence)
            return
        request = facts.request
        found = request.get("deliver")
        deliver: dict[str, Any] = found if isinstance(found, dict) else {}
        server, tool = str(deliver.get("server", "")), str(deliver.get("tool", ""))
        values = {
            "input": request.get("input", state.input),
            "today": str(request.get("requested_at", ""))[:10],
            "now": request.get("requested_at"),
            "to": request.get("to"),
            "message": request.get("message"),
            "run_id": entry.run_id,
            "function": state.name,
            "expires_at": request.get("expires_at"),
            "answer_schema": request.get("answer_schema"),
        }
        metadata = self._metadata(state)
        cause = facts.requested.id
        refusal: tuple[str, str] | None = None
        arguments: Any = None
        try:
            arguments = await trio.to_thread.run_sync(
                recorded_arguments, deliver.get("with", {}), DELIVER_NAMES, values
            )
        except (ArgumentsUnreadable, RenderProblem, StructureAmongText) as problem:
            refusal = ("unworkable", f"The arguments of deliver cannot be rendered: {problem}")
        if refusal is None and json_size(arguments) > MAX_ARGUMENTS_BYTES:
            refusal = ("too_large", f"The arguments take more than {MAX_ARGUMENTS_BYTES:,} bytes as JSON.")
        if refusal is not None:
            data = {"number": number, "because": refusal[0], "detail": refusal[1]}
            refused = NewRecord(DELIVERY_REFUSED, data, {**metadata, "causation_id": cause, "by": "runtime"})
            records = [refused, *self._spent(scope, state, request, refused)]
            due = DueWorkChanges(arm=self._answers(scope, entry.run_id, state, records), fire=[entry.due_key])
            await self._append(scope, entry.run_id, state, records, due, fence)
            return
        kept = self.scrub(compact_json(arguments))
        named = await self._named(scope, server, tool)
        content_kept = named.record_content if named is not None else True
        started_data: dict[str, Any] = {"number": number, "server": server}
        if named is not None and named.connection_id is not None:
            started_data["connection_id"] = named.connection_id
        started_data.update(tool=tool, arguments_bytes=len(kept.encode("utf-8")))
        if content_kept:
            started_data.update(arguments_sha256=sha256(kept), arguments=json.loads(kept))
        started_data["content_kept"] = content_kept
        begun = NewRecord(DELIVERY_STARTED, started_data, {**metadata, "causation_id": cause, "by": "runtime"})
        lost = DueEntry(scope, entry.run_id, f"{LOST_PREFIX}{number}", self.clock() + LOST_AFTER, {})
        due = DueWorkChanges(arm=[lost], fire=[entry.due_key])
        if not await self._append(scope, entry.run_id, state, [begun], due, fence):
            return
        assert self._nursery is not None
        self._nursery.start_soon(self._deliver, scope, entry.run_id, number, server, tool, arguments, begun.id, fence)

    async def _named(self, scope: PlaybookScope, server: str, tool: str) -> NamedServer | None:
        """What the configuration says of the delivering server (no server contacted); None when it no longer
        serves the playbook (the attempt then fails `tool_not_offered` at its call)."""
        return await named_server(self.tools, scope, server, tool)

    async def _append(
        self,
        scope: PlaybookScope,
        run_id: str,
        state: RunState,
        records: list[NewRecord],
        due: DueWorkChanges,
        fence: LeaseFence,
    ) -> bool:
        try:
            await self.ledger.append(
                [StreamWrite(run_stream(scope, run_id), state.stream_version, records)], due_work=due, fence=fence
            )
        except VersionConflict:
            return False  # the run moved (an answer, a cancel, another server): the entry fires again and rereads
        return True

    async def _deliver(
        self,
        scope: PlaybookScope,
        run_id: str,
        number: int,
        server: str,
        tool: str,
        arguments: Mapping[str, Any],
        started_id: str,
        fence: LeaseFence,
    ) -> None:
        began = trio.current_time()
        outcome: dict[str, Any]
        result = None
        try:
            outcome, result = await self._call(scope, run_id, number, server, tool, arguments)
        except Exception:
            log.exception("the delivery %s of the run %s broke down", number, run_id)
            outcome = {"because": "server_failure", "detail": "The delivery broke down inside the server."}
        duration_ms = int((trio.current_time() - began) * 1000)
        try:
            for _ in range(8):
                history, state = await self._read(scope, run_id)
                if state is None or state.status != "started":
                    return
                if any(r.type in DELIVERY_ENDINGS and r.data.get("number") == number for r in history):
                    return
                records = self._ended(scope, state, history, number, outcome, result, duration_ms, started_id)
                due = self._after(scope, run_id, state, history, number, records, outcome)
                if await self._append(scope, run_id, state, records, due, fence):
                    return
        except (LeaseLost, LedgerError) as error:
            # Not recorded here: the attempt's `lost` entry ends it on whichever server holds the lease.
            log.warning("the end of delivery %s of the run %s was not recorded: %s", number, run_id, error)

    async def _call(
        self, scope: PlaybookScope, run_id: str, number: int, server: str, tool: str, arguments: Mapping[str, Any]
    ) -> tuple[dict[str, Any], Any]:
        if self.tools is None:
            return {"because": "tool_not_offered", "detail": "This server has no tool servers."}, None
        try:
            with trio.fail_after(CONNECT_SECONDS):
                offered = await self.tools.offered(scope.org, scope.playbook, [WantedTool(server, tool)])
        except ToolNotOffered as refusal:
            return {"because": "tool_not_offered", "detail": refusal.detail}, None
        except ToolServerFailed as failure:
            outcome: dict[str, Any] = {"because": "server_failure", "detail": failure.detail}
            if failure.retry_after is not None:
                outcome["retry_after_ms"] = failure.retry_after * 1000
            return outcome, None
        except trio.TooSlowError:
            return {"because": "timed_out", "detail": f"No connection within {CONNECT_SECONDS} seconds."}, None
        try:
            with trio.fail_after(CALL_SECONDS):
                result = await self.tools.call(
                    scope.org, scope.playbook, offered[0], arguments, run_id, delivery_id=f"{run_id}:{number}"
                )
        except ToolCallFailed as failure:
            because = "server_failure" if failure.because == "cancelled" else failure.because
            outcome = {"because": because, "detail": failure.detail}
            retry = failure.extra.get("retry_after_ms")
            if isinstance(retry, int):
                outcome["retry_after_ms"] = retry
            return outcome, None
        except trio.TooSlowError:
            return {"because": "timed_out", "detail": f"No answer within {CALL_SECONDS} seconds."}, None
        if result.is_error:
            return {"because": "tool_error", "detail": result_text(result)[:1024]}, result
        return {}, result

    def _ended(
        self,
        scope: PlaybookScope,
        state: RunState,
        history: list[Record],
        number: int,
        outcome: Mapping[str, Any],
        result: Any,
        duration_ms: int,
        started_id: str,
    ) -> list[NewRecord]:
        request = self._facts(history).request
        metadata = {**self._metadata(state), "causation_id": started_id, "by": "runtime"}
        data: dict[str, Any] = {"number": number}
        if result is not None:
            text = self.scrub(result_text(result))
            kept = next((r.data.get("content_kept", True) for r in history if r.id == started_id), True)
            data["result_bytes"] = len(text.encode("utf-8"))
            if kept:
                data["result_sha256"] = sha256(text)
            data["content_kept"] = bool(kept)
        data["duration_ms"] = duration_ms
        if "because" in outcome:
            data.update({key: outcome[key] for key in ("because", "retry_after_ms") if key in outcome})
            data["detail"] = self.scrub(str(outcome.get("detail", "")))[:1024]
            failed = NewRecord(DELIVERY_FAILED, data, metadata)
            if number < MAX_ATTEMPTS:
                return [failed]
            return [failed, *self._spent(scope, state, request, failed)]
        if getattr(result, "jsonrpc_id", None) is not None:
            data["jsonrpc_id"] = result.jsonrpc_id
        has_answer, document = answer_of(result)
        delivered_as = self._delivered_as(request, document if has_answer else None, data)
        if request.get("takes_answer") and delivered_as is not None:
            replies_in = self._replies_in(request, delivered_as)
            if replies_in is not None:
                data["replies_in"] = replies_in
        succeeded = NewRecord(DELIVERY_SUCCEEDED, data, metadata)
        if request.get("takes_answer"):
            return [succeeded]
        record: dict[str, Any] = {"delivered_at": iso_utc(self.clock())}
        if delivered_as is not None:
            record["delivered_as"] = delivered_as
        output = document if has_answer else {}
        ending = NewRecord(
            RUN_SUCCEEDED, {"output": output, "record": record}, {**metadata, "causation_id": succeeded.id}
        )
        return [succeeded, ending]

    @staticmethod
    def _replies_in(request: Mapping[str, Any], sent: Mapping[str, str]) -> dict[str, str] | None:
        """Where the request's replies are read (§4.2): with `replies` and a rule, the rendered conversation key."""
        replies = request.get("replies")
        deliver = request.get("deliver")
        if not isinstance(replies, dict) or not isinstance(deliver, dict) or request.get("reply") is None:
            return None
        written = replies.get("conversation", "{{ sent.conversation }}")
        compiled = compile_text(str(written), 1, CONVERSATION_NAMES, None)
        if isinstance(compiled, list):
            return None
        try:
            key = render_text(compiled.template, {"to": request.get("to"), "sent": dict(sent)})
        except (RenderProblem, StructureAmongText):
            return None
        if _sent_text(key) is None:
            return None
        return {"server": str(deliver.get("server")), "tool": str(replies.get("tool", deliver.get("tool"))), "key": key}

    @staticmethod
    def _delivered_as(request: Mapping[str, Any], document: Any, data: dict[str, Any]) -> dict[str, str] | None:
        found = request.get("deliver")
        deliver: Mapping[str, Any] = found if isinstance(found, dict) else {}
        sent = deliver.get("sent")
        if not isinstance(sent, dict):
            return None
        landed: dict[str, str] = {}
        for name in ("conversation", "id"):
            pointer = str(sent.get(name, ""))
            there, value = resolve_pointer(document, pointer) if document is not None else (False, None)
            text = _sent_text(value) if there else None
            if text is None:
                data["detail"] = f"Nothing readable at {pointer}: the message went out, but the request takes no reply."
                return None
            landed[name] = text
        data["delivered_as"] = landed
        return landed

    def _spent(
        self, scope: PlaybookScope, state: RunState, request: Mapping[str, Any], last: NewRecord
    ) -> list[NewRecord]:
        """The attempts are spent: a question stays open (`undelivered`), a notification ends `unanswered`."""
        if request.get("takes_answer"):
            return []
        rejection = Rejection(
            "unanswered", "The notification could not be delivered: its attempts are spent.", kind="undelivered"
        )
        metadata = {**self._metadata(state), "causation_id": last.id, "by": f"playbook:{scope.playbook}"}
        return [NewRecord(RUN_REJECTED, rejection.as_record(), metadata)]

    def _after(
        self,
        scope: PlaybookScope,
        run_id: str,
        state: RunState,
        history: list[Record],
        number: int,
        records: list[NewRecord],
        outcome: Mapping[str, Any],
    ) -> DueWorkChanges:
        cancel = [DueKey(scope, run_id, f"{LOST_PREFIX}{number}")]
        arm = self._answers(scope, run_id, state, records)
        replies_in = records[-1].data.get("replies_in") if records[-1].type == DELIVERY_SUCCEEDED else None
        if isinstance(replies_in, dict):
            replies = self._facts(history).request.get("replies")
            arm.append(woken_read(scope, replies_in, replies if isinstance(replies, dict) else None, self.clock()))
        if records[-1].type == DELIVERY_FAILED and number < MAX_ATTEMPTS:
            retry = outcome.get("retry_after_ms")
            wait = next_attempt_wait(number, retry if isinstance(retry, int) else None)
            arm.append(DueEntry(scope, run_id, attempt_key(number + 1), self.clock() + wait, {}))
        return DueWorkChanges(arm=arm, cancel=cancel)

    def _answers(self, scope: PlaybookScope, run_id: str, state: RunState, records: list[NewRecord]) -> list[DueEntry]:
        """The caller's `answer:` entry when the records end the run of a workflow's callee."""
        ending = records[-1]
        called_by = state.started_metadata.get("called_by")
        if ending.type not in (RUN_SUCCEEDED, RUN_REJECTED) or not isinstance(called_by, dict):
            return []
        status = "succeeded" if ending.type == RUN_SUCCEEDED else "rejected"
        rejection = None if status == "succeeded" else {k: v for k, v in ending.data.items() if k != "record"}
        payload = answer_payload(caller_call_key(called_by), status, ending.data.get("output"), rejection)
        return [DueEntry(scope, str(called_by["run_id"]), answer_key(run_id), self.clock(), payload)]

    async def _lost(self, entry: DueEntry, fence: LeaseFence) -> None:
        """An attempt still unfinished a minute after it started: `delivery_failed`, `lost`, and the next one."""
        scope = entry.scope
        assert isinstance(scope, PlaybookScope)
        number = _number(entry.key, LOST_PREFIX)
        history, state = await self._read(scope, entry.run_id)
        ended = any(r.type in DELIVERY_ENDINGS and r.data.get("number") == number for r in history)
        started = next((r for r in history if r.type == DELIVERY_STARTED and r.data.get("number") == number), None)
        if state is None or state.status != "started" or ended or started is None:
            await self.ledger.due_work.mark_fired([entry.due_key], fence=fence)
            return
        outcome = {
            "because": "lost",
            "detail": "The attempt did not finish within a minute; the server may have stopped.",
        }
        duration_ms = int((self.clock() - started.recorded_at).total_seconds() * 1000)
        records = self._ended(scope, state, history, number, outcome, None, duration_ms, started.id)
        due = self._after(scope, entry.run_id, state, history, number, records, outcome)
        due = DueWorkChanges(arm=due.arm, cancel=[], fire=[entry.due_key])
        await self._append(scope, entry.run_id, state, records, due, fence)
