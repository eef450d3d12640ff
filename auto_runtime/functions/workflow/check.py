"""Saving a workflow document: the walk of every field, then the expressions compiled by the sandbox.

The sandbox's MicroPython compiles every expression of the document, not running any, in one fresh
instance, and only when the walk found nothing (spec 4.2). The check runs on a save-time checker within
2 seconds, each pass stopped when they pass; past them it is refused with one entry without a line.
"""

from __future__ import annotations

from auto_runtime.functions.workflow.document import Expression, WorkflowDocument, check_document
from auto_runtime.functions.workflow.expressions import SANDBOX_CANNOT_READ
from auto_runtime.functions.workflow.issues import Issue, refusal
from auto_runtime.problems import InputIssue, Rejection, invalid_input
from auto_runtime.sandbox.checker import Checkers, CheckTimedOut, CompileBeyondBounds, compile_pass, stopped_at_deadline
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.program_rules import SANDBOX_CANNOT_READ as PROGRAM_CANNOT_READ

CHECK_TIMED_OUT = "The check of the expressions did not finish within 2 seconds"
COMPILE_BEYOND_BOUNDS = (
    "The sandbox's Python could not compile the expressions within the check's bounds; make them smaller or simpler"
)

CheckResult = WorkflowDocument | Rejection


def expressions_program(expressions: tuple[Expression, ...]) -> tuple[str, list[int]]:
    """One program holding every expression as a function's return value, and the line each text starts on."""
    lines: list[str] = []
    starts: list[int] = []
    for number, expression in enumerate(expressions):
        lines.append(f"def _expression_{number}():")
        lines.append("    return (")
        starts.append(len(lines) + 1)
        lines.extend(expression.text.split("\n"))
        lines.append(")")
    return "\n".join(lines) + "\n", starts


def _compile_issue(document: WorkflowDocument, line: int, message: str, starts: list[int]) -> Issue:
    index = max((i for i, start in enumerate(starts) if start <= line), default=0)
    expression = document.expressions[index]
    within = min(line - starts[index] + 1, expression.text.count("\n") + 1)
    words = SANDBOX_CANNOT_READ + message
    if within > 1:
        words += f" (line {within} of the expression)"
    line_at, column_at = document.marks.get(expression.pointer, (1, 1))
    return Issue(line_at, column_at, expression.pointer, words)


def check_now(engine: SandboxEngine, source: str, max_duration_ms: int, control: RunControl) -> CheckResult:
    """Every pass on this thread; raises `CheckTimedOut` past the control's deadline, the Python passes stopped
    there as the sandbox's is."""
    with stopped_at_deadline(control):
        checked = check_document(source, max_duration_ms)
    if isinstance(checked, list):
        return refusal(checked)
    if checked.expressions:
        program, starts = expressions_program(checked.expressions)
        try:
            problem = compile_pass(engine, program, 1, control)
        except CompileBeyondBounds:
            return invalid_input([InputIssue(COMPILE_BEYOND_BOUNDS, "/source")])
        if problem is not None:
            line, _column, sentence = problem
            message = sentence.removeprefix(PROGRAM_CANNOT_READ)
            return refusal([_compile_issue(checked, line, message, starts)])
    return checked


async def check_workflow(
    checkers: Checkers[CheckResult], engine: SandboxEngine, source: str, max_duration_ms: int
) -> CheckResult:
    """Check on a checker; raises `CheckerUnavailable` when none is ready."""
    try:
        return await checkers.check(lambda control: check_now(engine, source, max_duration_ms, control))
    except CheckTimedOut:
        return invalid_input([InputIssue(CHECK_TIMED_OUT, "/source")])
