"""What each message does to a prediction build's run (prediction-format §8), decided on the run's records.

Each decision is a pure function of the run's records (and, for a start, the function's build slot as the
ledger holds it) and the message: the records to append, the due work they change, the reply, or the
refusal it raises. The deciders (`BuildStart`, `CandidateDecider`, `AnswerDecider`, `EndingDecider`) hand them
to the run's writer, which appends them in the run's actor; nothing here writes.

- A start (`decide_start`) records the build's first facts on a run with no record yet; a build that waits
  also records its claim of the function's build slot (`playbooks.run_slots`) in the same append, at the slot
  version read with the run, and is refused `build_in_progress` when another build of the function holds it.
- A candidate (`decide_candidate`) is recorded while the build takes candidates (`build_ended` otherwise);
  an accepted candidate already recorded records nothing again.
- An answer (`decide_answer`) is checked in the order of §8.5 and records `request_answered` with the
  scoring's due entry; the same answer again answers the recorded fact.
- An ending (`decide_ending`) records what its due entry asks on the build as it stands, or nothing (the
  sender then marks the entry fired).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from auto_runtime.clock_text import iso_utc
from auto_runtime.functions.prediction.build_facts import (
    BUILD_ENDED,
    CANDIDATE_REFUSED,
    CANDIDATE_UPLOADED,
    DISCARD_KEY,
    MAX_CANDIDATES,
    REQUEST_ANSWERED,
    SCORE_KEY,
    BuildState,
    fold_build,
    score_run_id,
)
from auto_runtime.ledger import DueEntry, DueWorkChanges, Ledger, NewRecord, PlaybookScope, Record, StreamWrite
from auto_runtime.playbooks.run_slots import RunSlot, SlotReading, read_slot, slot_claim
from auto_runtime.problems import InputIssue, Rejection, conflict, invalid_input, not_found
from auto_runtime.runs import Decision, HistoryDecider, Loaded, RunHistory
from auto_runtime.runs.facts import RUN_REJECTED, run_stream
from auto_runtime.runs.prediction_messages import (
    AnswerBuild,
    BuildEnding,
    CandidateMessage,
    EndBuildPastDeadline,
    EndCancelledBuild,
    ExpireBuild,
    RecordBuildStart,
    RefuseCandidate,
    ScoreBuild,
    UploadCandidate,
)

BUILD_SLOT_KIND: Final = "prediction-build"
DIGEST_CHARACTERS: Final = frozenset("0123456789abcdef")

Fact = Callable[[str, dict[str, Any]], NewRecord]


def build_slot(function: str) -> RunSlot:
    """The slot one build at a time of `function` holds (`playbooks.run_slots`)."""
    return RunSlot(BUILD_SLOT_KIND, function)


def build_in_progress(function: str) -> Rejection:
    return conflict(
        f"A build of the prediction function {function} has not ended; wait for it or cancel it.",
        kind="build_in_progress",
    )


# -- a build's start -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StartState:
    """What a start is decided on: the run's records (none, unless another request recorded it meanwhile) and,
    for a build that claims the function's slot, the slot as read with them."""

    scope: PlaybookScope
    run_id: str
    records: tuple[Record, ...]
    slot: SlotReading | None


def decide_start(state: StartState, message: RecordBuildStart) -> Decision[bool]:
    if state.records:
        return Decision(False)
    claims: list[StreamWrite] = []
    if message.claims_slot:
        assert state.slot is not None
        if state.slot.held_against(state.run_id) is not None:
            raise build_in_progress(message.function)
        slot = build_slot(message.function)
        claims.append(slot_claim(state.scope, slot, state.slot, state.run_id, message.caller_id))
    return Decision(True, message.records, message.due_work, claims)


class BuildStart:
    """The decider of a build's first facts: it reads the run's stream and, when the start claims the function's
    slot, the slot (never kept between messages: a start is decided once per run, on what the ledger holds)."""

    kind = "prediction-build-start"

    def __init__(self, function: str, claims_slot: bool) -> None:
        self.slot = build_slot(function) if claims_slot else None

    async def load(self, ledger: Ledger, scope: PlaybookScope, run_id: str) -> Loaded[StartState]:
        records = tuple(await ledger.read_stream(run_stream(scope, run_id)))
        reading = await read_slot(ledger, scope, self.slot) if self.slot is not None else None
        return Loaded(StartState(scope, run_id, records, reading), len(records))

    def decide(self, loaded: Loaded[StartState], message: RecordBuildStart) -> Decision[bool]:
        return decide_start(loaded.state, message)

    def evolve(self, loaded: Loaded[StartState], appended: Sequence[Record]) -> None:
        return None


# -- candidates ----------------------------------------------------------------------------------------------


