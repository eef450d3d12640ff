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

Each of those appends is a message to the request's run actor (`StartDelivery`, `EndDelivery`, `LoseDelivery`),
decided by `functions.interaction.delivery_decisions`; a message its run's mailbox cannot take, or that other
writers kept overtaking, leaves its entry armed (the attempt's `lost` entry, for its end) for a later sweep.

The requests delivered are those of interaction functions (`interaction_requested`) and of every request source
handed to `deliver_for` (a prediction build's `build_asked`, whose request goes to its trainer's party through
the trainer's delivery): each attempt reads the request as its source does, and records the same facts on the
request's run stream.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import trio

from auto_runtime.actors import MailboxFull
from auto_runtime.clock_text import now_utc
from auto_runtime.functions.interaction.arguments import (
    DELIVER_NAMES,
    MAX_ARGUMENTS_BYTES,
    ArgumentsUnreadable,
    recorded_arguments,
)
from auto_runtime.functions.interaction.delivery_decisions import (
    LOST_PREFIX,
    AttemptEnd,
    AttemptLoss,
    AttemptStart,
    attempt_stopped,
)
from auto_runtime.functions.interaction.request_sources import ATTEMPT_PREFIX, RequestSource
from auto_runtime.functions.reasoning.template import RenderProblem, StructureAmongText
from auto_runtime.interaction_host.call_measures import named_server, scrubbed, sha256
from auto_runtime.interaction_host.replies import ReplyReads
from auto_runtime.interaction_host.request_facts import INTERACTION_SOURCES, RequestFacts, request_facts
from auto_runtime.json_limits import compact_json, json_size
from auto_runtime.ledger import DueEntry, LeaseFence, LeaseLost, Ledger, LedgerError, PlaybookScope, Record
from auto_runtime.runs import RunKeptMoving, Runs, RunWriter
from auto_runtime.runs.facts import run_stream
from auto_runtime.runs.interaction_messages import DeliveryOutcome, EndDelivery, LoseDelivery, StartDelivery
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

log = logging.getLogger("auto_runtime.interactions")

CONNECT_SECONDS = 10
CALL_SECONDS = 30


def _number(key: str, prefix: str) -> int:
    return int(key.removeprefix(prefix))


class Deliveries:
    """The delivery attempts of one server, while it holds the lease. `follow` keeps the task group the calls run
    in (a follower of the workflow runtime, a child of its own); `fire` takes the due entries under
    `interaction:attempt:` and `interaction:lost:`, and hands the reads' to `reads` (a follower of its own)."""

    def __init__(
        self, ledger: Ledger, runs: Runs, tools: ToolServers | None, clock: Callable[[], datetime] = now_utc
    ) -> None:
        self.ledger = ledger
        self.runs = runs
        self.tools = tools
        self.clock = clock
        """The time due work is armed at (a test's own clock)."""
        self.reads = ReplyReads(ledger, runs, tools, clock)
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

    async def _ask(self, scope: PlaybookScope, run_id: str, message: StartDelivery | LoseDelivery) -> Any:
        """Ask the run's actor; None when its mailbox is full or other writers kept moving it (the entry stays
        armed for a later sweep)."""
        try:
            return await self.runs.ask(scope, run_id, message)
        except (MailboxFull, RunKeptMoving):
            return None

    async def _start(self, entry: DueEntry, fence: LeaseFence) -> None:
        scope = entry.scope
        assert isinstance(scope, PlaybookScope)
        number = _number(entry.key, ATTEMPT_PREFIX)
        history, state = await self._read(scope, entry.run_id)
        facts = self._facts(history)
        if attempt_stopped(state, facts, history, number):
            await self.ledger.due_work.mark_fired([entry.due_key], fence=fence)
            return
        assert state is not None
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
            await self._ask(scope, entry.run_id, StartDelivery(entry, number, fence, self.clock(), refusal=refusal))
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
        asked = StartDelivery(entry, number, fence, self.clock(), started=started_data)
        started_id = await self._ask(scope, entry.run_id, asked)
        if started_id is None:
            return
        assert self._nursery is not None
        self._nursery.start_soon(self._deliver, scope, entry.run_id, number, server, tool, arguments, started_id, fence)

    async def record_start(self, writer: RunWriter, message: StartDelivery) -> str | None:
        """The run's actor's handler of an attempt's start: the `delivery_started` record's id, or None (the
        entry is then marked fired, in the refusal's append or alone)."""
        written = await writer.write(AttemptStart(self._sources), message)
        if not written.appended:
            await writer.ledger.due_work.mark_fired([message.entry.due_key], fence=message.fence)
        return written.reply

    async def _named(self, scope: PlaybookScope, server: str, tool: str) -> NamedServer | None:
        """What the configuration says of the delivering server (no server contacted); None when it no longer
        serves the playbook (the attempt then fails `tool_not_offered` at its call)."""
        return await named_server(self.tools, scope, server, tool)

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
        outcome: DeliveryOutcome
        try:
            outcome = await self._call(scope, run_id, number, server, tool, arguments)
        except Exception:
            log.exception("the delivery %s of the run %s broke down", number, run_id)
            outcome = DeliveryOutcome(
                {"because": "server_failure", "detail": "The delivery broke down inside the server."}
            )
        duration_ms = int((trio.current_time() - began) * 1000)
        ended = EndDelivery(number, started_id, outcome, duration_ms, fence, self.clock())
        try:
            await self.runs.ask(scope, run_id, ended)
        except (LeaseLost, LedgerError, MailboxFull, RunKeptMoving) as error:
            # Not recorded here: the attempt's `lost` entry ends it on whichever server holds the lease.
            log.warning("the end of delivery %s of the run %s was not recorded: %s", number, run_id, error)

    async def record_end(self, writer: RunWriter, message: EndDelivery) -> bool:
        """The run's actor's handler of an attempt's end."""
        decider = AttemptEnd(self.scrub, self._sources)
        return (await writer.write(decider, message)).reply

    async def _call(
        self, scope: PlaybookScope, run_id: str, number: int, server: str, tool: str, arguments: Mapping[str, Any]
    ) -> DeliveryOutcome:
        if self.tools is None:
            return DeliveryOutcome({"because": "tool_not_offered", "detail": "This server has no tool servers."})
        try:
            with trio.fail_after(CONNECT_SECONDS):
                offered = await self.tools.offered(scope.org, scope.playbook, [WantedTool(server, tool)])
        except ToolNotOffered as refusal:
            return DeliveryOutcome({"because": "tool_not_offered", "detail": refusal.detail})
        except ToolServerFailed as failure:
            outcome: dict[str, Any] = {"because": "server_failure", "detail": failure.detail}
            if failure.retry_after is not None:
                outcome["retry_after_ms"] = failure.retry_after * 1000
            return DeliveryOutcome(outcome)
        except trio.TooSlowError:
            return DeliveryOutcome(
                {"because": "timed_out", "detail": f"No connection within {CONNECT_SECONDS} seconds."}
            )
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
            return DeliveryOutcome(outcome)
        except trio.TooSlowError:
            return DeliveryOutcome({"because": "timed_out", "detail": f"No answer within {CALL_SECONDS} seconds."})
        text = result_text(result)
        jsonrpc_id = getattr(result, "jsonrpc_id", None)
        if result.is_error:
            return DeliveryOutcome({"because": "tool_error", "detail": text[:1024]}, text, jsonrpc_id)
        has_document, document = answer_of(result)
        return DeliveryOutcome(None, text, jsonrpc_id, has_document, document)

    async def _lost(self, entry: DueEntry, fence: LeaseFence) -> None:
        """An attempt still unfinished a minute after it started: `delivery_failed`, `lost`, and the next one."""
        scope = entry.scope
        assert isinstance(scope, PlaybookScope)
        number = _number(entry.key, LOST_PREFIX)
        await self._ask(scope, entry.run_id, LoseDelivery(entry, number, fence, self.clock()))

    async def record_loss(self, writer: RunWriter, message: LoseDelivery) -> bool:
        """The run's actor's handler of an attempt's loss; marks its entry fired alone when nothing is recorded."""
        decider = AttemptLoss(self.scrub, self._sources)
        written = await writer.write(decider, message)
        if not written.appended:
            await writer.ledger.due_work.mark_fired([message.entry.due_key], fence=message.fence)
        return written.reply
