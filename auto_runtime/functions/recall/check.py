"""Saving a recall document: the three passes on a checker, as `invalid_input` refusals at `/source`."""

from __future__ import annotations

from auto_runtime.functions.computation.document import problem_details
from auto_runtime.functions.recall.document import RecallDocument, parse_document
from auto_runtime.problems import InputIssue, Rejection
from auto_runtime.sandbox.checker import (
    CHECK_TIMED_OUT,
    COMPILE_BEYOND_BOUNDS,
    Checkers,
    CheckTimedOut,
    CompileBeyondBounds,
    compile_pass,
    stopped_at_deadline,
)
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl

CheckResult = RecallDocument | Rejection


def _refusal(details: list[str]) -> Rejection:
    return Rejection(
        reason="invalid_input",
        detail=" ".join(details),
        errors=[InputIssue(detail=detail, pointer="/source") for detail in details],
    )


def check_document_now(engine: SandboxEngine, source: str, control: RunControl) -> CheckResult:
    """All three passes on this thread, stopped by `control`; raises `CheckTimedOut` past its deadline."""
    with stopped_at_deadline(control):
        parsed = parse_document(source)
    if isinstance(parsed, list):
        return _refusal(problem_details(parsed))
    try:
        problem = compile_pass(engine, parsed.module, parsed.module_first_line, control)
    except CompileBeyondBounds:
        return _refusal([COMPILE_BEYOND_BOUNDS])
    if problem is not None:
        return _refusal(problem_details([problem]))
    return parsed


async def check_document(checkers: Checkers[CheckResult], engine: SandboxEngine, source: str) -> CheckResult:
    """Check on a checker. Raises `CheckerUnavailable` when none is ready (the caller answers `unavailable`)."""
    try:
        return await checkers.check(lambda control: check_document_now(engine, source, control))
    except CheckTimedOut:
        return _refusal([CHECK_TIMED_OUT])
