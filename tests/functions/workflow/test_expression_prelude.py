"""The expression prelude compiled once: rebuilt byte for byte from today's source, refused when stale, and the
same answers as the source prelude compiled in the guest for every kind of ending (spec 4.3-4.6). Its work is
not the source path's to the unit (`auto_runtime/sandbox/expression_prelude.py` says why)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from auto_runtime.functions.workflow.engine.evaluation import Place
from auto_runtime.functions.workflow.engine.sandbox_evaluator import SandboxEvaluator
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.expression_prelude import (
    EXPRESSION_MODULE_SOURCE,
    IMAGE_PATH,
    IMAGE_SHA256,
    PreludeImageMismatchError,
    compile_module,
    load_expression_image,
)

CLOCK_MS = 1_790_000_000_123
DEEP: Any = []
for _ in range(511):
    DEEP = [DEEP]
LONG = "é" * 3000

INPUTS: dict[str, list[Place]] = {
    "values and conditions": [
        Place(('data["a"] + 1', '{"z": 1, "a": [1, 2.5, None, True, "é"]}', "10 / 2"), {"data": {"a": 41}}),
        Place(("data", "[]", "0.0"), {"data": [None]}, condition=True),
        Place(("sorted(data, key=lambda k: -len(k))", "data[0] * 3"), {"data": ["ab", "c", "def"]}),
        Place(("len(data)", "data[-3:]", "data"), {"data": LONG + "xyz"}),
        Place(("[d for d in data if d % 7 == 0]",), {"data": list(range(300))}),
        Place(("dir()", "type(data).__name__", "repr(data)"), {"data": {"k": (1, 2)}}),
    ],
    "exceptions": [
        Place(('data["lines"]', "1"), {"data": {}}),
        Place(("1 / 0",), {}),
        Place(("open('x')",), {}),
        Place(("(f := lambda n: 0 if n == 0 else 1 + f(n - 1))(100000)",), {}),
    ],
    "not json": [
        Place(("{1, 2}",), {}),
        Place(('{"a~/b": float("nan")}',), {}),
        Place(("2 ** 60",), {}),
        Place(("[data]",), {"data": DEEP}),
        Place(("data",), {"data": DEEP}),
        Place(('{1: "a"}',), {}),
    ],
    "bounds": [
        Place(("sum(range(10**9))",), {}),
        Place(("[1] * 100000000",), {}),
        Place(("1 + 1",), {}),
        Place(("'x' * 5_000_000",), {}),
    ],
    "recursion depth": [
        Place((f"(f := lambda n: 0 if n == 0 else 1 + f(n - 1))({depth})",), {}) for depth in range(100, 121)
    ],
}


def answers(engine: SandboxEngine, places: list[Place], compiled: bool) -> list[Any]:
    evaluator = SandboxEvaluator(engine, CLOCK_MS, compiled_prelude=compiled)
    try:
        return [evaluator.evaluate(place) for place in places]
    finally:
        evaluator.close()


@pytest.mark.parametrize("case", sorted(INPUTS))
def test_the_compiled_prelude_answers_as_the_source_prelude(engine: SandboxEngine, case: str) -> None:
    from_source = answers(engine, INPUTS[case], compiled=False)
    compiled = answers(engine, INPUTS[case], compiled=True)
    assert compiled == from_source
    assert answers(engine, INPUTS[case], compiled=True) == compiled


def test_the_committed_image_is_what_mpy_cross_makes_of_todays_source() -> None:
    rebuilt = compile_module(EXPRESSION_MODULE_SOURCE)
    assert hashlib.sha256(rebuilt).hexdigest() == IMAGE_SHA256
    assert rebuilt == IMAGE_PATH.read_bytes()


def test_a_stale_or_changed_image_is_refused(tmp_path: Path) -> None:
    assert load_expression_image().mpy == IMAGE_PATH.read_bytes()
    with pytest.raises(PreludeImageMismatchError, match="its image was compiled from"):
        load_expression_image(source_sha256="0" * 64)
    changed = tmp_path / "changed.mpy"
    changed.write_bytes(IMAGE_PATH.read_bytes() + b"\x00")
    with pytest.raises(PreludeImageMismatchError, match="not the pinned"):
        load_expression_image(path=changed)
    with pytest.raises(PreludeImageMismatchError, match="cannot be read"):
        load_expression_image(path=tmp_path / "missing.mpy")