def decide_candidate(run_id: str, records: Sequence[Record], message: CandidateMessage) -> Decision[None]:
    state = fold_build(run_id, records)
    if state is None or state.took_answer_or_ended:
        raise conflict(f"The build {run_id} took its answer or ended.", kind="build_ended")
    data: dict[str, Any]
    match message:
        case UploadCandidate():
            if message.candidate in state.uploaded:
                return Decision(None, fresh_only=True)
            data = {"candidate": message.candidate, "bytes": message.size, "opset": message.opset}
            data["accepted"] = len(state.accepted) + 1
            kind = CANDIDATE_UPLOADED
        case RefuseCandidate():
            data = {"candidate": message.candidate, "bytes": message.size, "because": message.because}
            kind = CANDIDATE_REFUSED
    metadata = {**state.started_metadata, "by": message.caller_id, "causation_id": None}
    return Decision(None, [NewRecord(kind, data, metadata)])


# -- the answer ----------------------------------------------------------------------------------------------


def schema_issues(answer: Any) -> list[InputIssue]:
    """The answer's problems against `build_facts.ANSWER_SCHEMA`, under `/answer`."""
    if not isinstance(answer, dict):
        return [InputIssue("answer: expected an object { candidates }.", "/answer")]
    issues = [
        InputIssue(f"answer: {key} is not a field of a build's answer; it takes only candidates.", f"/answer/{key}")
        for key in answer
        if key != "candidates"
    ]
    candidates = answer.get("candidates")
    if "candidates" not in answer:
        issues.append(InputIssue("answer: candidates is required.", "/answer"))
    elif not isinstance(candidates, list):
        issues.append(InputIssue("candidates: expected an array of SHA-256 digests.", "/answer/candidates"))
    else:
        if len(candidates) > MAX_CANDIDATES:
            issues.append(InputIssue(f"candidates: at most {MAX_CANDIDATES} items.", "/answer/candidates"))
        for index, item in enumerate(candidates):
            if not isinstance(item, str) or len(item) != 64 or not set(item) <= DIGEST_CHARACTERS:
                issues.append(
                    InputIssue("candidates: expected 64 lowercase hex digits.", f"/answer/candidates/{index}")
                )
        hashable = [item for item in candidates if isinstance(item, str)]
        if len(set(hashable)) != len(hashable):
            issues.append(InputIssue("candidates: each candidate once (uniqueItems).", "/answer/candidates"))
    return issues


def answered_fact(record: Record, run_id: str) -> dict[str, Any]:
    """A build's `request_answered` as `answer_interaction` answers it."""
    fact: dict[str, Any] = {
        "run_id": run_id,
        "answer_id": record.id,
        "answer": record.data["answer"],
    }
    if record.data.get("claimed_for") is not None:
        fact["claimed_for"] = record.data["claimed_for"]
    fact["answered_by"] = record.metadata.get("by", "")
    fact["answered_at"] = iso_utc(record.recorded_at)
    return fact


def decide_answer(
    scope: PlaybookScope, run_id: str, records: Sequence[Record], message: AnswerBuild
) -> Decision[dict[str, Any] | None]:
    """Records the answer (reply None: the writer's appended record is the fact) or answers the recorded one."""
    state = fold_build(run_id, records)
    if state is None:
        raise not_found(f"The playbook {scope.playbook} has no run {run_id}.")
    if not state.is_build:
        raise conflict(f"The run {run_id} is a question to a prediction function, which takes no answer.")
    answer = message.answer
    if state.answer is not None:
        if json.dumps(state.answer["answer"], sort_keys=True) == json.dumps(answer, sort_keys=True):
            recorded = next(record for record in records if record.type == REQUEST_ANSWERED)
            return Decision(answered_fact(recorded, run_id))
        raise conflict(f"The build {run_id} took another answer already.")
    if state.took_answer_or_ended or state.asked is None:
        raise conflict(f"The build {run_id} has ended or was asked to cancel, so it takes no answer.")
    issues = schema_issues(answer)
    if issues:
        raise invalid_input(issues)
    unknown = [
        InputIssue(
            f"candidates: {candidate} was not accepted by this build (never uploaded to it, or refused).",
            f"/answer/candidates/{index}",
        )
        for index, candidate in enumerate(answer["candidates"])
        if candidate not in state.accepted
    ]
    if unknown:
        raise invalid_input(unknown)
    data: dict[str, Any] = {"answer": answer}
    if message.claimed_for is not None:
        data["claimed_for"] = message.claimed_for
    metadata = {**state.started_metadata, "by": message.caller_id, "causation_id": None}
    due = DueEntry(scope, score_run_id(run_id), SCORE_KEY, message.at, {"run_id": run_id})
    return Decision(None, [NewRecord(REQUEST_ANSWERED, data, metadata)], DueWorkChanges(arm=[due]))


