"""What a request delivered through a tool records on its run (interaction-format §4 and §5.2): an attempt's start,
its end or its loss, and the judgement of a reply read in its conversation, as data for the run's writer.

Rules:
- no attempt starts after the run has ended, a cancel was asked or the question was answered, nor twice under one
  number; it records `delivery_started` (its `interaction:lost:<n>` entry armed a minute later) or, when its
  arguments could not be made, `delivery_refused`, and marks its entry fired in the same append;
- an attempt that ends after its run ended, or that was ended already, records nothing; else its ending is one
  append: `delivery_succeeded`, `delivery_failed` or `delivery_refused`, the next attempt armed (1, 2, 4, 8
  minutes, or a server's longer `Retry-After` up to 8) or the attempts spent (a notification then ends
  `unanswered`, `undelivered`), the `lost` entry cancelled, for a notification the run's ending, for a callee of
  a workflow the caller's `answer:` entry, and for a question whose replies are read the conversation's read;
- a reply counts only from the request's answerer, for a started request that was neither answered nor asked to
  cancel, and once; an answer that fits records `request_answered` and arms `interaction:settle`, one that does
  not `reply_refused` (at most 10 a request, the first 3 told when the request can tell).

The requests are read as their source reads them (`sources`: an interaction function's `interaction_requested`,
a prediction build's `build_asked`); what a call kept is scrubbed of the tool servers' secrets (`scrub`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from auto_runtime.clock_text import iso_utc
from auto_runtime.functions.interaction.arguments import CONVERSATION_NAMES, compile_text
from auto_runtime.functions.interaction.conversations import woken_read
from auto_runtime.functions.interaction.decisions import SETTLE_KEY, RequestDecider, caller_answer
from auto_runtime.functions.interaction.document import resolve_pointer
from auto_runtime.functions.interaction.reply_rule import answer_of_reply
from auto_runtime.functions.interaction.request_sources import MAX_ATTEMPTS, RequestSource, attempt_key
from auto_runtime.functions.reasoning.template import RenderProblem, StructureAmongText, render_text
from auto_runtime.interaction_host.call_measures import sha256
from auto_runtime.interaction_host.open_requests import REQUEST_ANSWERED
from auto_runtime.interaction_host.request_facts import INTERACTION_SOURCES, RequestFacts, request_facts
from auto_runtime.ledger import DueEntry, DueKey, DueWorkChanges, NewRecord, PlaybookScope, Record
from auto_runtime.problems import Rejection
from auto_runtime.runs.deciders import RunHistory
from auto_runtime.runs.decision import Decision, Loaded
from auto_runtime.runs.facts import RUN_REJECTED, RUN_SUCCEEDED, carried_metadata
from auto_runtime.runs.interaction_messages import (
    DeliveryOutcome,
    EndDelivery,
    JudgeReply,
    LoseDelivery,
    ReplyJudged,
    StartDelivery,
    Telling,
)
from auto_runtime.runs.view import RunState
from auto_runtime.schema_issues import check_off_the_loop
from auto_runtime.text_rule import lone_surrogate_paths, not_unicode_issue

LOST_PREFIX = "interaction:lost:"
WAITS_MINUTES = (1, 2, 4, 8)
MAX_RETRY_AFTER = timedelta(minutes=8)
LOST_AFTER = timedelta(minutes=1)
MAX_SENT_BYTES = 256
DELIVERY_STARTED = "delivery_started"
DELIVERY_SUCCEEDED = "delivery_succeeded"
DELIVERY_FAILED = "delivery_failed"
DELIVERY_REFUSED = "delivery_refused"
DELIVERY_ENDINGS = (DELIVERY_SUCCEEDED, DELIVERY_FAILED, DELIVERY_REFUSED)
LOST = {"because": "lost", "detail": "The attempt did not finish within a minute; the server may have stopped."}
REPLY_REFUSED = "reply_refused"
MAX_REPLY_BYTES = 8 * 1024
MAX_REFUSALS = 10
MAX_TOLD = 3

Scrub = Callable[[str], str]


def next_attempt_wait(number: int, retry_after_ms: int | None) -> timedelta:
    """The wait after failed attempt `number` (1 to 4) ended: 1, 2, 4 or 8 minutes, or the server's
    `Retry-After` when longer, capped at 8 minutes (§4.1)."""
    wait = timedelta(minutes=WAITS_MINUTES[number - 1])
    if retry_after_ms is not None:
        wait = max(wait, min(timedelta(milliseconds=retry_after_ms), MAX_RETRY_AFTER))
    return wait


def sent_text(value: Any) -> str | None:
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


def delivered_as(history: Sequence[Record]) -> Any:
    """Where the latest delivery landed (`delivery_succeeded`'s `delivered_as`), or None."""
    return next((r.data.get("delivered_as") for r in reversed(history) if r.type == DELIVERY_SUCCEEDED), None)


def attempt_stopped(state: RunState | None, facts: RequestFacts, history: Sequence[Record], number: int) -> bool:
    """Whether attempt `number` may not start: the run ended, a cancel was asked, the question was answered, the
    run holds no request, or the attempt started already."""
    return (
        state is None
        or state.status != "started"
        or state.cancel_requested
        or facts.answered is not None
        or facts.requested is None
        or any(r.type == DELIVERY_STARTED and r.data.get("number") == number for r in history)
    )


class _DeliveryDecider(RequestDecider[Any, Any]):
    """A decider of a delivered request's run, reading the request as its source does."""

    def __init__(self, sources: Mapping[str, RequestSource] = INTERACTION_SOURCES) -> None:
        self.sources = sources

    def facts(self, history: RunHistory) -> RequestFacts:
        return request_facts(history.records, self.sources)

    @staticmethod
    def spent(scope: PlaybookScope, state: RunState, request: Mapping[str, Any], last: NewRecord) -> list[NewRecord]:
        """The attempts are spent: a question stays open (`undelivered`), a notification ends `unanswered`."""
        if request.get("takes_answer"):
            return []
        rejection = Rejection(
            "unanswered", "The notification could not be delivered: its attempts are spent.", kind="undelivered"
        )
        metadata = {
            **carried_metadata(state.started_metadata),
            "causation_id": last.id,
            "by": f"playbook:{scope.playbook}",
        }
        return [NewRecord(RUN_REJECTED, rejection.as_record(), metadata)]


# -- an attempt's start ------------------------------------------------------------------------------------------


class AttemptStart(_DeliveryDecider):
    """An attempt's start (see the module's rules): the reply is the `delivery_started` record's id, else None."""

    def decide(self, loaded: Loaded[RunHistory], message: StartDelivery) -> Decision[str | None]:
        history = loaded.state
        state = self.run(history)
        facts = self.facts(history)
        if attempt_stopped(state, facts, history.records, message.number):
            return Decision(None)
        assert state is not None and facts.requested is not None
        metadata = {**carried_metadata(state.started_metadata), "causation_id": facts.requested.id, "by": "runtime"}
        fired = [message.entry.due_key]
        if message.refusal is not None:
            because, detail = message.refusal
            refused = NewRecord(
                DELIVERY_REFUSED, {"number": message.number, "because": because, "detail": detail}, metadata
            )
            records = [refused, *self.spent(history.scope, state, facts.request, refused)]
            arm = caller_answer(history.scope, history.run_id, state, records[-1], message.at)
            return Decision(None, records, DueWorkChanges(arm=arm, fire=fired), fence=message.fence)
        assert message.started is not None
        begun = NewRecord(DELIVERY_STARTED, dict(message.started), metadata)
        lost = DueEntry(history.scope, history.run_id, f"{LOST_PREFIX}{message.number}", message.at + LOST_AFTER, {})
        return Decision(begun.id, [begun], DueWorkChanges(arm=[lost], fire=fired), fence=message.fence)


# -- an attempt's end --------------------------------------------------------------------------------------------


class _AttemptEnding(_DeliveryDecider):
    def __init__(self, scrub: Scrub, sources: Mapping[str, RequestSource] = INTERACTION_SOURCES) -> None:
        super().__init__(sources)
        self.scrub = scrub

    def ending(
        self,
        history: RunHistory,
        state: RunState,
        number: int,
        outcome: DeliveryOutcome,
        duration_ms: int,
        started_id: str,
        at: datetime,
    ) -> tuple[list[NewRecord], DueWorkChanges]:
        """The records that end attempt `number` and the due work that follows them."""
        request = self.facts(history).request
        metadata = {**carried_metadata(state.started_metadata), "causation_id": started_id, "by": "runtime"}
        data: dict[str, Any] = {"number": number}
        if outcome.result_text is not None:
            text = self.scrub(outcome.result_text)
            kept = next((r.data.get("content_kept", True) for r in history.records if r.id == started_id), True)
            data["result_bytes"] = len(text.encode("utf-8"))
            if kept:
                data["result_sha256"] = sha256(text)
            data["content_kept"] = bool(kept)
        data["duration_ms"] = duration_ms
        records: list[NewRecord]
        failure = outcome.failure
        if failure is not None:
            data.update({key: failure[key] for key in ("because", "retry_after_ms") if key in failure})
            data["detail"] = self.scrub(str(failure.get("detail", "")))[:1024]
            failed = NewRecord(DELIVERY_FAILED, data, metadata)
            records = (
                [failed] if number < MAX_ATTEMPTS else [failed, *self.spent(history.scope, state, request, failed)]
            )
        else:
            records = self._succeeded(request, metadata, data, outcome, at)
        return records, self._after(history, state, request, number, records, failure, at)

    def _succeeded(
        self,
        request: Mapping[str, Any],
        metadata: Mapping[str, Any],
        data: dict[str, Any],
        outcome: DeliveryOutcome,
        at: datetime,
    ) -> list[NewRecord]:
        if outcome.jsonrpc_id is not None:
            data["jsonrpc_id"] = outcome.jsonrpc_id
        landed = _delivered_as(request, outcome.document if outcome.has_document else None, data)
        if request.get("takes_answer") and landed is not None:
            replies_in = _replies_in(request, landed)
            if replies_in is not None:
                data["replies_in"] = replies_in
        succeeded = NewRecord(DELIVERY_SUCCEEDED, data, metadata)
        if request.get("takes_answer"):
            return [succeeded]
        record: dict[str, Any] = {"delivered_at": iso_utc(at)}
        if landed is not None:
            record["delivered_as"] = landed
        output = outcome.document if outcome.has_document else {}
        ending = NewRecord(
            RUN_SUCCEEDED, {"output": output, "record": record}, {**metadata, "causation_id": succeeded.id}
        )
        return [succeeded, ending]

    @staticmethod
    def _after(
        history: RunHistory,
        state: RunState,
        request: Mapping[str, Any],
        number: int,
        records: list[NewRecord],
        failure: Mapping[str, Any] | None,
        at: datetime,
    ) -> DueWorkChanges:
        scope, run_id = history.scope, history.run_id
        cancel = [DueKey(scope, run_id, f"{LOST_PREFIX}{number}")]
        arm = caller_answer(scope, run_id, state, records[-1], at)
        replies_in = records[-1].data.get("replies_in") if records[-1].type == DELIVERY_SUCCEEDED else None
        if isinstance(replies_in, dict):
            replies = request.get("replies")
            arm.append(woken_read(scope, replies_in, replies if isinstance(replies, dict) else None, at))
        if records[-1].type == DELIVERY_FAILED and number < MAX_ATTEMPTS:
            retry = failure.get("retry_after_ms") if failure is not None else None
            wait = next_attempt_wait(number, retry if isinstance(retry, int) else None)
            arm.append(DueEntry(scope, run_id, attempt_key(number + 1), at + wait, {}))
        return DueWorkChanges(arm=arm, cancel=cancel)


def _ended_before(history: RunHistory, number: int) -> bool:
    return any(r.type in DELIVERY_ENDINGS and r.data.get("number") == number for r in history.records)


class AttemptEnd(_AttemptEnding):
    """An attempt's call ended (see the module's rules); whether it recorded."""

    def decide(self, loaded: Loaded[RunHistory], message: EndDelivery) -> Decision[bool]:
        history = loaded.state
        state = self.run(history)
        if state is None or state.status != "started" or _ended_before(history, message.number):
            return Decision(False)
        records, due = self.ending(
            history, state, message.number, message.outcome, message.duration_ms, message.started_id, message.at
        )
        return Decision(True, records, due, fence=message.fence)


class AttemptLoss(_AttemptEnding):
    """An attempt still unfinished a minute after it started: `delivery_failed`, `lost`, and the next attempt, in
    the append that marks its `lost` entry fired; whether it recorded."""

    def decide(self, loaded: Loaded[RunHistory], message: LoseDelivery) -> Decision[bool]:
        history = loaded.state
        state = self.run(history)
        number = message.number
        started = next(
            (r for r in history.records if r.type == DELIVERY_STARTED and r.data.get("number") == number), None
        )
        if state is None or state.status != "started" or _ended_before(history, number) or started is None:
            return Decision(False)
        duration_ms = int((message.at - started.recorded_at).total_seconds() * 1000)
        records, due = self.ending(history, state, number, DeliveryOutcome(LOST), duration_ms, started.id, message.at)
        return Decision(True, records, DueWorkChanges(arm=due.arm, fire=[message.entry.due_key]), fence=message.fence)


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
    if sent_text(key) is None:
        return None
    return {"server": str(deliver.get("server")), "tool": str(replies.get("tool", deliver.get("tool"))), "key": key}


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
        text = sent_text(value) if there else None
        if text is None:
            data["detail"] = f"Nothing readable at {pointer}: the message went out, but the request takes no reply."
            return None
        landed[name] = text
    data["delivered_as"] = landed
    return landed


# -- a reply read ------------------------------------------------------------------------------------------------


class ReplyJudgement(RequestDecider[JudgeReply, ReplyJudged]):
    """A reply read in the request's conversation (§5.2 steps 3 and 4; see the module's rules)."""

    async def decide(self, loaded: Loaded[RunHistory], message: JudgeReply) -> Decision[ReplyJudged]:
        scope, run_id = loaded.state.scope, loaded.state.run_id
        history = loaded.state.records
        state = self.run(loaded.state)
        facts = request_facts(history)
        request = facts.request
        item = message.reply
        reply_id = item["id"]
        nothing = Decision(ReplyJudged("nothing"))
        judged = any(
            r.type in (REQUEST_ANSWERED, REPLY_REFUSED) and (r.data.get("reply") or {}).get("id") == reply_id
            for r in history
        )
        if state is None or state.status != "started" or state.cancel_requested or facts.answered is not None:
            return nothing
        if item.get("sender") != request.get("answerer") or judged or facts.requested is None:
            return nothing
        text = item.get("text") if isinstance(item.get("text"), str) else ""
        assert isinstance(text, str)
        reply = {"id": reply_id, "sender": item["sender"]}
        because: str | None = None
        issues: list[dict[str, str]] = []
        answer: dict[str, Any] | None = None
        if message.ambiguous:
            because = "ambiguous"
        elif len(text.encode("utf-8", "surrogatepass")) > MAX_REPLY_BYTES:
            because = "too_long"
        else:
            rule = request.get("reply") if isinstance(request.get("reply"), dict) else {}
            schema = request.get("answer_schema") if isinstance(request.get("answer_schema"), dict) else {}
            assert isinstance(rule, dict) and isinstance(schema, dict)
            answer = answer_of_reply(rule, schema, text)
            if answer is None:
                because = "not_an_answer"
            else:
                found = [not_unicode_issue(["answer", *path]) for path in lone_surrogate_paths(answer)]
                found = found or await check_off_the_loop(schema, answer, "/answer")
                if found:
                    because = "invalid"
                    issues = [{"pointer": issue.pointer, "detail": issue.detail} for issue in found[:5]]
        by = f"playbook:{scope.playbook}"
        metadata = {**carried_metadata(state.started_metadata), "causation_id": facts.requested.id, "by": by}
        if because is None:
            data: dict[str, Any] = {"answer": answer, "answered_by": by, "reply": reply}
            data.update({"server": message.server, "tool": message.tool})
            settle = DueEntry(scope, run_id, SETTLE_KEY, message.at, {})
            taken = NewRecord(REQUEST_ANSWERED, data, metadata)
            return Decision(ReplyJudged("taken"), [taken], DueWorkChanges(arm=[settle]))
        if sum(1 for r in history if r.type == REPLY_REFUSED) >= MAX_REFUSALS:
            return nothing
        told = sum(1 for r in history if r.type == REPLY_REFUSED and r.data.get("told")) < MAX_TOLD
        tell = (request.get("replies") or {}).get("tell")
        told = told and isinstance(tell, dict)
        data = {"server": message.server, "tool": message.tool, "reply": reply, "because": because, "told": told}
        if issues:
            data["issues"] = issues  # never the reply's words
        refused = NewRecord(REPLY_REFUSED, data, metadata)
        telling = Telling(because, issues, refused.id, request, delivered_as(history)) if told else None
        return Decision(ReplyJudged("refused", telling), [refused])
