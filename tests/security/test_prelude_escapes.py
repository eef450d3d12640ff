"""No path from a program to the prelude's internals (the computation page, "The sandbox" and "The work").

In MicroPython a function written in Python exposes `__globals__`, its module's dict. The prelude used to
define its stand-ins for the builtins (`__import__`, `dir`, the refused `eval`/`exec`/...) and the `time`
stand-in's methods at its own top level, so `dir.__globals__["_import"]("os")` gave a program the real
`__import__` (and `os`, `gc`, `sys`, the bridge `host`), `_exec`/`_compile` gave back eval and exec,
`_call` the bridge, and `_ALLOWED` could be rewritten. Each test below names the path it closes and fails
on that prelude (commit 82ffd3a): there, `sorted(dir.__globals__)` lists the prelude's names, a lookup of
`_import` returns the function, and a rewritten `_ALLOWED` lets `import os` through.

The programs run through `evaluate`, the sandbox's own entry, not the save route: the save check refuses
every name and attribute that begins with two underscores, and these tests are about the wall behind it.
The last test runs the same paths through the workflow expressions, which share the prelude's guards.
"""

from __future__ import annotations

import json
import time

import pytest

from auto_runtime.functions.workflow.engine.evaluation import Failed, Place
from auto_runtime.functions.workflow.engine.sandbox_evaluator import SandboxEvaluator
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation, evaluate
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.outcomes import Raised, Returned, SandboxOutcome
from tests.sandbox_engine import engine

__all__ = ["engine"]

START_MS = 1_767_225_600_123

REACHABLE = (
    "dir",
    "__import__",
    "eval",
    "exec",
    "compile",
    "open",
    "getattr",
    "print",
    "globals",
    "time.time",
    "time.time_ns",
    "time.gmtime",
    "type(time).time",
    "type(time).gmtime",
)
"""Every function the prelude hands a program: the replaced builtins (the refused ones share one stand-in,
a few of them are named here), and the `time` stand-in's methods, through the instance and its class."""

INTERNALS = (
    "_import",
    "_call",
    "_exec",
    "_compile",
    "_ALLOWED",
    "_program_names",
    "_guards",
    "gc",
    "sys",
    "builtins",
    "host",
    "json",
    "_loads",
    "_write",
)
"""What the prelude's module dict held that a program must never get."""

FUNCTION_ATTRIBUTES = (
    "__globals__",
    "__closure__",
    "__code__",
    "__defaults__",
    "__kwdefaults__",
    "__self__",
    "__func__",
    "__wrapped__",
    "__dict__",
    "__module__",
)
"""Every attribute through which a CPython function, closure or bound method leads further. MicroPython's
functions and closures have `__globals__` alone of these (`dir(f)` is `__class__`, `__name__`, `__globals__`)."""


def run(engine: SandboxEngine, program: str, value: object = None) -> SandboxOutcome:
    evaluation = Evaluation(
        source=program, first_line=1, input_json=json.dumps(value), started_at_ms=START_MS, output_limit=1_048_320
    )
    return evaluate(engine, evaluation, RunControl(time.monotonic() + 10.0))


def returned(engine: SandboxEngine, program: str, value: object = None) -> object:
    outcome = run(engine, program, value)
    assert isinstance(outcome, Returned), outcome
    return outcome.output


@pytest.mark.parametrize("reach", REACHABLE)
def test_the_globals_of_what_the_prelude_hands_over_are_empty(engine: SandboxEngine, reach: str) -> None:
    """On the old prelude this lists its names (`_import`, `_call`, `_exec`, `gc`, `sys`, ...)."""
    program = f"import time\n\ndef main(x):\n    return sorted({reach}.__globals__)\n"
    assert returned(engine, program) == []


@pytest.mark.parametrize("reach", REACHABLE)
def test_no_internal_of_the_prelude_is_found_through_globals(engine: SandboxEngine, reach: str) -> None:
    """Each lookup ends with the program's own KeyError; on the old prelude each one gives the object."""
    program = (
        "import time\n\n"
        "def main(names):\n"
        "    found = []\n"
        "    for name in names:\n"
        "        try:\n"
        f"            found.append(type({reach}.__globals__[name]).__name__)\n"
        "        except KeyError:\n"
        "            found.append('KeyError')\n"
        "    return found\n"
    )
    assert returned(engine, program, list(INTERNALS)) == ["KeyError"] * len(INTERNALS)


