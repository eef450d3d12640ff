"""A run of a recall function: the input checked, the view read as it stands, `answer` called on the pool.

The run never waits for folding: it answers from the row it read, and its record names that row's checkpoint.
Without `answer` the view is the output (`work` 0); with it, a fresh sandbox like a computation run's calls
`answer(view, input)` under 250,000,000 units of work, and the output is written and checked as a computation
output is, within 1,046,528 bytes.
"""

from __future__ import annotations

import json
import time
from typing import Any

from auto_runtime.functions.computation.run import (
    HEAP_FULL,
    INPUT_LIMIT,
    NOT_JSON,
    OUTPUT_HEAP,
    PAST_TIME,
    SCHEMA_REFUSES,
    as_schema,
    checked_against,
    input_problem,
    invalid_input,
)
from auto_runtime.functions.function_type import Rejected, RunEnding, Succeeded
from auto_runtime.functions.recall.document import RecallDocument
from auto_runtime.ledger.recall_views import ViewRow
from auto_runtime.problems import InputIssue, Rejection, conflict, unavailable
from auto_runtime.sandbox.evaluate import Evaluation
from auto_runtime.sandbox.fair_queue import JobOwner
from auto_runtime.sandbox.json_values import compact_json, utf8_size
from auto_runtime.sandbox.limits import RUN_SECONDS
from auto_runtime.sandbox.outcomes import (
    Cancelled,
    OutOfMemory,
    OutOfWork,
    OutputNotJson,
    OutputOutOfMemory,
    OutputTooDeep,
    OutputTooLarge,
    PastDeadline,
    Raised,
    Returned,
)
from auto_runtime.sandbox.pool import SandboxPool
from auto_runtime.sandbox.unwritable import not_json_words, too_deep_words
from auto_runtime.sandbox.workers import NoWorkerFree

ANSWER_FUEL = 250_000_000
OUTPUT_LIMIT = 1_046_528
ENTRY = "_recall_answer_entry"
"""A function appended to the module for the run: it calls `answer` with the two values of its one input."""
USED_UP = "answer used up its 250,000,000 units of work and was stopped"
TOO_LARGE = "The output is larger than the 1,046,528 bytes of JSON a run may return"


class AnswerBroke(RuntimeError):
    """The sandbox itself failed on a run: the run ends `failed`, with an incident reference."""


def view_record(row: ViewRow) -> dict[str, Any]:
    """The `view` of a run's record: where in the history the view had read to."""
    return {
        "version": row.version,
        "checkpoint": row.checkpoint,
        "checkpoint_at": row.checkpoint_at,
        "last_event": json.loads(row.last_event) if row.last_event else None,
        "folded": row.folded,
    }


def _unworkable(detail: str) -> Rejection:
    return conflict(detail, kind="unworkable")


async def checked_input(document: RecallDocument, value: Any) -> tuple[str, int] | Rejection:
    """The input's JSON and size, or its `invalid_input` refusal (as a computation function's)."""
    problem = input_problem(value)
    if problem is not None:
        return invalid_input([problem])
    text = compact_json(value)
    size = utf8_size(text)
    if size > INPUT_LIMIT:
        return invalid_input(
            [InputIssue("The input is larger than the 262,144 bytes of JSON a run may take.", "/input")]
        )
    if document.input_schema is not None:
        issues = await checked_against(as_schema(document.input_schema), value, "/input", "The input")
        if isinstance(issues, Rejection):
            return issues
        if issues:
            return invalid_input(issues)
    return text, size


async def answer_run(
    pool: SandboxPool,
    document: RecallDocument,
    row: ViewRow,
    input_json: str,
    input_bytes: int,
    *,
    started_at_ms: int,
    owner: JobOwner,
) -> RunEnding:
    """The run's ending from the view in `row` (live, or caught up with the history last read)."""
    started = time.monotonic()
    record: dict[str, Any] = {"language": "python", "sandbox": pool.engine.sandbox_name}
    if not document.has_answer:
        output: Any = json.loads(row.view)
        work = 0
        output_bytes = utf8_size(row.view)
    else:
        evaluation = Evaluation(
            source=f"{document.module}\n\ndef {ENTRY}(pair):\n    return answer(pair[0], pair[1])\n",
            first_line=document.module_first_line,
            input_json=f"[{row.view},{input_json}]",
            started_at_ms=started_at_ms,
            output_limit=OUTPUT_LIMIT,
            entry=ENTRY,
            work_fuel=ANSWER_FUEL,
        )
        try:
            outcome = await pool.run(evaluation, deadline=started + RUN_SECONDS, owner=owner)
        except NoWorkerFree as error:
            return Rejected(
                unavailable(
                    "No worker became free within the 10 seconds a run may take; "
                    f"the server runs {error.workers} at once",
                    retry_after=5,
                )
            )
        if not isinstance(outcome, Returned):
            return Rejected(_ending_of(outcome, document))
        output, work, output_bytes = outcome.output, outcome.work, outcome.output_bytes
    if output_bytes > OUTPUT_LIMIT:
        return Rejected(_unworkable(TOO_LARGE))
    if document.output_schema is not None:
        issues = await checked_against(as_schema(document.output_schema), output, "", "The output")
        if isinstance(issues, Rejection):
            return Rejected(issues)
        if issues:
            return Rejected(_unworkable(SCHEMA_REFUSES + " ".join(issue.detail for issue in issues[:3])))
    record.update(
        {
            "work": work,
            "duration_ms": int((time.monotonic() - started) * 1000),
            "input_bytes": input_bytes,
            "output_bytes": output_bytes,
            "view": view_record(row),
        }
    )
    return Succeeded(output=output, record=record)


def _ending_of(outcome: object, document: RecallDocument) -> Rejection:
    first = document.module_first_line
    if isinstance(outcome, Raised):
        text = f": {outcome.text}" if outcome.text else ""
        return _unworkable(f"Line {outcome.line or first} of answer raised {outcome.type_name}{text}")
    if isinstance(outcome, OutOfMemory):
        return _unworkable(f"Line {outcome.line or first} of answer ran out of memory: {HEAP_FULL}")
    if isinstance(outcome, OutOfWork):
        return _unworkable(USED_UP)
    if isinstance(outcome, OutputOutOfMemory):
        return _unworkable(OUTPUT_HEAP)
    if isinstance(outcome, OutputNotJson):
        return _unworkable(NOT_JSON + not_json_words(outcome.what, outcome.pointer))
    if isinstance(outcome, OutputTooDeep):
        return _unworkable(NOT_JSON + too_deep_words(outcome.pointer))
    if isinstance(outcome, OutputTooLarge):
        return _unworkable(TOO_LARGE)
    if isinstance(outcome, PastDeadline | Cancelled):
        return unavailable(PAST_TIME, retry_after=5)
    raise AnswerBroke(f"The sandbox broke: {outcome}")
