"""An interaction request's decisions: what its start, an answer and its ending record, as data for the run's
writer (`runs.RunWriter`), which appends them with the version the run was read at and decides again on a clash.

Rules (interaction-format §3 and §6.2):
- a start records `run_started` and what the start came to: the request kept open (`waits`, `finishes_later`,
  `interaction_requested`, its `interaction:expire` entry and, when it is delivered, its first attempt due at
  once), or the ending at once (`run_rejected`, a notification's `run_succeeded`); a start that meets a run
  another writer started meanwhile (one that waits, or has its final result) is stale and records nothing;
- an answer is checked on the run as recorded (a run of a type that answers its requests itself is handed
  back, `AnsweredElsewhere`); the same answer again answers what was recorded, another one is refused; it
  records `request_answered` and arms `interaction:settle` at once;
- an ending entry ends a started request: with its answer (`run_succeeded`, whatever entry came), else with its
  cancellation (`run_cancel_requested` first when only the entry asked it), else, past `expires_at`, with its
  expiry (`run_rejected`, `unanswered`, `expired`); the ending marks its entry fired, cancels the run's other
  ending entries and, for a callee of a workflow, arms the caller's `answer:` entry, all in the one append.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

from auto_runtime.clock_text import iso_utc
from auto_runtime.functions.function_type import Rejected
from auto_runtime.functions.interaction.request_sources import attempt_key
from auto_runtime.functions.workflow.outbox import answer_key, answer_payload, caller_call_key
from auto_runtime.interaction_host.open_requests import INTERACTION_REQUESTED, REQUEST_ANSWERED
from auto_runtime.interaction_host.request_facts import RequestFacts, request_facts
from auto_runtime.json_limits import canonical_digest, depth_of, json_size
from auto_runtime.ledger import DueEntry, DueKey, DueWorkChanges, NewRecord, PlaybookScope, Record
from auto_runtime.problems import InputIssue, Rejection, conflict, invalid_input, not_found
from auto_runtime.runs.deciders import HistoryDecider, RunHistory
from auto_runtime.runs.decision import Decision, Loaded
from auto_runtime.runs.facts import RUN_CANCEL_REQUESTED, RUN_REJECTED, RUN_STARTED, RUN_SUCCEEDED, carried_metadata
from auto_runtime.runs.interaction_messages import AnsweredElsewhere, AnswerRequest, EndRequest, StartInteractionRun
from auto_runtime.runs.view import RunState, fold_run
from auto_runtime.schema_issues import check_off_the_loop

M = TypeVar("M")
R = TypeVar("R")

EXPIRE_KEY = "interaction:expire"
SETTLE_KEY = "interaction:settle"
CANCEL_KEY = "interaction:cancel"
ENDING_KEYS = (EXPIRE_KEY, SETTLE_KEY, CANCEL_KEY)
MAX_ANSWER_BYTES = 64 * 1024
MAX_ANSWER_DEPTH = 512


class RequestDecider(HistoryDecider[M, R]):
    """A decider of one request's run, on its records."""

    @staticmethod
    def run(history: RunHistory) -> RunState | None:
        return fold_run(history.run_id, history.records)


def check_answer_bounds(answer: Any) -> None:
    """Any answer's bounds, whoever checks the rest: 512 levels and 64 KiB as JSON."""
    if depth_of(answer) > MAX_ANSWER_DEPTH:
        raise invalid_input([InputIssue(f"answer: expected at most {MAX_ANSWER_DEPTH} levels of nesting.", "/answer")])
    size = json_size(answer)
    if size > MAX_ANSWER_BYTES:
        raise invalid_input(
            [InputIssue(f"answer: expected at most {MAX_ANSWER_BYTES:,} bytes as JSON, not {size:,}.", "/answer")]
        )


def caller_answer(
    scope: PlaybookScope, run_id: str, state: RunState, ending: NewRecord, at: datetime
) -> list[DueEntry]:
    """The caller's `answer:` entry when `ending` ends the run of a workflow's callee (`called_by`), else none."""
    called_by = state.started_metadata.get("called_by")
    if ending.type not in (RUN_SUCCEEDED, RUN_REJECTED) or not isinstance(called_by, dict):
        return []
    status = "succeeded" if ending.type == RUN_SUCCEEDED else "rejected"
    rejection = None if status == "succeeded" else {k: v for k, v in ending.data.items() if k != "record"}
    payload = answer_payload(caller_call_key(called_by), status, ending.data.get("output"), rejection)
    return [DueEntry(scope, str(called_by["run_id"]), answer_key(run_id), at, payload)]


# -- the start ---------------------------------------------------------------------------------------------------


