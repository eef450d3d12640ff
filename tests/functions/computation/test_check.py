"""Saving through the checkers: the MicroPython pass, the 2-second rule and `unavailable`."""

from __future__ import annotations

import threading

import pytest
import trio

from auto_runtime.functions.computation.check import CheckResult, check_document
from auto_runtime.functions.computation.document import ComputationDocument
from auto_runtime.problems import InputIssue as Issue
from auto_runtime.problems import Rejection
from auto_runtime.sandbox.checker import CHECK_TIMED_OUT, Checkers, CheckerUnavailable
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl

HEAD = "---\nlanguage: python\n---\n"


async def test_a_good_document_passes_all_three_passes(engine: SandboxEngine) -> None:
    checkers: Checkers[CheckResult] = Checkers()
    try:
        result = await check_document(checkers, engine, HEAD + "def main(input):\n    return input\n")
        assert isinstance(result, ComputationDocument)
    finally:
        checkers.close()


async def test_the_sandbox_pass_reports_the_first_line_it_cannot_read(engine: SandboxEngine) -> None:
    checkers: Checkers[CheckResult] = Checkers()
    source = HEAD + "def main(input):\n    with (input as b, input as d):\n        pass\n    return 1\n"
    try:
        result = await check_document(checkers, engine, source)
    finally:
        checkers.close()
    detail = "Line 5: The sandbox's Python cannot read this line: invalid syntax"
    assert result == Rejection(reason="invalid_input", detail=detail, errors=[Issue(detail, "/source")])


async def test_a_check_past_its_time_is_refused_and_its_checker_replaced(engine: SandboxEngine) -> None:
    checkers: Checkers[CheckResult] = Checkers(count=1, seconds=0.0)
    try:
        result = await check_document(checkers, engine, HEAD + "def main(input):\n    return input\n")
        assert result == Rejection(
            reason="invalid_input", detail=CHECK_TIMED_OUT, errors=[Issue(CHECK_TIMED_OUT, "/source")]
        )
        assert CHECK_TIMED_OUT == (
            "The check of the program did not finish within 2 seconds; make the program smaller or simpler"
        )
        assert checkers.pool.ended == ["job"]
        assert checkers.pool.started == 2
    finally:
        checkers.close()


async def test_no_checker_ready_is_unavailable(engine: SandboxEngine) -> None:
    checkers: Checkers[CheckResult] = Checkers(count=2)
    release = threading.Event()
    taken = threading.Semaphore(0)

    def hold(_control: RunControl) -> CheckResult:
        taken.release()
        release.wait()
        return Rejection(reason="invalid_input", detail="held")

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(checkers.check, hold)
            nursery.start_soon(checkers.check, hold)
            for _ in range(2):
                await trio.to_thread.run_sync(taken.acquire)
            with pytest.raises(CheckerUnavailable):
                await check_document(checkers, engine, HEAD + "def main(input):\n    return input\n")
            release.set()
    finally:
        checkers.close()
