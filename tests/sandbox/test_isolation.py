"""Isolation between runs: nothing a run changes in its interpreter is seen by the next run (issue 16, point 1).

A program mutates builtins, its own and the prelude's globals, imported modules' state and `sys`; each test
first shows the mutation took effect inside the mutating run (so the test can fail), then shows that the next
run on the same engine, on the same thread (as a worker runs its jobs one after another), observes exactly
what a run observed before any mutation. Whatever the sandbox's start (`_start` today, a pre-initialised
snapshot later), these must hold.
"""

from __future__ import annotations

import json
import time
from typing import Any

from auto_runtime.functions.workflow.engine.evaluation import Place
from auto_runtime.functions.workflow.engine.sandbox_evaluator import SandboxEvaluator
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation, evaluate
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.outcomes import Returned

START_MS = 1_767_225_600_123

OBSERVE = """
import time

def main(x):
    shared = dir.__globals__
    sys = shared["sys"]
    try:
        import sys as imported
        sys_importable = True
    except ImportError:
        sys_importable = False
    try:
        builtins_leak = leaked_builtin
    except NameError:
        builtins_leak = False
    return {
        "len": len([1, 2, 3]),
        "builtins_leak": builtins_leak,
        "allowed": list(shared["_ALLOWED"]),
        "sys_importable": sys_importable,
        "prelude_names": sorted(shared),
        "modules_leak": "leaked_module" in sys.modules,
        "path": list(sys.path),
        "time": str(time.time()),
        "time_ns": str(time.time_ns()),
        "program_globals": sorted(name for name in dir() if name.startswith("leaked")),
    }
"""

MUTATE = """
import time

leaked_global = "from the mutating run"

def main(x):
    shared = dir.__globals__
    sys = shared["sys"]
    shared["builtins"].len = lambda value: -1
    shared["builtins"].leaked_builtin = 1
    shared["_ALLOWED"] = shared["_ALLOWED"] + ("sys",)
    shared["leaked_prelude_global"] = 1
    sys.modules["leaked_module"] = shared["json"]
    sys.path.append("/leaked")
    time.time = lambda: 0
    type(time).time_ns = staticmethod(lambda: 0)
    import sys as imported
    return {
        "len": len([1, 2, 3]),
        "builtins_leak": leaked_builtin,
        "modules_leak": "leaked_module" in imported.modules,
        "time": [time.time(), time.time_ns()],
    }
"""


def _run(engine: SandboxEngine, program: str) -> Returned:
    evaluation = Evaluation(
        source=program, first_line=1, input_json="null", started_at_ms=START_MS, output_limit=1_048_320
    )
    outcome = evaluate(engine, evaluation, RunControl(time.monotonic() + 10.0))
    assert isinstance(outcome, Returned), outcome
    return outcome


def test_a_run_that_mutates_builtins_globals_and_modules_leaves_the_next_run_untouched(
    engine: SandboxEngine,
) -> None:
    before = _run(engine, OBSERVE).output
    assert before["len"] == 3 and before["time"] == "1767225600.123" and before["sys_importable"] is False
    assert before["builtins_leak"] is False and before["modules_leak"] is False

    mutated = _run(engine, MUTATE).output
    assert mutated == {"len": -1, "builtins_leak": 1, "modules_leak": True, "time": [0, 0]}

    after = _run(engine, OBSERVE)
    assert after.output == before
    assert after.output_json == _run(engine, OBSERVE).output_json


def test_work_does_not_depend_on_what_ran_before(engine: SandboxEngine) -> None:
    """The same program costs the same work after a run that filled the heap and changed the interpreter."""
    program = "def main(x):\n    return sorted(str(i * 7919 % 1000) for i in range(300))\n"
    first = _run(engine, program)
    _run(engine, MUTATE)
    _run(engine, "def main(x):\n    keep = [bytearray(4096) for _ in range(5000)]\n    return len(keep)\n")
    again = _run(engine, program)
    assert (again.output_json, again.work) == (first.output_json, first.work)


def _expressions(engine: SandboxEngine, *places: Place) -> list[Any]:
    evaluator = SandboxEvaluator(engine, START_MS)
    try:
        return [evaluator.evaluate(place) for place in places]
    finally:
        evaluator.close()


def test_a_workflow_input_that_mutates_its_interpreter_leaves_the_next_input_untouched(
    engine: SandboxEngine,
) -> None:
    """Expressions of one input share one instance (spec 4.5); the next input gets a fresh one."""
    observe = Place(
        (
            "list(dir.__globals__['_ALLOWED'])",
            "'leaked_module' in dir.__globals__['sys'].modules",
            "'leaked_prelude_global' in dir.__globals__",
            "list(dir.__globals__['sys'].path)",
            "sorted(dir.__globals__)",
        ),
        {},
    )
    mutate = Place(
        (
            "dir.__globals__.__setitem__('_ALLOWED', ('sys',))",
            "dir.__globals__['sys'].modules.__setitem__('leaked_module', 1)",
            "dir.__globals__.__setitem__('leaked_prelude_global', 1)",
            "dir.__globals__['sys'].path.append('/leaked')",
            "type(__import__('sys')).__name__",
        ),
        {},
    )
    (before,) = _expressions(engine, observe)
    assert before[:3] == [["math", "re", "json", "collections", "heapq"], False, False]
    within = _expressions(engine, mutate, observe)
    assert within[0][4] == "module"
    assert within[1][:4] == [["sys"], True, True, [*before[3], "/leaked"]]
    (after,) = _expressions(engine, observe)
    assert json.dumps(after) == json.dumps(before)