# -- endings -------------------------------------------------------------------------------------------------


def runtime_fact(scope: PlaybookScope, state: BuildState) -> Fact:
    """A fact the runtime records on the build: by `playbook:<id>`, under the build's metadata."""
    metadata = {**state.started_metadata, "by": f"playbook:{scope.playbook}", "causation_id": None}
    return lambda kind, data: NewRecord(kind, data, metadata)


def not_built(fact: Fact, because: str, words: str) -> list[NewRecord]:
    """`build_ended` (`not_built`, `because`) and the run's end."""
    ending = conflict(f"The build built no version: {words}", kind="not_built", because=because)
    return [fact(BUILD_ENDED, {"outcome": "not_built", "because": because}), fact(RUN_REJECTED, ending.as_record())]


def cancelled(state: BuildState) -> list[NewRecord] | None:
    """The ending a recorded cancel asks: by its caller, caused by it."""
    asked = state.cancel
    if asked is None:
        return None
    kind = str(asked.data.get("kind", "requested"))
    reason = asked.data.get("reason")
    metadata = {**state.started_metadata, "by": asked.metadata.get("by"), "causation_id": asked.id}
    ending = Rejection("cancelled", reason if isinstance(reason, str) else "The build was cancelled.", kind=kind)
    return [
        NewRecord(BUILD_ENDED, {"outcome": "cancelled", "because": kind}, metadata),
        NewRecord(RUN_REJECTED, ending.as_record(), metadata),
    ]


def _unanswered(scope: PlaybookScope, state: BuildState) -> list[NewRecord]:
    fact = runtime_fact(scope, state)
    ending = Rejection("unanswered", "The trainer did not answer the build in time.", kind="expired")
    return [fact(BUILD_ENDED, {"outcome": "expired"}), fact(RUN_REJECTED, ending.as_record())]


def _ending(scope: PlaybookScope, state: BuildState | None, message: BuildEnding) -> list[NewRecord] | None:
    """What `message` records on the build as it now stands, or None when nothing is left to record."""
    if state is None or state.ended is not None or state.run_ended:
        return None
    if isinstance(message, EndCancelledBuild):
        return cancelled(state)
    if state.cancel_requested:
        return None
    match message:
        case ScoreBuild():
            return list(message.scored) if state.answer is not None else None
        case ExpireBuild():
            return _unanswered(scope, state) if state.answer is None else None
        case EndBuildPastDeadline():
            if state.answer is None:
                return None
            return not_built(
                runtime_fact(scope, state), "timed_out", "The build passed its deadline before it was scored."
            )


def decide_ending(scope: PlaybookScope, run_id: str, records: Sequence[Record], message: BuildEnding) -> Decision[bool]:
    """Records the ending and marks the message's due entry fired in the same append (True), or nothing
    (False, decided on the run as the ledger holds it). The same append arms the discard of the build's staged
    candidates, due at once (`DISCARD_KEY`)."""
    ending = _ending(scope, fold_build(run_id, records), message)
    if ending is None:
        return Decision(False, fresh_only=True)
    discard = DueEntry(scope, run_id, DISCARD_KEY, message.fired.due_at, {"run_id": run_id})
    arm = [*(message.arm if isinstance(message, ScoreBuild) else ()), discard]
    return Decision(True, ending, DueWorkChanges(fire=[message.fired.due_key], arm=arm), fence=message.fence)


# -- the deciders --------------------------------------------------------------------------------------------


class CandidateDecider(HistoryDecider[CandidateMessage, None]):
    def __init__(self, run_id: str) -> None:
        self.run_id = run_id

    def decide(self, loaded: Loaded[RunHistory], message: CandidateMessage) -> Decision[None]:
        return decide_candidate(self.run_id, loaded.state.records, message)


class AnswerDecider(HistoryDecider[AnswerBuild, dict[str, Any] | None]):
    def __init__(self, scope: PlaybookScope, run_id: str) -> None:
        self.scope = scope
        self.run_id = run_id

    def decide(self, loaded: Loaded[RunHistory], message: AnswerBuild) -> Decision[dict[str, Any] | None]:
        return decide_answer(self.scope, self.run_id, loaded.state.records, message)


class EndingDecider(HistoryDecider[BuildEnding, bool]):
    def __init__(self, scope: PlaybookScope, run_id: str) -> None:
        self.scope = scope
        self.run_id = run_id

    def decide(self, loaded: Loaded[RunHistory], message: BuildEnding) -> Decision[bool]:
        return decide_ending(self.scope, self.run_id, loaded.state.records, message)
