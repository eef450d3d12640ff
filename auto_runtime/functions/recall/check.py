"""Saving a recall document: the computation type's three passes on a checker, with the recall parser."""

from __future__ import annotations

from auto_runtime.functions.computation.check import check_with
from auto_runtime.functions.recall.document import RecallDocument, parse_document
from auto_runtime.problems import Rejection
from auto_runtime.sandbox.checker import Checkers
from auto_runtime.sandbox.engine import SandboxEngine

CheckResult = RecallDocument | Rejection


def _module(document: RecallDocument) -> tuple[str, int]:
    return document.module, document.module_first_line


async def check_document(checkers: Checkers[CheckResult], engine: SandboxEngine, source: str) -> CheckResult:
    """Check on a checker. Raises `CheckerUnavailable` when none is ready (the caller answers `unavailable`)."""
    return await check_with(checkers, engine, source, parse_document, _module)
