"""The interaction runtime: starts the requests of interaction functions, keeps them open, answers and ends them.

`RunService` hands it the runs of interaction functions that ask a party (`WaitingRuns`); a function with `call`
runs within its request in the interaction type. A request is one append: `run_started` (`waits`,
`finishes_later`) and `interaction_requested`, with the request's expiry armed as due work (`interaction:expire`
at `expires_at`) in the same transaction. From then on nothing about it is in memory: the request is a row of
the `open_requests` projection, and what is due is in the due-work table, read by the lease holder's timer loop,
which hands entries under `interaction:` to `fire`.

Rules:

- `answer` records `request_answered` on any server (the run's stream version guards it) and arms
  `interaction:settle` due at once; the lease holder then ends the run `succeeded` with the answer, so the run
  takes it within a sweep (`WORKFLOW_SWEEP_INTERVAL`).
- `cancel` records `run_cancel_requested` and arms `interaction:cancel`; a workflow that stops waiting arms
  `interaction:cancel` itself (`workflow_host.outbox.callee_cancel_key`), with the kind `deadline` or
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

from auto_runtime.clock_text import iso_utc, now_utc
from auto_runtime.functions.function_type import Rejected, RunEnding, Succeeded
from auto_runtime.functions.interaction.arguments import ArgumentText
from auto_runtime.functions.interaction.call_run import (
    checked_input,
    rendered_arguments,
    tools_not_offered,
)
from auto_runtime.functions.interaction.document import InteractionDocument
from auto_runtime.functions.interaction.request_sources import RequestSource, attempt_key
from auto_runtime.functions.reasoning.template import RenderProblem, StructureAmongText, render_text
from auto_runtime.interaction_host.deliveries import Deliveries
from auto_runtime.interaction_host.open_requests import (
    INTERACTION_REQUESTED,
    OPEN_REQUESTS_TABLE,
    REQUEST_ANSWERED,
    listed,
)
from auto_runtime.interaction_host.request_facts import RequestFacts, answer_shown, request_facts
from auto_runtime.json_limits import canonical_digest, depth_of, json_size
from auto_runtime.ledger import (
    DueEntry,
    DueKey,
    DueWorkChanges,
    LeaseFence,
    Ledger,
    NewRecord,
    PlaybookScope,
    StreamWrite,
    VersionConflict,
)
from auto_runtime.playbooks.cursors import decode_cursor, encode_cursor, foreign_cursor
from auto_runtime.playbooks.definition_registry import DefinitionVersion
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.problems import InputIssue, Rejection, conflict, invalid_input, not_found, unavailable
from auto_runtime.runs import RunWriter
from auto_runtime.runs.cancels import CancelRun, record_cancel_request
from auto_runtime.runs.facts import (
    RUN_CANCEL_REQUESTED,
    RUN_REJECTED,
    RUN_STARTED,
    RUN_SUCCEEDED,
    carried_metadata,
    run_stream,
)
from auto_runtime.runs.ids import canonical_run_id, is_run_id
from auto_runtime.runs.view import RunState, fold_run
from auto_runtime.schema_issues import check_off_the_loop
from auto_runtime.tools import ToolServers
from auto_runtime.workflow_host.outbox import answer_key, answer_payload, caller_call_key

KEY_PREFIX = "interaction:"
EXPIRE_KEY = "interaction:expire"
SETTLE_KEY = "interaction:settle"
CANCEL_KEY = "interaction:cancel"
MAX_PARTY_BYTES = 256
MAX_MESSAGE_BYTES = 8 * 1024
MAX_ANSWER_BYTES = 64 * 1024
MAX_ANSWER_DEPTH = 512
REQUESTS_FULL_RETRY_AFTER = 5
ATTEMPTS = 8


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
        self.deliveries = Deliveries(ledger, tools, clock)
        """The delivery attempts; its `follow` runs beside the timer loop (`WorkflowRuntime.add_follower`)."""
        self._answerers: dict[str, RequestAnswerer] = {}

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
        """Start a request under `run_id`; raise its rejection when it ended rejected within the request."""
        stream = run_stream(scope, run_id)
        history = await self.ledger.read_stream(stream)
        expected = history[-1].position if history else 0
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
        ending = await self._first_ending(scope, document, value, run_id, definition.name)
        if isinstance(ending, dict):
            started = NewRecord(RUN_STARTED, {**started_data, "waits": True, "finishes_later": True}, run_metadata)
            requested = NewRecord(INTERACTION_REQUESTED, ending, {**run_metadata, "causation_id": started.id})
            expires_at = datetime.fromisoformat(ending["expires_at"].replace("Z", "+00:00"))
            arm = [DueEntry(scope, run_id, EXPIRE_KEY, expires_at, {})]
            if ending.get("delivery") is not None:
                arm.append(DueEntry(scope, run_id, attempt_key(1), self.clock(), {}))
            await self.ledger.append(
                [StreamWrite(stream, expected, [started, requested])], due_work=DueWorkChanges(arm=arm)
            )
            self.wake()
            return
        started = NewRecord(RUN_STARTED, started_data, run_metadata)
        after = {**run_metadata, "causation_id": started.id}
        if isinstance(ending, Rejected):
            data = ending.rejection.as_record()
            if ending.record is not None:
                data["record"] = dict(ending.record)
            await self.ledger.append([StreamWrite(stream, expected, [started, NewRecord(RUN_REJECTED, data, after)])])
            raise ending.rejection
        succeeded = NewRecord(RUN_SUCCEEDED, {"output": ending.output, "record": dict(ending.record)}, after)
        await self.ledger.append([StreamWrite(stream, expected, [started, succeeded])])

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
        rows = await self.ledger.fetch(
            f"SELECT COUNT(*) AS n FROM {OPEN_REQUESTS_TABLE} WHERE org = ? AND playbook = ? AND type = ?",
            [scope.org, scope.playbook, "interaction"],
        )
        return int(rows[0]["n"]) if rows else 0

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
        """`answer_interaction` (interaction-format §6.2)."""
        run_id = canonical_run_id(run_id)
        missing = not_found(f"The playbook {scope.playbook} has no run {run_id}.")
        if not is_run_id(run_id):
            raise missing
        stream = run_stream(scope, run_id)
        for _ in range(ATTEMPTS):
            history = await self.ledger.read_stream(stream)
            state = fold_run(run_id, history)
            if state is None:
                raise missing
            answerer = self._answerers.get(state.type)
            if answerer is not None:
                self._check_bounds(answer)
                return await answerer.answer(scope, run_id, answer, claimed_for, caller_id)
            facts = request_facts(history)
            if facts.answered is not None:
                if canonical_digest(facts.answered.data.get("answer")) == canonical_digest(answer):
                    return answer_shown(run_id, facts.answered)
                raise conflict(f"The request of the run {run_id} took another answer already.")
            self._answerable(run_id, state, facts)
            await self._check_answer(facts.request.get("answer_schema") or {}, answer)
            data: dict[str, Any] = {"answer": answer}
            if claimed_for is not None:
                data["claimed_for"] = claimed_for
            data["answered_by"] = caller_id
            started = state.started_metadata
            metadata = carried_metadata(started)
            assert facts.requested is not None
            record = NewRecord(
                REQUEST_ANSWERED, data, {**metadata, "causation_id": facts.requested.id, "by": caller_id}
            )
            settle = DueEntry(scope, run_id, SETTLE_KEY, self.clock(), {})
            try:
                appended = await self.ledger.append(
                    [StreamWrite(stream, state.stream_version, [record])], due_work=DueWorkChanges(arm=[settle])
                )
            except VersionConflict:
                continue
            self.wake()
            return answer_shown(run_id, appended[0])
        raise unavailable("The run kept moving while the answer was recorded; send it again.", retry_after=1)

    @staticmethod
    def _answerable(run_id: str, state: RunState, facts: RequestFacts) -> None:
        if state.type != "interaction" or facts.requested is None:
            raise conflict(f"The run {run_id} waits for no answer: it is not a request of an interaction function.")
        if not facts.request.get("takes_answer"):
            raise conflict(f"The run {run_id} sent a notification, which takes no answer.")
        if state.status != "started":
            raise conflict(f"The request of the run {run_id} has ended ({state.status}), so it takes no answer.")
        if state.cancel_requested:
            raise conflict(f"The run {run_id} was asked to cancel, so its request takes no answer.")

    @staticmethod
    async def _check_answer(schema: Mapping[str, Any], answer: Any) -> None:
        InteractionRuntime._check_bounds(answer)
        issues = await check_off_the_loop(dict(schema), answer, "/answer")
        if issues:
            raise invalid_input(issues)

    @staticmethod
    def _check_bounds(answer: Any) -> None:
        """Any answer's bounds, whoever checks the rest: 512 levels and 64 KiB as JSON."""
        if depth_of(answer) > MAX_ANSWER_DEPTH:
            raise invalid_input(
                [InputIssue(f"answer: expected at most {MAX_ANSWER_DEPTH} levels of nesting.", "/answer")]
            )
        size = json_size(answer)
        if size > MAX_ANSWER_BYTES:
            raise invalid_input(
                [InputIssue(f"answer: expected at most {MAX_ANSWER_BYTES:,} bytes as JSON, not {size:,}.", "/answer")]
            )

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
        sql = f"SELECT * FROM {OPEN_REQUESTS_TABLE} WHERE org = ? AND playbook = ?"
        params: list[Any] = [scope.org, scope.playbook]
        if cursor:
            position = decode_cursor(cursor, scope, "interactions")
            at, after = position.get("t"), position.get("i")
            if not isinstance(at, int) or not isinstance(after, str):
                raise foreign_cursor()
            sql += " AND (requested_us < ? OR (requested_us = ? AND run_id < ?))"
            params += [at, at, after]
        for column, wanted in (("to_party", to), ("type", definition_type), ("function", function)):
            if wanted is not None:
                sql += f" AND {column} = ?"
                params.append(wanted)
        sql += " ORDER BY requested_us DESC, run_id DESC LIMIT ?"
        params.append(limit + 1)
        rows = await self.ledger.fetch(sql, params)
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
        cancellation or its expiry; marks the entry fired in the ending's append (alone when nothing ends)."""
        if self.deliveries.handles(entry.key):
            await self.deliveries.fire(entry, fence)
            return
        scope = entry.scope
        assert isinstance(scope, PlaybookScope)
        stream = run_stream(scope, entry.run_id)
        for _ in range(ATTEMPTS):
            history = await self.ledger.read_stream(stream)
            state = fold_run(entry.run_id, history)
            facts = request_facts(history)
            if state is None or state.status != "started" or facts.requested is None:
                await self.ledger.due_work.mark_fired([entry.due_key], fence=fence)
                return
            records = self._ending(scope, entry, state, facts)
            if records is None:
                await self.ledger.due_work.mark_fired([entry.due_key], fence=fence)
                return
            due = self._ending_due_work(scope, entry, state, records[-1])
            try:
                await self.ledger.append(
                    [StreamWrite(stream, state.stream_version, records)], due_work=due, fence=fence
                )
            except VersionConflict:
                continue
            return

    def _ending(
        self, scope: PlaybookScope, entry: DueEntry, state: RunState, facts: RequestFacts
    ) -> list[NewRecord] | None:
        started = state.started_metadata
        metadata = carried_metadata(started)
        requested = facts.requested
        assert requested is not None
        caused = {**metadata, "causation_id": requested.id}
        if facts.answered is not None:
            answered = facts.answered.data
            record: dict[str, Any] = {
                "answered_by": answered.get("answered_by"),
                "answered_at": iso_utc(facts.answered.recorded_at),
            }
            for key in ("claimed_for", "reply"):
                if answered.get(key) is not None:
                    record[key] = answered[key]
            by = str(answered.get("answered_by", ""))
            ending = {"output": answered.get("answer"), "record": record}
            return [NewRecord(RUN_SUCCEEDED, ending, {**caused, "causation_id": facts.answered.id, "by": by})]
        if entry.key == CANCEL_KEY or facts.cancel is not None:
            return self._cancelled(entry, metadata, facts)
        expires_at = facts.request.get("expires_at")
        if entry.key == EXPIRE_KEY and isinstance(expires_at, str) and self._past(expires_at):
            by = f"playbook:{scope.playbook}"
            rejection = Rejection(
                "unanswered", f"Nobody answered the request before it expired at {expires_at}.", kind="expired"
            )
            return [NewRecord(RUN_REJECTED, rejection.as_record(), {**caused, "by": by})]
        return None

    def _past(self, moment: str) -> bool:
        return datetime.fromisoformat(moment.replace("Z", "+00:00")) <= self.clock()

    @staticmethod
    def _cancelled(entry: DueEntry, metadata: Mapping[str, Any], facts: RequestFacts) -> list[NewRecord]:
        records: list[NewRecord] = []
        asked = facts.cancel
        if asked is not None:
            kind = str(asked.data.get("kind", "requested"))
            reason = asked.data.get("reason")
            by = str(asked.metadata.get("by", ""))
            cause = asked.id
        else:
            payload = entry.payload if isinstance(entry.payload, dict) else {}
            kind = str(payload.get("kind", "requested"))
            reason = payload.get("reason")
            by = str(payload.get("by", ""))
            data: dict[str, Any] = {"kind": kind}
            if isinstance(reason, str):
                data["reason"] = reason
            request = NewRecord(RUN_CANCEL_REQUESTED, data, {**metadata, "causation_id": None, "by": by})
            records.append(request)
            cause = request.id
        detail = reason if isinstance(reason, str) else f"The run was cancelled by {by}."
        rejection = Rejection("cancelled", detail, kind=kind)
        records.append(NewRecord(RUN_REJECTED, rejection.as_record(), {**metadata, "causation_id": cause, "by": by}))
        return records

    def _ending_due_work(
        self, scope: PlaybookScope, entry: DueEntry, state: RunState, ending: NewRecord
    ) -> DueWorkChanges:
        others = [DueKey(scope, entry.run_id, key) for key in (EXPIRE_KEY, SETTLE_KEY, CANCEL_KEY) if key != entry.key]
        arm: list[DueEntry] = []
        called_by = state.started_metadata.get("called_by")
        if isinstance(called_by, dict):
            succeeded = ending.type == RUN_SUCCEEDED
            status = "succeeded" if succeeded else "rejected"
            rejection = None if succeeded else {k: v for k, v in ending.data.items() if k != "record"}
            payload = answer_payload(caller_call_key(called_by), status, ending.data.get("output"), rejection)
            arm.append(DueEntry(scope, str(called_by["run_id"]), answer_key(entry.run_id), self.clock(), payload))
        return DueWorkChanges(arm=arm, cancel=others, fire=[entry.due_key])