class RequestStart(RequestDecider[StartInteractionRun, "Rejection | None"]):
    """A request's start (see the module's rules); the reply is the rejection the start raises."""

    def decide(self, loaded: Loaded[RunHistory], message: StartInteractionRun) -> Decision[Rejection | None]:
        history = loaded.state
        before = self.run(history)
        if before is not None and (before.has_final_result or (before.status == "started" and before.waits)):
            return Decision(None)
        metadata = dict(message.metadata)
        first = message.first
        if isinstance(first, Mapping):
            started = NewRecord(RUN_STARTED, {**message.started, "waits": True, "finishes_later": True}, metadata)
            requested = NewRecord(INTERACTION_REQUESTED, dict(first), {**metadata, "causation_id": started.id})
            expires_at = datetime.fromisoformat(str(first["expires_at"]).replace("Z", "+00:00"))
            arm = [DueEntry(history.scope, history.run_id, EXPIRE_KEY, expires_at, {})]
            if first.get("delivery") is not None:
                arm.append(DueEntry(history.scope, history.run_id, attempt_key(1), message.at, {}))
            return Decision(None, [started, requested], DueWorkChanges(arm=arm))
        started = NewRecord(RUN_STARTED, dict(message.started), metadata)
        after = {**metadata, "causation_id": started.id}
        if isinstance(first, Rejected):
            data = first.rejection.as_record()
            if first.record is not None:
                data["record"] = dict(first.record)
            return Decision(first.rejection, [started, NewRecord(RUN_REJECTED, data, after)])
        succeeded = NewRecord(RUN_SUCCEEDED, {"output": first.output, "record": dict(first.record)}, after)
        return Decision(None, [started, succeeded])


# -- an answer ---------------------------------------------------------------------------------------------------


def answerable(run_id: str, state: RunState, facts: RequestFacts) -> None:
    """Refuse an answer to a run that takes none (interaction-format §6.2)."""
    if state.type != "interaction" or facts.requested is None:
        raise conflict(f"The run {run_id} waits for no answer: it is not a request of an interaction function.")
    if not facts.request.get("takes_answer"):
        raise conflict(f"The run {run_id} sent a notification, which takes no answer.")
    if state.status != "started":
        raise conflict(f"The request of the run {run_id} has ended ({state.status}), so it takes no answer.")
    if state.cancel_requested:
        raise conflict(f"The run {run_id} was asked to cancel, so its request takes no answer.")


class RequestAnswer(RequestDecider[AnswerRequest, "Record | AnsweredElsewhere | None"]):
    """An answer (see the module's rules): the reply is the `request_answered` recorded before for the same
    answer, `AnsweredElsewhere`, or None when this decision records it. `elsewhere`: the types whose runs answer
    their requests themselves."""

    def __init__(self, elsewhere: frozenset[str] = frozenset()) -> None:
        self.elsewhere = elsewhere

    async def decide(
        self, loaded: Loaded[RunHistory], message: AnswerRequest
    ) -> Decision[Record | AnsweredElsewhere | None]:
        history = loaded.state
        scope, run_id = history.scope, history.run_id
        state = self.run(history)
        if state is None:
            raise not_found(f"The playbook {scope.playbook} has no run {run_id}.")
        if state.type in self.elsewhere:
            return Decision(AnsweredElsewhere(state.type))
        facts = request_facts(history.records)
        answer = message.answer
        if facts.answered is not None:
            if canonical_digest(facts.answered.data.get("answer")) == canonical_digest(answer):
                return Decision(facts.answered)
            raise conflict(f"The request of the run {run_id} took another answer already.")
        answerable(run_id, state, facts)
        check_answer_bounds(answer)
        issues = await check_off_the_loop(dict(facts.request.get("answer_schema") or {}), answer, "/answer")
        if issues:
            raise invalid_input(issues)
        data: dict[str, Any] = {"answer": answer}
        if message.claimed_for is not None:
            data["claimed_for"] = message.claimed_for
        data["answered_by"] = message.caller_id
        metadata = carried_metadata(state.started_metadata)
        assert facts.requested is not None
        record = NewRecord(
            REQUEST_ANSWERED, data, {**metadata, "causation_id": facts.requested.id, "by": message.caller_id}
        )
        settle = DueEntry(scope, run_id, SETTLE_KEY, message.at, {})
        return Decision(None, [record], DueWorkChanges(arm=[settle]))


# -- the ending --------------------------------------------------------------------------------------------------


class RequestEnding(RequestDecider[EndRequest, bool]):
    """A request's ending when one of its ending entries came due (see the module's rules); whether it ends."""

    def decide(self, loaded: Loaded[RunHistory], message: EndRequest) -> Decision[bool]:
        history = loaded.state
        scope, run_id = history.scope, history.run_id
        state = self.run(history)
        facts = request_facts(history.records)
        if state is None or state.status != "started" or facts.requested is None:
            return Decision(False)
        records = self._ending(scope, message, state, facts)
        if records is None:
            return Decision(False)
        entry = message.entry
        others = [DueKey(scope, run_id, key) for key in ENDING_KEYS if key != entry.key]
        arm = caller_answer(scope, run_id, state, records[-1], message.at)
        due = DueWorkChanges(arm=arm, cancel=others, fire=[entry.due_key])
        return Decision(True, records, due, fence=message.fence)

    def _ending(
        self, scope: PlaybookScope, message: EndRequest, state: RunState, facts: RequestFacts
    ) -> list[NewRecord] | None:
        metadata = carried_metadata(state.started_metadata)
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
        entry = message.entry
        if entry.key == CANCEL_KEY or facts.cancel is not None:
            return self._cancelled(entry, metadata, facts)
        expires_at = facts.request.get("expires_at")
        if entry.key == EXPIRE_KEY and isinstance(expires_at, str) and _at_or_before(expires_at, message.at):
            by = f"playbook:{scope.playbook}"
            rejection = Rejection(
                "unanswered", f"Nobody answered the request before it expired at {expires_at}.", kind="expired"
            )
            return [NewRecord(RUN_REJECTED, rejection.as_record(), {**caused, "by": by})]
        return None

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


def _at_or_before(moment: str, now: datetime) -> bool:
    return datetime.fromisoformat(moment.replace("Z", "+00:00")) <= now
