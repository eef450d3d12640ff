"""Isolation between runs: nothing a run changes in its interpreter is seen by the next run (issue 16, point 1).

A program mutates what it can reach of the interpreter: the namespace of the prelude's guards (the globals
of `dir`, `__import__` and the other stand-ins), the `time` stand-in and its class, and its own globals. It
reaches neither `builtins`, nor `sys`, nor the prelude's own globals, nor an allowed module's attributes
(native modules refuse new attributes): `tests/security/test_prelude_escapes.py` shows that, and the
mutating run below shows that rewriting the names the prelude's import guard once read from its globals
(`_ALLOWED`, `_import`) lets nothing through. Each test first shows the mutation took effect inside the
mutating run (so the test can fail), then shows that the next run on the same engine, on the same thread
(as a worker runs its jobs one after another), observes exactly what a run observed before any mutation.
Each run is a fresh instance of the snapshot; the last test changes, from the host, what no program can reach
(builtins, `sys.modules`, `sys.path`, the prelude's globals, memory) and the next instance sees none of it.
"""

from __future__ import annotations

import json
import time
from typing import Any

from auto_runtime.functions.workflow.engine.evaluation import Place
from auto_runtime.functions.workflow.engine.sandbox_evaluator import SandboxEvaluator
from auto_runtime.sandbox.bridge import Bridge
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation, evaluate
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.outcomes import Returned
from auto_runtime.sandbox.store_run import StoreSession, run_store

START_MS = 1_767_225_600_123

OBSERVE = """
import json
import time

def main(x):
    shared = dir.__globals__
    try:
        import sys as imported
        sys_importable = True
    except ImportError:
        sys_importable = False
    return {
        "len": len([1, 2, 3]),
        "guards_names": sorted(shared),
        "sys_importable": sys_importable,
        "time": str(time.time()),
        "time_ns": str(time.time_ns()),
        "clock_instance": sorted(time.__dict__),
        "clock_class": sorted(type(time).__dict__),
        "json": sorted(json.__dict__),
        "program_globals": sorted(name for name in dir() if name.startswith("leaked")),
    }
"""

MUTATE = """
import time

leaked_global = "from the mutating run"

def main(x):
    shared = dir.__globals__
    shared["_ALLOWED"] = ("sys",)
    shared["_import"] = lambda *args: "imported"
    shared["leaked_guard_global"] = 1
    time.time = lambda: 0
    type(time).time_ns = staticmethod(lambda: 0)
    type(time).leaked_class_attribute = 1
    try:
        import sys as imported
        sys_importable = True
    except ImportError:
        sys_importable = False
    return {
        "guards_names": sorted(shared),
        "sys_importable": sys_importable,
        "time": [time.time(), time.time_ns()],
        "class_leak": type(time).leaked_class_attribute,
    }
"""


def _run(engine: SandboxEngine, program: str) -> Returned:
    evaluation = Evaluation(
        source=program, first_line=1, input_json="null", started_at_ms=START_MS, output_limit=1_048_320
    )
    outcome = evaluate(engine, evaluation, RunControl(time.monotonic() + 10.0))
    assert isinstance(outcome, Returned), outcome
    return outcome


def test_a_run_that_mutates_its_interpreter_leaves_the_next_run_untouched(engine: SandboxEngine) -> None:
    before = _run(engine, OBSERVE).output
    assert before["len"] == 3 and before["time"] == "1767225600.123" and before["sys_importable"] is False
    assert before["guards_names"] == [] and before["program_globals"] == []

    mutated = _run(engine, MUTATE).output
    assert mutated == {
        "guards_names": ["_ALLOWED", "_import", "leaked_guard_global"],
        "sys_importable": False,
        "time": [0, 0],
        "class_leak": 1,
    }

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
            "sorted(dir.__globals__)",
            "sorted(__import__.__globals__)",
            "sorted(type(__import__('time')).__dict__)",
            "str(__import__('time').time())",
        ),
        {},
    )
    mutate = Place(
        (
            "dir.__globals__.__setitem__('_ALLOWED', ('sys',))",
            "dir.__globals__.__setitem__('leaked_guard_global', 1)",
            "__import__.__globals__.__setitem__('_import', 1)",
        ),
        {},
    )
    (before,) = _expressions(engine, observe)
    assert before[:2] == [[], []]
    within = _expressions(engine, mutate, observe)
    assert within[0] == [None, None, None]
    assert within[1][:2] == [["_ALLOWED", "_import", "leaked_guard_global"]] * 2
    (after,) = _expressions(engine, observe)
    assert json.dumps(after) == json.dumps(before)


RAW_MUTATE = """
_builtins = _import("builtins")
_sys = _import("sys")
_builtins.len = lambda value: -1
_builtins.abs = _builtins.len
_sys.modules["leaked_module"] = _sys
_sys.path.append("/leaked")
_run = None
_reserve.clear()
leaked_global = 1
_fill = bytearray(b"\\xab" * (4 * 1024 * 1024))
_call("result", repr([len([1, 2]), abs([1]), "leaked_module" in _sys.modules, _sys.path[-1],
                      _fill[12345], _run]))
"""

RAW_OBSERVE = """
_builtins = _import("builtins")
_sys = _import("sys")
_fresh = bytearray(4 * 1024 * 1024)
try:
    leaked_global
    _leaked = True
except NameError:
    _leaked = False
_call("result", repr([len([1, 2]), abs(-1), "leaked_module" in _sys.modules,
                      _sys.path, max(_fresh), len(_reserve), callable(_run), _leaked]))
"""


def _raw_result(engine: SandboxEngine, code: str) -> str:
    """A line run in the prelude's own namespace (what no program reaches), sending its answer as the result."""
    session = StoreSession(engine, 10**10)
    bridge = Bridge(("result",), {}, 0)
    ending = run_store(engine, session, code, bridge, RunControl(time.monotonic() + 10))
    assert ending.clean and bridge.result is not None, ending
    return bridge.result.decode()


def test_a_run_that_changes_builtins_modules_path_globals_and_memory_is_not_seen_by_the_next(
    engine: SandboxEngine,
) -> None:
    """Issue 31: the host itself changes what no program can reach; a fresh instance of the snapshot sees none."""
    before = _raw_result(engine, RAW_OBSERVE)
    assert before == "[2, 1, False, ['', '.frozen', '/lib'], 0, 16384, True, False]"
    assert _raw_result(engine, RAW_MUTATE) == "[-1, 1, True, '/leaked', 171, None]"
    assert _raw_result(engine, RAW_OBSERVE) == before