def test_the_real_import_through_dir_ends_with_the_programs_key_error(engine: SandboxEngine) -> None:
    """The path as it was found: on the old prelude this returns `os` (and `gc.isenabled()` could be
    undone with `gc.enable()`)."""
    program = "def main(x):\n    os = dir.__globals__['_import']('os')\n    return os.getcwd()\n"
    outcome = run(engine, program)
    assert isinstance(outcome, Raised)
    assert (outcome.line, outcome.type_name, outcome.text) == (2, "KeyError", "_import")


def test_the_bridge_cannot_be_called_from_a_program(engine: SandboxEngine) -> None:
    """On the old prelude `_call` is the bridge itself: a program could send its own `result`."""
    program = "def main(x):\n    return __import__.__globals__['_call']('result', 'Oi1;')\n"
    outcome = run(engine, program)
    assert isinstance(outcome, Raised)
    assert (outcome.line, outcome.type_name, outcome.text) == (2, "KeyError", "_call")


@pytest.mark.parametrize("reach", ["dir", "eval", "time.time", "type(time).time_ns"])
def test_no_attribute_of_a_stand_in_leads_further(engine: SandboxEngine, reach: str) -> None:
    """Closures included: MicroPython gives a closure no `__closure__` and its cells no attribute, so the
    private references the guards close over stay theirs. On the old prelude `__globals__` listed the
    prelude's names."""
    # `getattr` is refused, so the program reads each attribute through a table of lambdas, one a name.
    table = "".join(f"    {name!r}: lambda f: f.{name},\n" for name in FUNCTION_ATTRIBUTES)
    program = (
        "import time\n\n"
        f"READ = {{\n{table}}}\n\n"
        "def main(attributes):\n"
        "    seen = []\n"
        "    for attribute in attributes:\n"
        "        try:\n"
        f"            value = READ[attribute]({reach})\n"
        "        except AttributeError:\n"
        "            seen.append('AttributeError')\n"
        "            continue\n"
        "        seen.append(sorted(value) if type(value) is dict else type(value).__name__)\n"
        "    return seen\n"
    )
    expected = [[] if name == "__globals__" else "AttributeError" for name in FUNCTION_ATTRIBUTES]
    if reach != "dir":
        # This port gives a function its `__code__`: a `code` object with no attribute of its own (and a
        # program can write no name that begins with two underscores, the save-time rules refuse it).
        expected[FUNCTION_ATTRIBUTES.index("__code__")] = "code"
    assert returned(engine, program, list(FUNCTION_ATTRIBUTES)) == expected


def test_the_time_stand_in_holds_nothing_of_the_prelude(engine: SandboxEngine) -> None:
    """The stand-in, its class and its class's dict: the methods are the staticmethods of a class made by
    the guards' factory, whose functions' globals are the empty namespace (on the old prelude, the
    prelude's)."""
    program = (
        "import time\n\n"
        "def main(x):\n"
        "    kind = type(time)\n"
        "    return {\n"
        "        'instance': sorted(time.__dict__),\n"
        "        'class': sorted(kind.__dict__),\n"
        "        'bases': [base.__name__ for base in kind.__bases__],\n"
        "        'module': kind.__module__,\n"
        "        'methods': [sorted(f.__globals__) for f in (time.time, time.time_ns, time.gmtime)],\n"
        "        'clock': [str(time.time()), str(time.time_ns()), list(time.gmtime()), list(time.gmtime(86400.5))],\n"
        "    }\n"
    )
    assert returned(engine, program) == {
        "instance": [],
        "class": ["__module__", "__qualname__", "gmtime", "time", "time_ns"],
        "bases": ["object"],
        "module": "__main__",
        "methods": [[], [], []],
        "clock": [
            "1767225600.123",
            "1767225600123000000",
            [2026, 1, 1, 0, 0, 0, 3, 1, 0],
            [1970, 1, 2, 0, 0, 0, 4, 2, 0],
        ],
    }


