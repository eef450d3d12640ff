"""The interaction runtime: starts the requests of interaction functions, keeps them open, answers and ends them.

`RunService` hands it the runs of interaction functions that ask a party (`WaitingRuns`); a function with `call`
runs within its request in the interaction type. A request is one append: `run_started` (`waits`,
`finishes_later`) and `interaction_requested`, with the request's expiry armed as due work (`interaction:expire`
at `expires_at`) in the same transaction. From then on nothing about it is in memory: the request is a row of
the `open_requests` projection, and what is due is in the due-work table, read by the lease holder's timer loop,
which hands entries under `interaction:` to `fire`.

Rules:

- Every change to a request's run is a message to the run's actor (`runs.interaction_messages`), decided by
  `functions.interaction.decisions` and appended by the run's writer, which reads the run again and decides
  again when another writer moved it; `start` and `cancel` are called inside the run's actor with its writer.
- `answer` records `request_answered` on any server (the run's stream version guards it) and arms
  `interaction:settle` due at once; the lease holder then ends the run `succeeded` with the answer, so the run
  takes it within a sweep (`WORKFLOW_SWEEP_INTERVAL`).
- `cancel` records `run_cancel_requested` and arms `interaction:cancel`; a workflow that stops waiting arms
  `interaction:cancel` itself (`functions.workflow.outbox.callee_cancel_key`), with the kind `deadline` or
  `parent_ended`. An answer recorded before the cancel wins: the run ends `succeeded` with it.
- The expiry ends an unanswered request `rejected`, `unanswered`, kind `expired`, by `playbook:<id>`; a server
  that was down past `expires_at` expires it at its first sweep.
- Every ending is appended under the lease's fence, marks its entry fired, cancels the run's other entries and,
  for a callee of a workflow (`called_by`), arms the caller's `answer:` entry in the same append, so the
  workflow's answer is as durable as the ending.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from auto_runtime.actors import MailboxFull
from auto_runtime.clock_text import iso_utc, now_utc
from auto_runtime.functions.function_type import Rejected, RunEnding, Succeeded
from auto_runtime.functions.interaction.arguments import ArgumentText
from auto_runtime.functions.interaction.call_run import (
    checked_input,
    rendered_arguments,
    tools_not_offered,
)
from auto_runtime.functions.interaction.decisions import (
    CANCEL_KEY,
    RequestAnswer,
    RequestEnding,
    RequestStart,
    check_answer_bounds,
)
from auto_runtime.functions.interaction.document import InteractionDocument
from auto_runtime.functions.interaction.request_sources import RequestSource
from auto_runtime.functions.reasoning.template import RenderProblem, StructureAmongText, render_text
from auto_runtime.interaction_host.deliveries import Deliveries
from auto_runtime.interaction_host.open_requests import listed
from auto_runtime.interaction_host.request_facts import answer_shown
from auto_runtime.json_limits import canonical_digest
from auto_runtime.ledger import DueEntry, LeaseFence, Ledger, NewRecord, PlaybookScope
from auto_runtime.playbooks.cursors import decode_cursor, encode_cursor, foreign_cursor
from auto_runtime.playbooks.definition_registry import DefinitionVersion
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.problems import InputIssue, Rejection, conflict, invalid_input, not_found, unavailable
from auto_runtime.runs import RunHandlers, RunKeptMoving, RunWriter
from auto_runtime.runs.cancels import CancelRun, record_cancel_request
from auto_runtime.runs.ids import canonical_run_id, is_run_id
from auto_runtime.runs.interaction_messages import (
    AnsweredElsewhere,
    AnswerRequest,
    EndDelivery,
    EndRequest,
    JudgeReply,
    LoseDelivery,
    StartDelivery,
    StartInteractionRun,
)
from auto_runtime.runs.view import RunState
from auto_runtime.tools import ToolServers

KEY_PREFIX = "interaction:"
MAX_PARTY_BYTES = 256
MAX_MESSAGE_BYTES = 8 * 1024
REQUESTS_FULL_RETRY_AFTER = 5


def _bad_text(text: str) -> str | None:
    """Why a rendered party cannot be recorded, or None (interaction-format §3.1 step 5)."""
    if not text.strip():
        return "renders empty text"
    if len(text.encode("utf-8")) > MAX_PARTY_BYTES:
        return f"renders more than {MAX_PARTY_BYTES} bytes"
    for character in text:
        category = unicodedata.category(character)
        if category in ("Cc", "Cs", "Co", "Cn") or (ord(character) & 0xFFFE) == 0xFFFE:
            return "renders a control character or another character an event may not hold"
    return None


class RequestAnswerer(Protocol):
    """Answers the requests of another type's runs (a prediction build's, settled point 16): `answer_interaction`
    on a run of that type is handed to it whole (its own checks, facts and refusals)."""

    async def answer(
        self, scope: PlaybookScope, run_id: str, answer: Any, claimed_for: str | None, caller_id: str
    ) -> dict[str, Any]: ...


class InteractionRuntime:
    """One server's interaction requests: `start`, `cancel` (`WaitingRuns`), `answer`, `list`, and `fire` (the
    due entries under `interaction:`, on the lease holder). See the module's rules."""

    runs_once = False
    """A request that ended without a final result (`requests_full`, say) runs again under its id."""

    def __init__(
        self,
        ledger: Ledger,
        runs: RunService,
        *,
        open_limit: int,
        tools: ToolServers | None = None,
        wake: Callable[[], None] = lambda: None,
        clock: Callable[[], datetime] = now_utc,
    ) -> None:
        self.ledger = ledger
        self.runs = runs
        self.open_limit = open_limit
        self.wake = wake
        self.clock = clock
        """The time requests start and due work is armed at (a test's own clock)."""
        self.run_actors = runs.definitions.actors.runs
        """Every run's actor: the answers, endings, delivery facts and replies read are messages to it."""
        self.deliveries = Deliveries(ledger, self.run_actors, tools, clock)
        """The delivery attempts; its `follow` runs beside the timer loop (`WorkflowRuntime.add_follower`)."""
        self._answerers: dict[str, RequestAnswerer] = {}
        self._serve(self.run_actors.handlers)

    def _serve(self, handlers: RunHandlers) -> None:
        """Decide the interaction type's messages in the runs' actors (`runs.interaction_messages`)."""
        handlers.add(AnswerRequest, self._record_answer)
        handlers.add(EndRequest, self._record_ending)
        handlers.add(StartDelivery, self.deliveries.record_start)
        handlers.add(EndDelivery, self.deliveries.record_end)
        handlers.add(LoseDelivery, self.deliveries.record_loss)
        handlers.add(JudgeReply, self.deliveries.reads.record_judgement)

    def answer_for(self, definition_type: str, answerer: RequestAnswerer, source: RequestSource) -> None:
        """Hand `answer_interaction` on runs of `definition_type` to `answerer`, and deliver the requests `source`
        opens that have `deliver` (`Deliveries.deliver_for`); they are listed once `source` is also given to
        `open_requests_projection` (see `open_requests`)."""
        if definition_type == "interaction" or definition_type in self._answerers:
            raise ValueError(f"the {definition_type} requests are answered already")
        self._answerers[definition_type] = answerer
        self.deliveries.deliver_for(source)

    # -- WaitingRuns -----------------------------------------------------------------------------------------

    async def start(
        self,
        writer: RunWriter,
        scope: PlaybookScope,
        definition: DefinitionVersion,
        value: Any,
        run_id: str,
        caller_id: str,
        metadata: Mapping[str, Any] | None,
    ) -> None:
        """Start a request under `run_id`, in the run's actor; raise its rejection when it ended rejected within the
        request."""
        reference = {"type": "interaction", "name": definition.name, "version": definition.version}
        run_metadata: dict[str, Any] = {
            "correlation_id": run_id,
            "causation_id": None,
            **(metadata or {}),
            "by": caller_id,
            "run_id": run_id,
            "definition": reference,
        }
        started_data: dict[str, Any] = {"input": value, "input_digest": canonical_digest(value)}
        document = await self.runs.definitions.actors.documents.parsed(
            (scope.org, scope.playbook), "interaction", definition.name, definition.version, definition.source
        )
        first = await self._first_ending(scope, document, value, run_id, definition.name)
        message = StartInteractionRun(started_data, run_metadata, first, self.clock())
        written = await writer.write(RequestStart(), message)
        if written.reply is not None:
            raise written.reply
        if isinstance(first, Mapping) and written.appended:
            self.wake()

    async def _first_ending(
        self, scope: PlaybookScope, document: Any, value: Any, run_id: str, name: str
    ) -> dict[str, Any] | RunEnding:
        """The request to record (its `interaction_requested` data), the rejection the run ends with at once, or
        a notification's output and record (interaction-format §3.1)."""
        if isinstance(document, Rejection):
            return Rejected(document)
        assert isinstance(document, InteractionDocument)
        checked = await checked_input(document, value)
        if isinstance(checked, Rejection):
            return Rejected(checked)
        if document.deliver is not None:
            refused = await self._not_offered(scope, document)
            if refused is not None:
                return Rejected(refused)
        listed = document.takes_answer or document.deliver is not None
        if listed and await self.open_count(scope) >= self.open_limit:
            return Rejected(
                unavailable(
                    f"The playbook has {self.open_limit:,} open requests, as many as INTERACTION_OPEN_REQUESTS "
                    "allows; answer or cancel some, or try again later.",
                    kind="requests_full",
                    retry_after=REQUESTS_FULL_RETRY_AFTER,
                )
            )
        requested_at = self.clock()
        expires_at = requested_at + timedelta(milliseconds=document.expires_ms or 0)
        moment = iso_utc(requested_at)
        values = {"input": checked, "today": moment[:10], "now": moment}
        rendered: dict[str, str] = {}
        assert document.to is not None
        parts: list[tuple[str, ArgumentText, str]] = [("to", document.to, "/to")]
        if document.answerer is not None:
            parts.append(("answerer", document.answerer, "/from"))
        for field, template, pointer in parts:
            text = self._render(template.template, values, pointer)
            if isinstance(text, Rejected):
                return text
            why = _bad_text(text)
            if why is not None:
                where = "from" if pointer == "/from" else "to"
                return self._unworkable(f"The function's {where} {why}.", pointer)
            rendered[field] = text
        assert document.message is not None
        message = self._render(document.message, values, "")
        if isinstance(message, Rejected):
            return message
        size = len(message.encode("utf-8"))
        if not message.strip():
            return self._unworkable("The function's message renders empty text.", "")
        if size > MAX_MESSAGE_BYTES:
            return self._unworkable(
                f"The function's message renders {size:,} bytes, more than the {MAX_MESSAGE_BYTES:,} a request "
                "may hold.",
                "",
            )
        if not document.takes_answer and document.deliver is None:
            record = {
                "to": rendered["to"],
                "message": message,
                "expires_at": iso_utc(expires_at),
                "requested_at": moment,
            }
            return Succeeded({}, record)
        request: dict[str, Any] = {
            "to": rendered["to"],
            "message": message,
            "message_bytes": size,
            "takes_answer": document.takes_answer,
            "answer_schema": document.output_schema if document.takes_answer else None,
            "delivery": None,
            "requested_at": moment,
            "expires_at": iso_utc(expires_at),
        }
        if document.takes_answer:
            request["answerer"] = rendered.get("answerer", rendered["to"])
        if document.deliver is not None:
            request["delivery"] = {"server": document.deliver.server, "tool": document.deliver.tool}
            values = {
                **values,
                "to": rendered["to"],
                "message": message,
                "run_id": run_id,
                "function": name,
                "expires_at": request["expires_at"],
                "answer_schema": request["answer_schema"],
            }
            checked_arguments = rendered_arguments(document.deliver.arguments, values, "The arguments of deliver")
            if isinstance(checked_arguments, Rejection):
                return Rejected(checked_arguments)
            request["deliver"] = document.deliver_written
            if document.replies_written is not None:
                request["replies"] = document.replies_written
        if document.reply_rule is not None:
            request["reply"] = {name: part.as_record() for name, part in document.reply_rule.items()}
        return request

    async def _not_offered(self, scope: PlaybookScope, document: InteractionDocument) -> Rejection | None:
        """§3.1 step 2: the delivering server serves the playbook and allows the tools the request will call
        (`deliver.tool`, `replies.tool`, `tell.tool`), checked by name without connecting."""
        deliver = document.deliver
        assert deliver is not None
        replies = document.replies_written or {}
        names = {deliver.tool}
        if replies:
            names.add(str(replies.get("tool", deliver.tool)))
            tell = replies.get("tell")
            if isinstance(tell, dict):
                names.add(str(tell.get("tool", deliver.tool)))
        return await tools_not_offered(self.deliveries.tools, scope, deliver.server, names)

    @staticmethod
    def _render(template: Any, values: Mapping[str, Any], pointer: str) -> str | Rejected:
        try:
            return render_text(template, values)
        except RenderProblem as problem:
            words = f"Line {problem.line}: the request cannot be rendered with this input: {problem.words}"
            return Rejected(invalid_input([InputIssue(words, problem.pointer)]))
        except StructureAmongText:
            return InteractionRuntime._unworkable(
                "The function renders an object or array among text: write | json after it, or write it alone "
                "as one {{ }}.",
                pointer,
            )

    @staticmethod
    def _unworkable(detail: str, pointer: str) -> Rejected:
        return Rejected(conflict(detail, kind="unworkable"), {"pointer": pointer})

    async def open_count(self, scope: PlaybookScope) -> int:
        """The playbook's open requests of interaction functions (a decision of §3.1: builds are not counted)."""
        return await self.ledger.queries.open_requests.count(scope.org, scope.playbook, "interaction")

    async def cancel(self, writer: RunWriter, scope: PlaybookScope, state: RunState, message: CancelRun) -> None:
        """Record `run_cancel_requested` and the `interaction:cancel` entry that ends the run, unless the run was
        asked already (a second request records nothing)."""
        payload: dict[str, Any] = {"kind": "requested", "by": message.caller_id}
        if message.reason is not None:
            payload["reason"] = message.reason

        def entry_of(record: NewRecord) -> DueEntry:
            return DueEntry(scope, state.run_id, CANCEL_KEY, self.clock(), payload)

        if await record_cancel_request(writer, message, entry_of):
            self.wake()

    # -- answering and listing ---------------------------------------------------------------------------------

    async def answer(
        self, scope: PlaybookScope, run_id: str, answer: Any, claimed_for: str | None, caller_id: str
    ) -> dict[str, Any]:
        """`answer_interaction` (interaction-format §6.2): decided in the run's actor, or handed whole to the
        answerer of the run's type."""
        run_id = canonical_run_id(run_id)
        if not is_run_id(run_id):
            raise not_found(f"The playbook {scope.playbook} has no run {run_id}.")
        asked = AnswerRequest(answer, claimed_for, caller_id, self.clock())
        answered = await self.run_actors.ask(scope, run_id, asked)
        if isinstance(answered, AnsweredElsewhere):
            check_answer_bounds(answer)
            answerer = self._answerers[answered.definition_type]
            return await answerer.answer(scope, run_id, answer, claimed_for, caller_id)
        return answered

    async def _record_answer(self, writer: RunWriter, message: AnswerRequest) -> dict[str, Any] | AnsweredElsewhere:
        """The run's actor's handler of an answer: `request_answered` and `interaction:settle`, then this server's
        loop is woken to end the run (the holder of the run's partition, when another server, is woken by the
        ledger itself once the append committed: `Ledger.due_wake`)."""
        decider = RequestAnswer(frozenset(self._answerers))
        written = await writer.write(decider, message, kept_moving=_answer_kept_moving)
        reply = written.reply
        if isinstance(reply, AnsweredElsewhere):
            return reply
        if reply is None:
            self.wake()
            reply = written.appended[0]
        return answer_shown(writer.run_id, reply)

    async def list_open(
        self,
        scope: PlaybookScope,
        *,
        to: str | None,
        definition_type: str | None,
        function: str | None,
        limit: int,
        cursor: str | None,
    ) -> dict[str, Any]:
        """`list_interactions`: the open requests, newest first by `requested_at`, a page at a time."""
        start: tuple[int, str] | None = None
        if cursor:
            position = decode_cursor(cursor, scope, "interactions")
            at, after = position.get("t"), position.get("i")
            if not isinstance(at, int) or not isinstance(after, str):
                raise foreign_cursor()
            start = (at, after)
        rows = await self.ledger.queries.open_requests.newest_first(
            scope.org,
            scope.playbook,
            start,
            limit + 1,
            to_party=to,
            definition_type=definition_type,
            function=function,
        )
        page = rows[:limit]
        more = len(rows) > limit
        next_cursor = (
            encode_cursor(scope, "interactions", {"t": int(page[-1]["requested_us"]), "i": str(page[-1]["run_id"])})
            if more and page
            else None
        )
        return {"interactions": [listed(row) for row in page], "has_more": more, "next_cursor": next_cursor}

    # -- due work (the lease holder) -----------------------------------------------------------------------

    async def fire(self, entry: DueEntry, fence: LeaseFence) -> None:
        """End the run an `interaction:` entry is due for, when its moment came: with its answer, its
        cancellation or its expiry; marks the entry fired in the ending's append (alone when nothing ends). A run
        whose mailbox is full, or that kept moving, leaves the entry armed for a later sweep."""
        if self.deliveries.handles(entry.key):
            await self.deliveries.fire(entry, fence)
            return
        scope = entry.scope
        assert isinstance(scope, PlaybookScope)
        try:
            await self.run_actors.ask(scope, entry.run_id, EndRequest(entry, fence, self.clock()))
        except (MailboxFull, RunKeptMoving):
            return

    async def _record_ending(self, writer: RunWriter, message: EndRequest) -> bool:
        """The run's actor's handler of an ending entry (see `fire`)."""
        written = await writer.write(RequestEnding(), message)
        if not written.appended:
            await writer.ledger.due_work.mark_fired([message.entry.due_key], fence=message.fence)
        return written.reply


def _answer_kept_moving() -> Exception:
    return unavailable("The run kept moving while the answer was recorded; send it again.", retry_after=1)
