"""Saving a document whose program runs in the sandbox: the three passes on a checker, as `invalid_input`
refusals at `/source`. Computation documents check here (`check_document`); a recall document checks with the
same passes and its own parser (`check_with`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from auto_runtime.functions.computation.document import ComputationDocument, parse_document, problem_details
from auto_runtime.problems import InputIssue as Issue
from auto_runtime.problems import Rejection
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
from auto_runtime.sandbox.program_rules import Problem

Parsed = TypeVar("Parsed")
CheckResult = ComputationDocument | Rejection
ProgramOf = Callable[[Parsed], tuple[str, int]]
"""The program a parsed document runs and the line of the source it starts on."""


def _refusal(details: list[str]) -> Rejection:
    return Rejection(
        reason="invalid_input",
        detail=" ".join(details),
        errors=[Issue(detail=detail, pointer="/source") for detail in details],
    )


def check_now_with(
    engine: SandboxEngine,
    source: str,
    control: RunControl,
    parse: Callable[[str], Parsed | list[Problem]],
    program_of: ProgramOf[Parsed],
) -> Parsed | Rejection:
    """All three passes on this thread, stopped by `control`; raises `CheckTimedOut` past its deadline."""
    with stopped_at_deadline(control):
        parsed = parse(source)
    if isinstance(parsed, list):
        return _refusal(problem_details(parsed))
    program, first_line = program_of(parsed)
    try:
        problem = compile_pass(engine, program, first_line, control)
    except CompileBeyondBounds:
        return _refusal([COMPILE_BEYOND_BOUNDS])
    if problem is not None:
        return _refusal(problem_details([problem]))
    return parsed


async def check_with(
    checkers: Checkers[Parsed | Rejection],
    engine: SandboxEngine,
    source: str,
    parse: Callable[[str], Parsed | list[Problem]],
    program_of: ProgramOf[Parsed],
) -> Parsed | Rejection:
    """Check on a checker. Raises `CheckerUnavailable` when none is ready (the caller answers `unavailable`)."""
    try:
        return await checkers.check(lambda control: check_now_with(engine, source, control, parse, program_of))
    except CheckTimedOut:
        return _refusal([CHECK_TIMED_OUT])


def _computation_program(document: ComputationDocument) -> tuple[str, int]:
    return document.program, document.program_first_line


def check_document_now(engine: SandboxEngine, source: str, control: RunControl) -> CheckResult:
    """A computation document's three passes on this thread (`check_now_with`)."""
    return check_now_with(engine, source, control, parse_document, _computation_program)


async def check_document(checkers: Checkers[CheckResult], engine: SandboxEngine, source: str) -> CheckResult:
    """A computation document's check on a checker (`check_with`)."""
    return await check_with(checkers, engine, source, parse_document, _computation_program)