@pytest.mark.parametrize("module", ["os", "gc", "sys", "host", "builtins", "io", "struct", "micropython"])
def test_what_a_program_writes_into_the_guards_namespace_changes_no_guard(engine: SandboxEngine, module: str) -> None:
    """The guards read no global when called: everything they use is closed over. On the old prelude the
    program rewrote `_ALLOWED` in the prelude's dict and the import went through."""
    program = (
        "def main(module):\n"
        "    shared = dir.__globals__\n"
        "    shared['_ALLOWED'] = (module,)\n"
        "    shared['ImportError'] = KeyError\n"
        "    shared['_import'] = lambda *args: 'imported'\n"
        "    shared['_run_clock'] = 'the clock'\n"
        "    shared['_program_names'] = [{'leaked': 1}]\n"
        "    __import__.__globals__['_sorted'] = lambda names: ['leaked']\n"
        "    return [dir(), str(__import__('time').time()), __import__(module)]\n"
    )
    outcome = run(engine, program, module)
    assert isinstance(outcome, Raised), outcome
    assert (outcome.line, outcome.type_name, outcome.text) == (9, "ImportError", f"no module named '{module}'")
    kept = program.replace("__import__(module)]", "sorted(dir.__globals__)]")
    assert returned(engine, kept, module)[:2] == [["main"], "1767225600.123"]  # type: ignore[index]


def test_execfile_is_refused_like_the_other_builtins_the_page_names(engine: SandboxEngine) -> None:
    """The page's refused builtins include `execfile`, which MicroPython has; the old prelude left it (it
    raised OSError, for want of a file)."""
    outcome = run(engine, "def main(x):\n    return execfile('program')\n")
    assert isinstance(outcome, Raised)
    assert (outcome.type_name, outcome.text) == ("NameError", "not available in the sandbox")


def test_the_other_places_hunted_lead_nowhere(engine: SandboxEngine) -> None:
    """Other ways from a program to the prelude, hunted and found closed (this test passes on the old
    prelude too; it fails if one of them opens): the allowed modules are native, so nothing in their
    `__dict__` has `__globals__` or is a module; the exceptions the guards raise carry their text only and
    no traceback; the names dict the program runs in holds the program's names; `dir` with an argument is
    the real one."""
    program = (
        "import math, re, json, collections, heapq, time\n\n"
        "MODULES = (math, re, json, collections, heapq)\n\n"
        "def main(x):\n"
        "    leads = []\n"
        "    for module in MODULES:\n"
        "        for name, value in module.__dict__.items():\n"
        "            if type(value) is type(math) or 'globals' in [n.strip('_') for n in dir(value)]:\n"
        "                leads.append(module.__name__ + '.' + name)\n"
        "    raised = []\n"
        "    for attempt in (lambda: __import__('os'), lambda: eval('1'), lambda: open('program')):\n"
        "        try:\n"
        "            attempt()\n"
        "        except Exception as error:\n"
        "            seen = sorted(n for n in dir(error) if n != '__class__')\n"
        "            raised.append([type(error).__name__, list(error.args), seen])\n"
        "    return {\n"
        "        'leads': leads,\n"
        "        'raised': raised,\n"
        "        'names': sorted(main.__globals__),\n"
        "        'dir_of_a_list': 'append' in dir([]),\n"
        "    }\n"
    )
    output = returned(engine, program)
    assert output == {
        "leads": [],
        "raised": [
            ["ImportError", ["no module named 'os'"], ["args", "errno", "value"]],
            ["NameError", ["not available in the sandbox"], ["args", "errno", "value"]],
            ["NameError", ["not available in the sandbox"], ["args", "errno", "value"]],
        ],
        "names": ["MODULES", "__name__", "collections", "heapq", "json", "main", "math", "re", "time"],
        "dir_of_a_list": True,
    }


def test_workflow_expressions_reach_nothing_of_the_prelude_either(engine: SandboxEngine) -> None:
    """The expression prelude runs the same guards; on the old prelude the first expression listed the
    prelude's names and the second returned the bridge."""
    evaluator = SandboxEvaluator(engine, START_MS)
    try:
        assert evaluator.evaluate(
            Place(
                (
                    "sorted(dir.__globals__)",
                    "sorted(__import__.__globals__)",
                    "sorted(eval.__globals__)",
                    "sorted(__import__('time').time.__globals__)",
                ),
                {},
            )
        ) == [[], [], [], []]
        assert evaluator.evaluate(Place(("dir.__globals__['_call']",), {})) == Failed(
            "expression", 400, "An expression failed", "dir.__globals__['_call']: KeyError: _call"
        )
        assert evaluator.evaluate(Place(("__import__('gc')",), {})) == Failed(
            "expression", 400, "An expression failed", "__import__('gc'): ImportError: no module named 'gc'"
        )
    finally:
        evaluator.close()
