"""A build's facts on its run's stream (prediction-format §8, §10), and a build folded from them.

A build is a run of a prediction function whose input is `{ "build": {} }`; its `run_started` says `waits`. The
facts it records, in order: `dataset_assembled`, `baseline_scored` or `baseline_not_walked`, `build_asked`,
the candidates' `candidate_uploaded` and `candidate_refused`, `request_answered`, `build_ended`, then the run's
end. `BuildState` is what the build routes and the answer need of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from auto_runtime.ledger import PlaybookScope, Record
from auto_runtime.runs.facts import RUN_CANCEL_REQUESTED, RUN_ENDINGS, RUN_STARTED

DATASET_ASSEMBLED: Final = "dataset_assembled"
BASELINE_SCORED: Final = "baseline_scored"
BASELINE_NOT_WALKED: Final = "baseline_not_walked"
BUILD_ASKED: Final = "build_asked"
CANDIDATE_UPLOADED: Final = "candidate_uploaded"
CANDIDATE_REFUSED: Final = "candidate_refused"
REQUEST_ANSWERED: Final = "request_answered"
BUILD_ENDED: Final = "build_ended"
MAX_CANDIDATES: Final = 8
DUE_PREFIX: Final = "prediction-build/"
SCORE_KEY: Final = DUE_PREFIX + "score"
"""Armed by `request_answered`, fired once the build is scored: while armed, the build is queued or scoring. Its
entry is in the pseudo-run `score_run_id(run_id)` (no UUID: it goes with the partition of `org/playbook`, whose
holder scores, issue 33); releases before armed it in the build's run, and such an entry is scored the same."""
SCORE_RUN_PREFIX: Final = "score-"
RECORD_SCORES_KEY: Final = DUE_PREFIX + "record-scores"
"""Armed in the build's run by the server that scored it when another server holds the build run's partition:
its payload carries the scored facts, which that partition's holder records on the build (`Scoring`)."""


def score_run_id(run_id: str) -> str:
    """The pseudo-run of a build's `SCORE_KEY` entry (the build's run id is in its payload)."""
    return SCORE_RUN_PREFIX + run_id


EXPIRE_KEY: Final = DUE_PREFIX + "expire"
"""Armed by `build_asked` at its `expires_at`: a build still unanswered then ends `unanswered`, `expired`."""
DEADLINE_KEY: Final = DUE_PREFIX + "deadline"
"""Armed by `build_asked` at the build's start + the trainer's `expires` + 20 minutes (§14): a build still
queued or scoring then ends `not_built`, `timed_out`."""
DEADLINE_GRACE_MS: Final = 20 * 60 * 1000
CANCEL_KEY: Final = DUE_PREFIX + "cancel"
"""Armed, due at once, by the `run_cancel_requested` of a `cancel_run` (`Builds.cancel`): the lease holder then
ends the build `cancelled` (`build_ended`, then the run's end), whatever it was doing."""
DISCARD_KEY: Final = DUE_PREFIX + "discard"
"""Armed by the append that ends a build, due at once: the lease holder then discards the build's staged
candidates (§13: staged until it ends) and marks it fired. Being due work, a discard that fails (the database
refusing a connection) or that a server's end interrupts is carried out at a later sweep: nothing is kept."""
ANSWER_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "required": ["candidates"],
    "additionalProperties": False,
    "properties": {
        "candidates": {
            "type": "array",
            "maxItems": MAX_CANDIDATES,
            "uniqueItems": True,
            "items": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        }
    },
}


def candidate_key(scope: PlaybookScope, run_id: str) -> str:
    """The content scope key a build's candidates are staged under until it ends (then discarded)."""
    return f"{scope.key}/builds/{run_id}/candidates"


def is_build_input(value: Any) -> bool:
    return isinstance(value, dict) and "build" in value


@dataclass
class BuildState:
    """A run folded as a build: None fields until their fact is recorded."""

    run_id: str
    is_build: bool = False
    name: str = ""
    version: int = 0
    started_by: str = ""
    started_metadata: dict[str, Any] = field(default_factory=dict)
    assembled: dict[str, Any] | None = None
    baseline: dict[str, Any] | None = None
    asked: dict[str, Any] | None = None
    asked_at: str | None = None
    accepted: list[str] = field(default_factory=list)
    """The candidates accepted so far, in upload order (each once)."""
    uploaded: dict[str, dict[str, Any]] = field(default_factory=dict)
    answer: dict[str, Any] | None = None
    ended: dict[str, Any] | None = None
    run_ended: bool = False
    cancel_requested: bool = False
    cancel: Record | None = None
    """The build's `run_cancel_requested`, once recorded."""
    stream_version: int = 0

    @property
    def open(self) -> bool:
        """The request is open: asked, not answered, and the build neither ended nor asked to cancel."""
        return (
            self.asked is not None
            and self.answer is None
            and not self.cancel_requested
            and self.ended is None
            and not self.run_ended
        )

    @property
    def took_answer_or_ended(self) -> bool:
        return self.answer is not None or self.cancel_requested or self.ended is not None or self.run_ended


def fold_build(run_id: str, history: Sequence[Record]) -> BuildState | None:
    if not history:
        return None
    state = BuildState(run_id=run_id, stream_version=history[-1].position)
    for record in history:
        data = record.data
        if record.type == RUN_STARTED:
            definition = record.metadata.get("definition", {})
            state.is_build = definition.get("type") == "prediction" and is_build_input(data.get("input"))
            state.name = str(definition.get("name", ""))
            state.version = int(definition.get("version", 0))
            state.started_by = str(record.metadata.get("by", ""))
            state.started_metadata = dict(record.metadata)
        elif record.type == DATASET_ASSEMBLED:
            state.assembled = dict(data)
        elif record.type in (BASELINE_SCORED, BASELINE_NOT_WALKED):
            state.baseline = dict(data)
        elif record.type == BUILD_ASKED:
            state.asked = dict(data)
            state.asked_at = record.recorded_at.isoformat().replace("+00:00", "Z")
        elif record.type == CANDIDATE_UPLOADED:
            candidate = str(data["candidate"])
            state.uploaded[candidate] = dict(data)
            if candidate not in state.accepted:
                state.accepted.append(candidate)
        elif record.type == CANDIDATE_REFUSED:
            candidate = str(data["candidate"])
            if candidate in state.accepted:
                state.accepted.remove(candidate)
                state.uploaded.pop(candidate, None)
        elif record.type == REQUEST_ANSWERED:
            state.answer = dict(data)
        elif record.type == BUILD_ENDED:
            state.ended = dict(data)
        elif record.type == RUN_CANCEL_REQUESTED:
            state.cancel_requested = True
            state.cancel = record
        elif record.type in RUN_ENDINGS:
            state.run_ended = True
    return state
