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

from auto_runtime.functions.computation.endings import RunWords, no_worker_free, sandbox_ending, unworkable
from auto_runtime.functions.computation.run import output_refusal
from auto_runtime.functions.function_type import Rejected, RunEnding, Succeeded
from auto_runtime.functions.recall.document import RecallDocument
from auto_runtime.ledger.recall_views import ViewRow
from auto_runtime.sandbox.evaluate import Evaluation
from auto_runtime.sandbox.fair_queue import JobOwner
from auto_runtime.sandbox.json_values import utf8_size
from auto_runtime.sandbox.limits import RUN_SECONDS
from auto_runtime.sandbox.outcomes import Broken, Returned
from auto_runtime.sandbox.pool import SandboxPool
from auto_runtime.sandbox.workers import NoWorkerFree

ANSWER_FUEL = 250_000_000
OUTPUT_LIMIT = 1_046_528
ENTRY = "_recall_answer_entry"
"""A function appended to the module for the run: it calls `answer` with the two values of its one input."""
WORDS = RunWords(
    code="answer",
    used_up="answer used up its 250,000,000 units of work and was stopped",
    too_large="The output is larger than the 1,046,528 bytes of JSON a run may return",
)


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
            return Rejected(no_worker_free(error))
        if isinstance(outcome, Broken):
            raise AnswerBroke(f"The sandbox broke: {outcome}")
        if not isinstance(outcome, Returned):
            return Rejected(sandbox_ending(outcome, document.module_first_line, WORDS))
        output, work, output_bytes = outcome.output, outcome.work, outcome.output_bytes
    if output_bytes > OUTPUT_LIMIT:
        return Rejected(unworkable(WORDS.too_large))
    refused = await output_refusal(document.output_schema, output)
    if refused is not None:
        return Rejected(refused)
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
