"""The sandbox evaluator: one instance per input, values as JSON both ways, errors and bounds (spec 4.3-4.6)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from auto_runtime.functions.workflow.engine.evaluation import Failed, Place
from auto_runtime.functions.workflow.engine.sandbox_evaluator import SandboxEvaluator, launch_on_a_thread
from auto_runtime.sandbox.engine import SandboxEngine


@pytest.fixture
def counted(engine: SandboxEngine) -> Iterator[tuple[SandboxEvaluator, list[int]]]:
    launches = [0]

    def launch(job: Callable[[], None]) -> None:
        launches[0] += 1
        launch_on_a_thread(job)

    evaluator = SandboxEvaluator(engine, 1_790_000_000_000, launch)
    yield evaluator, launches
    evaluator.close()


def test_one_instance_serves_every_place_of_an_input(counted: tuple[SandboxEvaluator, list[int]]) -> None:
    evaluator, launches = counted
    assert launches == [0]
    assert evaluator.evaluate(Place(('data["a"] + 1', '{"z": 1, "a": [1, 2.5]}'), {"data": {"a": 41}})) == [
        42,
        {"a": [1, 2.5], "z": 1},
    ]
    assert evaluator.evaluate(Place(("data",), {"data": [None, True, "é"]}, condition=True)) == [True]
    assert evaluator.evaluate(Place(("10 / 2", "7 // 2", "{}"), {})) == [5.0, 3, {}]
    assert evaluator.evaluate(Place(("[]",), {}, condition=True)) == [False]
    assert launches == [1]


def test_an_exception_is_an_expression_error(counted: tuple[SandboxEvaluator, list[int]]) -> None:
    evaluator, launches = counted
    assert evaluator.evaluate(Place(('data["lines"]', "1"), {"data": {}})) == Failed(
        "expression", 400, "An expression failed", 'data["lines"]: KeyError: lines'
    )
    assert evaluator.evaluate(Place(("{1, 2}",), {})) == Failed(
        "expression",
        400,
        "An expression failed",
        "{1, 2}: The value cannot be written as JSON: a value of type set at the top",
    )
    recursion = "(f := lambda n: 0 if n == 0 else 1 + f(n - 1))(100000)"
    assert evaluator.evaluate(Place((recursion,), {})) == Failed(
        "expression", 400, "An expression failed", f"{recursion}: RuntimeError: maximum recursion depth exceeded"
    )
    assert evaluator.evaluate(Place(("2 ** 60",), {})) == Failed(
        "expression",
        400,
        "An expression failed",
        "2 ** 60: The value cannot be written as JSON: an integer outside ±9,007,199,254,740,991 at the top",
    )
    assert launches == [1]


def test_a_value_that_is_not_json_is_named_in_the_computation_pages_words(
    counted: tuple[SandboxEvaluator, list[int]],
) -> None:
    """README settled point 19: `W at P` and `it nests deeper than 512 levels at P`, P `the top` for the
    value itself, as a computation's output is refused. The detail is cut at 1,000 characters (spec 4.6)."""
    evaluator, _launches = counted
    deepest: object = []
    for _ in range(511):
        deepest = [deepest]
    cases = {
        '{"a": [1, {2}]}': "a value of type set at /a/1",
        '{"a~/b": float("nan")}': "a float that is not finite at /a~0~1b",
        "[data]": "it nests deeper than 512 levels at " + "/0" * 512,
        "[[data]]": "it nests deeper than 512 levels at " + "/0" * 512,
    }
    for source, words in cases.items():
        detail = f"{source}: The value cannot be written as JSON: {words}"
        assert evaluator.evaluate(Place((source,), {"data": deepest})) == Failed(
            "expression", 400, "An expression failed", detail[:1000]
        )
    assert evaluator.evaluate(Place(("data",), {"data": deepest})) == [deepest]


def test_a_bound_stops_the_instance_and_the_next_place_starts_another(
    counted: tuple[SandboxEvaluator, list[int]],
) -> None:
    evaluator, launches = counted
    assert evaluator.evaluate(Place(("sum(range(10**9))",), {})) == Failed(
        "runtime",
        500,
        "An expression passed a bound of the sandbox",
        "sum(range(10**9)): it used more than its 250,000,000 units of work",
    )
    assert evaluator.evaluate(Place(("[1] * 100000000",), {})) == Failed(
        "runtime",
        500,
        "An expression passed a bound of the sandbox",
        "[1] * 100000000: it used more than the input's 64 MiB of memory",
    )
    assert evaluator.evaluate(Place(("1 + 1",), {})) == [2]
    assert launches == [3]


def test_the_clock_is_the_input_time_and_nothing_else_is_reachable(
    counted: tuple[SandboxEvaluator, list[int]],
) -> None:
    evaluator, _launches = counted
    failed = evaluator.evaluate(Place(("open('x')",), {}))
    assert isinstance(failed, Failed) and failed.detail.startswith("open('x'): NameError")


def test_long_strings_are_read_whole_wherever_they_stand(counted: tuple[SandboxEvaluator, list[int]]) -> None:
    """A value's strings longer than 1,024 characters travel as text beside its JSON and are put back where
    they stood: at the top, in a list, in an object, next to short strings and to keys that look alike."""
    evaluator, _launches = counted
    long_a, long_e = "a" * 5000, "é" * 3000
    value = {"top": [long_a, "short", {"inner": long_e, "n": None}], "k": long_a, "null": None}
    assert evaluator.evaluate(Place(("data",), {"data": value})) == [value]
    assert evaluator.evaluate(Place(("len(data)", "data[-3:]"), {"data": long_e + "xyz"})) == [3003, "xyz"]
    assert evaluator.evaluate(Place(("data[0] == data[1]",), {"data": [long_a, long_a]})) == [True]


def test_a_value_of_a_megabyte_is_read_within_the_reading_allowance(
    counted: tuple[SandboxEvaluator, list[int]],
) -> None:
    """Spec 4.5: reading values has an allowance "that no value within the run's bounds reaches": a string of
    1,500,000 characters (within the 1,572,864 bytes an input may change) is read, not refused as a bound."""
    evaluator, _launches = counted
    text = "x" * 1_500_000
    assert evaluator.evaluate(Place(("len(data[0])", "data[1]"), {"data": [text, 7]})) == [1_500_000, 7]
