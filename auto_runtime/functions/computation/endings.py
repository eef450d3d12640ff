"""How a run on the sandbox pool ends when its code did not return: the spec's words, for computation and recall.

A computation's `main` and a recall function's `answer` end alike (computation-format "How a run ends"); only
the name of the code and the two bounds differ, so each kind of run names them in its `RunWords` and both
take their rejections from `sandbox_ending`. A `Broken` sandbox is not an ending of the code: each caller
handles it (a computation answers `internal`, a recall run raises), so it is not taken here.
"""

from __future__ import annotations

from dataclasses import dataclass

from auto_runtime.problems import Rejection, conflict, unavailable
from auto_runtime.sandbox import outcomes
from auto_runtime.sandbox.unwritable import not_json_words, too_deep_words
from auto_runtime.sandbox.workers import NoWorkerFree

PAST_TIME = "The run did not finish within the 10 seconds a run may take"
OUTPUT_HEAP = "The output could not be written within the run's heap of 240 MiB"
HEAP_FULL = "a run's heap holds 240 MiB, and nothing is freed during a run"
NOT_JSON = "The output cannot be written as JSON: "

CodeEnding = (
    outcomes.Raised
    | outcomes.OutOfMemory
    | outcomes.OutOfWork
    | outcomes.OutputOutOfMemory
    | outcomes.OutputNotJson
    | outcomes.OutputTooDeep
    | outcomes.OutputTooLarge
    | outcomes.PastDeadline
    | outcomes.Cancelled
)
"""Every outcome but `Returned` and `Broken`: the code's own ending, or the run's time or caller."""


@dataclass(frozen=True)
class RunWords:
    """What a kind of run's endings call its code (`code`: `the program`, `answer`), and their details when the
    code used up its units of work (`used_up`) and when the output passed the bytes a run may return
    (`too_large`)."""

    code: str
    used_up: str
    too_large: str


def unworkable(detail: str) -> Rejection:
    """`conflict`, kind `unworkable`: the run's code or its output cannot give an answer."""
    return conflict(detail, kind="unworkable")


def no_worker_free(error: NoWorkerFree) -> Rejection:
    """`unavailable` (retry after 5 s): no worker of the pool became free within the run's time."""
    return unavailable(
        f"No worker became free within the 10 seconds a run may take; the server runs {error.workers} at once",
        retry_after=5,
    )


def sandbox_ending(outcome: CodeEnding, first_line: int, words: RunWords) -> Rejection:
    """The rejection of a run whose code did not return; a line the sandbox did not name is `first_line`."""
    if isinstance(outcome, outcomes.Raised):
        at = outcome.line if outcome.line is not None else first_line
        text = f": {outcome.text}" if outcome.text else ""
        return unworkable(f"Line {at} of {words.code} raised {outcome.type_name}{text}")
    if isinstance(outcome, outcomes.OutOfMemory):
        at = outcome.line if outcome.line is not None else first_line
        return unworkable(f"Line {at} of {words.code} ran out of memory: {HEAP_FULL}")
    if isinstance(outcome, outcomes.OutOfWork):
        return unworkable(words.used_up)
    if isinstance(outcome, outcomes.OutputOutOfMemory):
        return unworkable(OUTPUT_HEAP)
    if isinstance(outcome, outcomes.OutputNotJson):
        return unworkable(NOT_JSON + not_json_words(outcome.what, outcome.pointer))
    if isinstance(outcome, outcomes.OutputTooDeep):
        return unworkable(NOT_JSON + too_deep_words(outcome.pointer))
    if isinstance(outcome, outcomes.OutputTooLarge):
        return unworkable(words.too_large)
    return unavailable(PAST_TIME, retry_after=5)
