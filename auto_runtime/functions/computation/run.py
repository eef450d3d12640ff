"""Running a computation: the input checked, `main` called on the pool, the output checked, the record.

Every ending of the spec's "How a run ends" is a `Succeeded` or a `Rejection` here; a cancelled caller
sees Trio's cancellation. Same input, same output and same work.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from auto_runtime.functions.computation.document import ComputationDocument
from auto_runtime.functions.shapes import SHAPES
from auto_runtime.problems import InputIssue as Issue
from auto_runtime.problems import Rejection
from auto_runtime.sandbox.evaluate import Evaluation
from auto_runtime.sandbox.fair_queue import UNATTRIBUTED, JobOwner
from auto_runtime.sandbox.json_values import JsonValue, compact_json, pointer_of, utf8_size
from auto_runtime.sandbox.limits import MAX_DEPTH, RUN_SECONDS
from auto_runtime.sandbox.outcomes import (
    Broken,
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
from auto_runtime.schema_issues import check_off_the_loop

OUTPUT_LIMIT = 1_048_320
INPUT_LIMIT = 256 * 1024
PAST_TIME = "The run did not finish within the 10 seconds a run may take"
USED_UP = "The program used up its 10,000,000,000 units of work and was stopped"
OUTPUT_HEAP = "The output could not be written within the run's heap of 240 MiB"
HEAP_FULL = "a run's heap holds 240 MiB, and nothing is freed during a run"
TOO_LARGE = "The output is larger than the 1,048,320 bytes of JSON a run may return"
NOT_JSON = "The output cannot be written as JSON: "
SCHEMA_REFUSES = "The output does not match the output schema: "


@dataclass(frozen=True)
class Succeeded:
    output: JsonValue
    record: dict[str, Any]


def input_problem(value: object) -> Issue | None:
    """Depth past 512, a non-finite number, a lone surrogate: the first, with its pointer."""
    stack: list[tuple[object, list[str | int], int]] = [(value, [], 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, list | dict):
            if depth + 1 > MAX_DEPTH:
                return Issue("The input nests deeper than 512 levels.", "/input")
            children = enumerate(item) if isinstance(item, list) else item.items()
            for key, child in reversed(list(children)):
                if isinstance(key, str) and _lone_surrogate(key):
                    return Issue("The input holds text that is not valid Unicode.", "/input" + pointer_of(path))
                stack.append((child, [*path, key], depth + 1))
        elif isinstance(item, float) and not math.isfinite(item):
            return Issue("The input holds a number too large for a double.", "/input" + pointer_of(path))
        elif isinstance(item, str) and _lone_surrogate(item):
            return Issue("The input holds text that is not valid Unicode.", "/input" + pointer_of(path))
    return None


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def invalid_input(issues: list[Issue]) -> Rejection:
    """The `invalid_input` rejection of these issues."""
    return Rejection(reason="invalid_input", detail=" ".join(i.detail for i in issues), errors=issues)


def _unworkable(detail: str) -> Rejection:
    return Rejection(reason="conflict", kind="unworkable", detail=detail)


def _unavailable(detail: str) -> Rejection:
    return Rejection(reason="unavailable", detail=detail, retry_after=5)


async def run_computation(
    pool: SandboxPool,
    document: ComputationDocument,
    input_value: JsonValue,
    *,
    started_at_ms: int,
    started_monotonic: float | None = None,
    owner: JobOwner = UNATTRIBUTED,
) -> Succeeded | Rejection:
    """One run of `document` with `input_value`; `started_at_ms` is the run's start the clock reads. It waits
    for a worker in `owner`'s place of the pool's fair queue (the org and playbook the run belongs to)."""
    started = started_monotonic if started_monotonic is not None else time.monotonic()
    problem = input_problem(input_value)
    if problem is not None:
        return invalid_input([problem])
    input_json = compact_json(input_value)
    input_bytes = utf8_size(input_json)
    if input_bytes > INPUT_LIMIT:
        return invalid_input([Issue("The input is larger than the 262,144 bytes of JSON a run may take.", "/input")])
    if document.input_schema is not None:
        issues = await checked_against(as_schema(document.input_schema), input_value, "/input", "The input")
        if isinstance(issues, Rejection):
            return issues
        if issues:
            return invalid_input(issues)
    evaluation = Evaluation(
        source=document.program,
        first_line=document.program_first_line,
        input_json=input_json,
        started_at_ms=started_at_ms,
        output_limit=OUTPUT_LIMIT,
    )
    try:
        outcome = await pool.run(evaluation, deadline=started + RUN_SECONDS, owner=owner)
    except NoWorkerFree as error:
        return _unavailable(
            f"No worker became free within the 10 seconds a run may take; the server runs {error.workers} at once"
        )
    if isinstance(outcome, Returned):
        if document.output_schema is not None:
            issues = await checked_against(as_schema(document.output_schema), outcome.output, "", "The output")
            if isinstance(issues, Rejection):
                return issues
            if issues:
                return _unworkable(SCHEMA_REFUSES + " ".join(issue.detail for issue in issues[:3]))
        return _checked_output(pool, document, outcome, input_bytes, started)
    if isinstance(outcome, Raised):
        at = outcome.line if outcome.line is not None else document.program_first_line
        text = f": {outcome.text}" if outcome.text else ""
        return _unworkable(f"Line {at} of the program raised {outcome.type_name}{text}")
    if isinstance(outcome, OutOfMemory):
        at = outcome.line if outcome.line is not None else document.program_first_line
        return _unworkable(f"Line {at} of the program ran out of memory: {HEAP_FULL}")
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
        return _unavailable(PAST_TIME)
    assert isinstance(outcome, Broken)
    return Rejection(reason="internal", detail=f"The sandbox broke: {outcome.reason}")


async def checked_against(schema: dict[str, Any], value: JsonValue, base: str, root: str) -> list[Issue] | Rejection:
    """The schema check of a value, on a worker thread: it takes at most the budget of `user_schemas`
    (a million keywords, a few seconds), which the event loop must not spend."""
    try:
        return await check_off_the_loop(schema, value, base, root)
    except Rejection as unusable:
        return unusable


def as_schema(schema: dict[str, Any] | bool) -> dict[str, Any]:
    """A document's schema as an object (`true` accepts all, `false` refuses all)."""
    if isinstance(schema, bool):
        return {} if schema else {"not": {}}
    return schema


def _checked_output(
    pool: SandboxPool, document: ComputationDocument, returned: Returned, input_bytes: int, started: float
) -> Succeeded | Rejection:
    if document.shape is not None and isinstance(returned.output, dict):
        failed = SHAPES[document.shape].rules(returned.output)
        if failed is not None:
            words, pointer = failed
            return _unworkable(
                f"The output does not keep the rules of the {document.shape} shape: {words} at {pointer}"
            )
    record = {
        "language": "python",
        "sandbox": pool.engine.sandbox_name,
        "work": returned.work,
        "duration_ms": int((time.monotonic() - started) * 1000),
        "input_bytes": input_bytes,
        "output_bytes": returned.output_bytes,
    }
    return Succeeded(output=returned.output, record=record)


def describe(document: ComputationDocument) -> dict[str, Any]:
    """What a saved definition shows: media type, description, schemas, and `details.shape` with a shape."""
    described: dict[str, Any] = {
        "media_type": "text/markdown",
        "description": document.description,
        "input_schema": document.input_schema,
        "output_schema": document.output_schema,
    }
    if document.details is not None:
        described["details"] = document.details
    return described
