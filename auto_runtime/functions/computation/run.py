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
from auto_runtime.functions.computation.endings import RunWords, no_worker_free, sandbox_ending, unworkable
from auto_runtime.functions.shapes import SHAPES
from auto_runtime.json_pointers import pointer_of
from auto_runtime.problems import InputIssue as Issue
from auto_runtime.problems import Rejection
from auto_runtime.sandbox.evaluate import Evaluation
from auto_runtime.sandbox.fair_queue import UNATTRIBUTED, JobOwner
from auto_runtime.sandbox.json_values import JsonValue, compact_json, utf8_size
from auto_runtime.sandbox.limits import MAX_DEPTH, RUN_SECONDS
from auto_runtime.sandbox.outcomes import Broken, Returned
from auto_runtime.sandbox.pool import SandboxPool
from auto_runtime.sandbox.workers import NoWorkerFree
from auto_runtime.schema_issues import check_off_the_loop
from auto_runtime.text_rule import is_unicode, not_unicode_issue

OUTPUT_LIMIT = 1_048_320
INPUT_LIMIT = 256 * 1024
SCHEMA_REFUSES = "The output does not match the output schema: "
WORDS = RunWords(
    code="the program",
    used_up="The program used up its 10,000,000,000 units of work and was stopped",
    too_large="The output is larger than the 1,048,320 bytes of JSON a run may return",
)


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
                if isinstance(key, str) and not is_unicode(key):
                    return not_unicode_issue(["input", *path, key])
                stack.append((child, [*path, key], depth + 1))
        elif isinstance(item, float) and not math.isfinite(item):
            return Issue("The input holds a number too large for a double.", "/input" + pointer_of(path))
        elif isinstance(item, str) and not is_unicode(item):
            return not_unicode_issue(["input", *path])
    return None


def invalid_input(issues: list[Issue]) -> Rejection:
    """The `invalid_input` rejection of these issues."""
    return Rejection(reason="invalid_input", detail=" ".join(i.detail for i in issues), errors=issues)


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
    checked = await checked_input(document.input_schema, input_value)
    if isinstance(checked, Rejection):
        return checked
    input_json, input_bytes = checked
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
        return no_worker_free(error)
    if isinstance(outcome, Returned):
        refused = await output_refusal(document.output_schema, outcome.output)
        if refused is not None:
            return refused
        return _checked_output(pool, document, outcome, input_bytes, started)
    if isinstance(outcome, Broken):
        return Rejection(reason="internal", detail=f"The sandbox broke: {outcome.reason}")
    return sandbox_ending(outcome, document.program_first_line, WORDS)


async def checked_input(schema: dict[str, Any] | bool | None, value: JsonValue) -> tuple[str, int] | Rejection:
    """The input's compact JSON and its size in bytes, or its `invalid_input` refusal: the limits of a run's
    input (depth, numbers, Unicode, 262,144 bytes), then the input schema where there is one."""
    problem = input_problem(value)
    if problem is not None:
        return invalid_input([problem])
    text = compact_json(value)
    size = utf8_size(text)
    if size > INPUT_LIMIT:
        return invalid_input([Issue("The input is larger than the 262,144 bytes of JSON a run may take.", "/input")])
    if schema is not None:
        issues = await checked_against(as_schema(schema), value, "/input", "The input")
        if isinstance(issues, Rejection):
            return issues
        if issues:
            return invalid_input(issues)
    return text, size


async def output_refusal(schema: dict[str, Any] | bool | None, output: JsonValue) -> Rejection | None:
    """Why the output schema refuses `output` (`unworkable`, the first three issues), or why the schema cannot
    be used; `None` when there is no schema or it accepts the output."""
    if schema is None:
        return None
    issues = await checked_against(as_schema(schema), output, "", "The output")
    if isinstance(issues, Rejection):
        return issues
    if issues:
        return unworkable(SCHEMA_REFUSES + " ".join(issue.detail for issue in issues[:3]))
    return None


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
            return unworkable(f"The output does not keep the rules of the {document.shape} shape: {words} at {pointer}")
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
