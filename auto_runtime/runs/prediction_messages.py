"""The messages that change a prediction build's run (prediction-format §8): its first facts, its candidates, its
answer and its endings. Each is decided in the run's actor by the prediction type's deciders
(`functions.prediction.decisions`); the handlers are added where the type is served
(`functions.prediction.run_handlers`).

`RecordBuildStart` is decided inside the start of the run (`Builds.start`, the run service's `StartRun`
handler), never sent; the others are sent by the build routes and the due handlers through `Runs.ask`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from auto_runtime.ledger import DueEntry, DueWorkChanges, LeaseFence, NewRecord
from auto_runtime.runs.messages import RunMessage


@dataclass(frozen=True)
class RecordBuildStart(RunMessage[bool]):
    """A build's first facts on a run with no record yet: `run_started` and what its start assembled, and the
    due work they arm. `claims_slot`: the build waits (it asked its trainer), so the append also records its
    claim of the function's build slot, by `caller_id`; a build that ended within its start claims nothing.
    Answered False when another request recorded the run meanwhile (nothing appended)."""

    function: str
    records: tuple[NewRecord, ...]
    due_work: DueWorkChanges
    claims_slot: bool
    caller_id: str


@dataclass(frozen=True)
class UploadCandidate(RunMessage[None]):
    """A candidate passed its checks (§8.6): record `candidate_uploaded`, by `caller_id`."""

    candidate: str
    size: int
    opset: int
    caller_id: str


@dataclass(frozen=True)
class RefuseCandidate(RunMessage[None]):
    """A candidate failed a check (§8.6): record `candidate_refused` with `because`, by `caller_id`."""

    candidate: str
    size: int
    because: str
    caller_id: str


CandidateMessage = UploadCandidate | RefuseCandidate


@dataclass(frozen=True)
class AnswerBuild(RunMessage[dict[str, Any]]):
    """The trainer's answer (§8.5, `answer_interaction` on a build): record `request_answered` and arm the
    build's scoring, due `at`; answered with the fact as `answer_interaction` shows it."""

    answer: Any
    claimed_for: str | None
    caller_id: str
    at: datetime


@dataclass(frozen=True)
class ScoreBuild(RunMessage[bool]):
    """The scored build's facts (§8.7–§8.8), computed outside the run's actor: its candidates' scores, the
    version built and `build_ended`, then the run's end; `arm` is the due work they start (the shadow, or the
    approving run). Recorded unless the build ended or was asked to cancel meanwhile. Answered whether it
    recorded; the append marks `fired` (a lease holder's due entry, under its `fence`)."""

    scored: tuple[NewRecord, ...]
    arm: tuple[DueEntry, ...]
    fired: DueEntry
    fence: LeaseFence


@dataclass(frozen=True)
class ExpireBuild(RunMessage[bool]):
    """The trainer's `expires_at` passed: a build still unanswered ends `unanswered`, `expired`."""

    fired: DueEntry
    fence: LeaseFence


@dataclass(frozen=True)
class EndBuildPastDeadline(RunMessage[bool]):
    """The build's deadline passed: a build answered and not yet scored ends `not_built`, `timed_out`."""

    fired: DueEntry
    fence: LeaseFence


@dataclass(frozen=True)
class EndCancelledBuild(RunMessage[bool]):
    """A recorded cancel is carried out: `build_ended` (`cancelled`) and the run's end, by the cancel's caller."""

    fired: DueEntry
    fence: LeaseFence


BuildEnding = ScoreBuild | ExpireBuild | EndBuildPastDeadline | EndCancelledBuild
"""Each is recorded with its `fired` entry marked fired and, armed due at once (at the fired entry's due time),
the build's `prediction-build/discard` (`build_facts.DISCARD_KEY`)."""
