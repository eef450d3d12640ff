"""Every ending of "How a run ends", the record, and determinism, through the pool."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from functools import partial

import pytest
import trio

from auto_runtime.functions.computation.document import ComputationDocument, parse_document
from auto_runtime.functions.computation.run import Succeeded, run_computation
from auto_runtime.problems import InputIssue as Issue
from auto_runtime.problems import Rejection
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.pool import SandboxPool
from tests.conformance.computation.example import EXAMPLE, EXAMPLE_OUTPUT, INVOICES

START_MS = 1_767_225_600_000


@pytest.fixture
async def pool(engine: SandboxEngine) -> AsyncIterator[SandboxPool]:
    sandbox_pool = SandboxPool(engine, 2)
    yield sandbox_pool
    sandbox_pool.close()


def document(program: str, front_matter: str = "") -> ComputationDocument:
    parsed = parse_document(f"---\nlanguage: python\n{front_matter}---\n{program}")
    assert isinstance(parsed, ComputationDocument), parsed
    return parsed


async def run(pool: SandboxPool, program: str, value: object = None, front_matter: str = "") -> Succeeded | Rejection:
    return await run_computation(pool, document(program, front_matter), value, started_at_ms=START_MS)  # type: ignore[arg-type]


def unworkable(detail: str) -> Rejection:
    return Rejection(reason="conflict", kind="unworkable", detail=detail)


async def test_the_example_and_its_record(pool: SandboxPool) -> None:
    parsed = parse_document(EXAMPLE)
    assert isinstance(parsed, ComputationDocument)
    first = await run_computation(pool, parsed, INVOICES, started_at_ms=START_MS)  # type: ignore[arg-type]
    second = await run_computation(pool, parsed, INVOICES, started_at_ms=START_MS)  # type: ignore[arg-type]
    assert isinstance(first, Succeeded) and isinstance(second, Succeeded)
    assert json.dumps(first.output, separators=(",", ":"), ensure_ascii=False) == EXAMPLE_OUTPUT
    assert first.output == second.output
    assert first.record["work"] == second.record["work"] > 0
    record = first.record
    assert record["language"] == "python"
    assert record["sandbox"] == "06338c955b03/wasmtime-50.0.1"
    assert record["input_bytes"] == len(json.dumps(INVOICES, separators=(",", ":")))
    assert record["output_bytes"] == len(EXAMPLE_OUTPUT)
    assert isinstance(record["duration_ms"], int)
    assert len(json.dumps(record, separators=(",", ":"))) < 256


async def test_input_refused_by_its_schema_at_pointers(pool: SandboxPool) -> None:
    parsed = parse_document(EXAMPLE)
    assert isinstance(parsed, ComputationDocument)
    bad = {"invoices": [{"customer": "x", "amount_cents": -1}]}
    result = await run_computation(pool, parsed, bad, started_at_ms=START_MS)
    assert isinstance(result, Rejection) and result.reason == "invalid_input"
    assert result.errors == [
        Issue("invoices, then item 1: expected the field days_overdue.", "/input/invoices/0"),
        Issue("invoices, then item 1, then amount_cents: expected at least 0.", "/input/invoices/0/amount_cents"),
    ]
    missing = await run_computation(pool, parsed, {}, started_at_ms=START_MS)
    assert isinstance(missing, Rejection)
    assert missing.errors == [Issue("The input: expected the field invoices.", "/input")]


async def test_input_depth_numbers_and_text(pool: SandboxPool) -> None:
    deep: object = 1
    for _ in range(513):
        deep = [deep]
    result = await run(pool, "def main(input):\n    return 1\n", deep)
    assert isinstance(result, Rejection) and result.reason == "invalid_input"
    assert [issue.pointer for issue in result.errors] == ["/input"]
    not_finite = await run(pool, "def main(input):\n    return 1\n", {"a": [1, float("inf")]})
    assert isinstance(not_finite, Rejection) and not_finite.errors[0].pointer == "/input/a/1"
    surrogate = await run(pool, "def main(input):\n    return 1\n", {"t": "\ud800"})
    assert isinstance(surrogate, Rejection) and surrogate.errors[0].pointer == "/input/t"
    large = await run(pool, "def main(input):\n    return 1\n", "x" * 262_143)
    assert isinstance(large, Rejection) and large.reason == "invalid_input"


async def test_input_reaches_the_program_exactly(pool: SandboxPool) -> None:
    value = {"big": 2**100, "float": 0.1, "tiny": 5e-324, "text": "é😀\n", "list": [True, None]}
    program = (
        "def main(input):\n    rest = {k: input[k] for k in input if k != 'big'}\n"
        "    return [str(input['big']), input['float'] * 3, rest]\n"
    )
    result = await run(pool, program, value)
    assert isinstance(result, Succeeded)
    rest = {"float": 0.1, "tiny": 5e-324, "text": "é😀\n", "list": [True, None]}
    assert result.output == [str(2**100), 0.30000000000000004, rest]


async def test_the_program_raised(pool: SandboxPool) -> None:
    assert await run(pool, "def main(input):\n    raise ValueError('no invoices')\n") == unworkable(
        "Line 5 of the program raised ValueError: no invoices"
    )
    assert await run(pool, "def main(input):\n    return 1 // 0\n") == unworkable(
        "Line 5 of the program raised ZeroDivisionError: divide by zero"
    )
    assert await run(pool, "def main(input):\n    raise KeyError\n") == unworkable(
        "Line 5 of the program raised KeyError"
    )
    program = "def helper(x):\n    return int(x)\n\ndef main(input):\n    return helper('x' * 2000)\n"
    result = await run(pool, program)
    assert isinstance(result, Rejection)
    assert result.detail.startswith("Line 5 of the program raised ValueError: invalid syntax for integer")
    assert result.detail.endswith("…")
    assert len(result.detail.split(": ", 1)[1].encode()) == 1024 + len("…".encode())


async def test_top_level_arithmetic_that_raises(pool: SandboxPool) -> None:
    assert await run(pool, "X = 1 / 0\ndef main(input):\n    return X\n") == unworkable(
        "Line 4 of the program raised ZeroDivisionError: divide by zero"
    )


async def test_out_of_memory(pool: SandboxPool) -> None:
    program = "def main(input):\n    kept = []\n    while True:\n        kept.append(bytearray(20000000))\n"
    assert await run(pool, program) == unworkable(
        "Line 7 of the program ran out of memory: a run's heap holds 240 MiB, and nothing is freed during a run"
    )


async def test_the_heap_ran_out_while_writing_the_output(pool: SandboxPool) -> None:
    program = (
        "def main(input):\n    out = list(range(300000))\n    kept = []\n"
        "    for size in (20000000, 1000000, 100000, 10000, 1000):\n        try:\n            while True:\n"
        "                kept.append(bytearray(size))\n"
        "        except MemoryError:\n            pass\n    return out\n"
    )
    assert await run(pool, program) == unworkable("The output could not be written within the run's heap of 240 MiB")


async def test_used_up_its_work(pool: SandboxPool) -> None:
    assert await run(pool, "def main(input):\n    while True:\n        pass\n") == unworkable(
        "The program used up its 10,000,000,000 units of work and was stopped"
    )


async def test_output_not_json(pool: SandboxPool) -> None:
    program = "def main(input):\n    return {'lines': [{'tags': {'a'}}]}\n"
    assert await run(pool, program) == unworkable(
        "The output cannot be written as JSON: a value of type set at /lines/0/tags"
    )
    program = "def main(input):\n    a = [1]\n    a.append(a)\n    return {'a': a}\n"
    assert await run(pool, program) == unworkable(
        "The output cannot be written as JSON: a container that contains itself at /a/1"
    )
    assert await run(pool, "def main(input):\n    return float('nan')\n") == unworkable(
        "The output cannot be written as JSON: a float that is not finite at the top"
    )
    assert await run(pool, "def main(input):\n    return [2 ** 53]\n") == unworkable(
        "The output cannot be written as JSON: an integer outside ±9,007,199,254,740,991 at /0"
    )


async def test_output_too_deep_and_too_large(pool: SandboxPool) -> None:
    program = "def main(input):\n    v = []\n    for i in range(600):\n        v = [v]\n    return {'v': v}\n"
    assert await run(pool, program) == unworkable(
        "The output cannot be written as JSON: it nests deeper than 512 levels at /v" + "/0" * 511
    )
    assert await run(pool, "def main(input):\n    return 'x' * 1048319\n") == unworkable(
        "The output is larger than the 1,048,320 bytes of JSON a run may return"
    )
    fits = await run(pool, "def main(input):\n    return 'x' * 1048318\n")
    assert isinstance(fits, Succeeded) and fits.record["output_bytes"] == 1_048_320


async def test_output_schema_refuses(pool: SandboxPool) -> None:
    schema = "output:\n  schema:\n    type: object\n    required: [a, b, c, d]\n"
    assert await run(pool, "def main(input):\n    return {}\n", front_matter=schema) == unworkable(
        "The output does not match the output schema: The output: expected the field a. "
        "The output: expected the field b. The output: expected the field c."
    )


async def test_output_shape_rules(pool: SandboxPool) -> None:
    shape = "output:\n  shape: series\n"
    good = "{'period': 'quarter', 'lines': [{'name': 'plan', 'points': [{'period': '2026-Q1', 'value': 1}]}]}"
    assert isinstance(await run(pool, f"def main(input):\n    return {good}\n", front_matter=shape), Succeeded)
    bad = "{'period': 'day', 'lines': [{'name': 'plan', 'points': [{'period': '2026-02-30', 'value': 1}]}]}"
    result = await run(pool, f"def main(input):\n    return {bad}\n", front_matter=shape)
    assert isinstance(result, Rejection) and result.kind == "unworkable"
    assert result.detail.endswith("at /lines/0/points/0/period")


async def test_past_ten_seconds_is_unavailable(pool: SandboxPool) -> None:
    parsed = document("def main(input):\n    while True:\n        pass\n")
    result = await run_computation(
        pool, parsed, None, started_at_ms=START_MS, started_monotonic=time.monotonic() - 9.95
    )
    assert result == Rejection(
        reason="unavailable",
        detail="The run did not finish within the 10 seconds a run may take",
        retry_after=5,
    )


async def test_no_worker_free_is_unavailable(engine: SandboxEngine) -> None:
    busy = SandboxPool(engine, 1, wait_seconds=0.05)
    forever = document("def main(input):\n    while True:\n        pass\n")
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(run_computation, busy, forever, None, started_at_ms=START_MS))
            for _ in range(10_000):
                if busy.workers.live == 1 and not busy.workers._idle:
                    break
                await trio.sleep(0.01)
            result = await run_computation(busy, document("def main(input):\n    return 1\n"), None, started_at_ms=0)
            nursery.cancel_scope.cancel()
    finally:
        busy.close()
    assert result == Rejection(
        reason="unavailable",
        detail="No worker became free within the 10 seconds a run may take; the server runs 1 at once",
        retry_after=5,
    )


async def test_the_clock_is_the_runs_start(pool: SandboxPool) -> None:
    program = (
        "import time\ndef main(input):\n    t = time.gmtime()\n"
        "    return ['%04d-%02d-%02dT%02d:%02d:%02dZ' % t[:6], time.time() == 1767225600.0]\n"
    )
    result = await run(pool, program)
    assert isinstance(result, Succeeded)
    assert result.output == ["2026-01-01T00:00:00Z", True]
