"""The sandbox's endings, limits and determinism, on the real artifact and the real Wasmtime."""

from __future__ import annotations

import datetime
import json
import random
import time

from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation, evaluate
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.outcomes import (
    Broken,
    OutOfMemory,
    OutOfWork,
    OutputNotJson,
    OutputTooDeep,
    OutputTooLarge,
    PastDeadline,
    Raised,
    Returned,
    SandboxOutcome,
)

START_MS = 1_767_225_600_123


def run(
    engine: SandboxEngine, program: str, value: object = None, seconds: float = 10.0, **extra: int
) -> SandboxOutcome:
    evaluation = Evaluation(
        source=program,
        first_line=3,
        input_json=json.dumps(value),
        started_at_ms=START_MS,
        output_limit=1_048_320,
        **extra,
    )
    return evaluate(engine, evaluation, RunControl(time.monotonic() + seconds))


def test_returns_json_with_sorted_keys_and_shortest_floats(engine: SandboxEngine) -> None:
    outcome = run(engine, "def main(x):\n    return {'b': [0.1 + 0.2, 5e-324, 1e16, -0.0], 'a': x, 'é': None}\n", [1])
    assert isinstance(outcome, Returned)
    assert outcome.output_json == '{"a":[1],"b":[0.30000000000000004,5e-324,1e+16,-0.0],"é":null}'


def test_same_input_same_output_and_work(engine: SandboxEngine) -> None:
    program = "def main(x):\n    return sorted([str(i * 7919 % 1000) for i in range(x)])\n"
    first, second = run(engine, program, 500), run(engine, program, 500)
    assert isinstance(first, Returned) and isinstance(second, Returned)
    assert first.output == second.output
    assert first.work == second.work > 0


def test_clock_reads_the_run_start(engine: SandboxEngine) -> None:
    program = "import time\ndef main(x):\n    return [str(time.time()), str(time.time_ns()), list(time.gmtime())]\n"
    outcome = run(engine, program)
    assert isinstance(outcome, Returned)
    assert outcome.output == ["1767225600.123", "1767225600123000000", [2026, 1, 1, 0, 0, 0, 3, 1, 0]]


def test_no_entropy_files_or_environment(engine: SandboxEngine) -> None:
    for program in (
        "def main(x):\n    import random\n    return 1\n",
        "def main(x):\n    import os\n    return os.getenv('HOME')\n",
        "def main(x):\n    return open('/etc/passwd').read()\n",
    ):
        outcome = run(engine, program)
        assert isinstance(outcome, Raised), program


def test_guest_error_line_type_and_text(engine: SandboxEngine) -> None:
    outcome = run(engine, "def main(x):\n    return x['n']\n", {})
    assert outcome == Raised(line=4, type_name="KeyError", text="n", work=outcome.work)  # type: ignore[union-attr]


def test_guest_error_text_is_cut_at_1024_bytes(engine: SandboxEngine) -> None:
    outcome = run(engine, "def main(x):\n    raise ValueError('é' * 600)\n")
    assert isinstance(outcome, Raised)
    assert outcome.text == "é" * 512 + "…"


def test_out_of_fuel_is_work(engine: SandboxEngine) -> None:
    outcome = run(engine, "def main(x):\n    while True:\n        pass\n", work_fuel=50_000_000)
    assert outcome == OutOfWork(work=50_000_000)


def test_out_of_memory_names_the_line(engine: SandboxEngine) -> None:
    program = "def main(x):\n    a = []\n    while True:\n        a.append(bytearray(20000000))\n"
    outcome = run(engine, program)
    assert isinstance(outcome, OutOfMemory)
    assert outcome.line == 6


def test_wall_clock_deadline(engine: SandboxEngine) -> None:
    outcome = run(engine, "def main(x):\n    while True:\n        pass\n", seconds=0.2, work_fuel=10**15)
    assert outcome == PastDeadline()


def test_non_json_value_names_its_place(engine: SandboxEngine) -> None:
    cases = {
        "return {'lines': [{'tags': {1}}]}": ("a value of type set", "/lines/0/tags"),
        "return {1: 2}": ("a key that is not text", ""),
        "return [float('inf')]": ("a float that is not finite", "/0"),
        "return {'n': 2 ** 53}": ("an integer outside ±9,007,199,254,740,991", "/n"),
        "a = []\n    a.append(a)\n    return {'a': [a]}": ("a container that contains itself", "/a/0/0"),
        "return chr(0xD800)": ("text that is not valid Unicode", ""),
        "return b'x'": ("a value of type bytes", ""),
    }
    for body, (what, pointer) in cases.items():
        outcome = run(engine, f"def main(x):\n    {body}\n")
        assert isinstance(outcome, OutputNotJson), body
        assert (outcome.what, outcome.pointer) == (what, pointer)


def test_output_depth(engine: SandboxEngine) -> None:
    deep = "def main(x):\n    v = 1\n    for i in range({n}):\n        v = [v]\n    return v\n"
    assert isinstance(run(engine, deep.format(n=512)), Returned)
    outcome = run(engine, deep.format(n=513))
    assert isinstance(outcome, OutputTooDeep)
    assert outcome.pointer == "/0" * 512


def test_output_size_bound(engine: SandboxEngine) -> None:
    fits = run(engine, "def main(x):\n    return 'x' * 1048318\n")
    assert isinstance(fits, Returned) and fits.output_bytes == 1_048_320
    assert isinstance(run(engine, "def main(x):\n    return 'x' * 1048319\n"), OutputTooLarge)


def test_the_allowed_modules_import_and_time_is_the_runtimes(engine: SandboxEngine) -> None:
    program = (
        "import math\nimport re\nimport json\nimport heapq\nimport time as clock\n"
        "from collections import OrderedDict, deque, namedtuple\n"
        "from math import floor\nfrom time import gmtime\n"
        "def main(x):\n"
        "    h = []\n    heapq.heappush(h, 3)\n    heapq.heappush(h, 1)\n"
        "    d = OrderedDict()\n    d['z'] = 1\n    d['a'] = 2\n"
        "    return [floor(math.pi * 100), re.sub('a', 'b', 'aa'), json.loads('[1]'), heapq.heappop(h), d,\n"
        "            list(gmtime(-1.5)[:6]), hasattr(clock, 'sleep'), hasattr(clock, 'localtime')]\n"
    )
    outcome = run(engine, program)
    assert isinstance(outcome, Returned)
    assert outcome.output_json == '[314,"bb",[1],1,{"z":1,"a":2},[1969,12,31,23,59,58],false,false]'


def test_floats_that_the_sandbox_writes_long_still_fit(engine: SandboxEngine) -> None:
    outcome = run(engine, "def main(x):\n    return [5e-324] * 140000\n")
    assert isinstance(outcome, Returned)
    assert outcome.output_bytes == 140000 * 7 + 1


def test_too_large_before_a_problem_and_a_problem_before_too_large(engine: SandboxEngine) -> None:
    assert isinstance(run(engine, "def main(x):\n    return ['x' * 1048400, {1}]\n"), OutputTooLarge)
    first = run(engine, "def main(x):\n    return [{1}, 'x' * 2000000]\n")
    assert isinstance(first, OutputNotJson) and first.pointer == "/0"
    small = run(engine, "def main(x):\n    return {'a': 'x' * 100, 'b': [1.5, {1}]}\n")
    assert isinstance(small, OutputNotJson) and small.pointer == "/b/1"
    floats = run(engine, "def main(x):\n    return [5e-324] * 140000 + [{1}]\n")
    assert isinstance(floats, OutputNotJson) and floats.pointer == "/140000"


def test_a_huge_or_broken_exception_text(engine: SandboxEngine) -> None:
    huge = run(engine, "def main(x):\n    raise ValueError('ab' * 5000000)\n")
    assert isinstance(huge, Raised) and huge.text == "ab" * 512 + "…"
    surrogate = run(engine, "def main(x):\n    raise ValueError('a' + chr(0xD800))\n")
    assert isinstance(surrogate, Raised) and surrogate.text.startswith("a\ufffd")
    assert surrogate.text.encode("utf-8")


def test_a_message_cannot_fake_the_line(engine: SandboxEngine) -> None:
    program = "def main(x):\n    raise ValueError('x\\n  File \"program\", line 99, in main')\n"
    outcome = run(engine, program)
    assert isinstance(outcome, Raised) and outcome.line == 4


def test_a_stack_overflow_inside_re_is_work(engine: SandboxEngine) -> None:
    """re's matcher and compiler recurse without bound on `(a*)*b` and on 100,000 nested groups: work."""
    matcher = "import re\ndef main(x):\n    return str(re.match('(a*)*b', x))\n"
    assert run(engine, matcher, "aaa") == OutOfWork(work=10_000_000_000)
    compiler = "import re\ndef main(x):\n    return str(re.compile('(' * x + 'a' + ')' * x))\n"
    assert run(engine, compiler, 100_000) == OutOfWork(work=10_000_000_000)


def test_a_stack_overflow_outside_re_stays_a_trap(engine: SandboxEngine) -> None:
    """Comparing lists nested 100,000 deep overflows the stack in MicroPython's own comparison, not in re."""
    program = (
        "def main(x):\n    a = []\n    b = []\n    for i in range(x):\n"
        "        a = [a]\n        b = [b]\n    return a == b\n"
    )
    outcome = run(engine, program, 100_000)
    assert isinstance(outcome, Broken) and outcome.reason == "STACK_OVERFLOW"


def test_dir_lists_the_programs_names_only(engine: SandboxEngine) -> None:
    program = "import math\nLIMIT = 1\ndef main(x):\n    return [sorted(dir()), 'keys' in dir(x)]\n"
    outcome = run(engine, program, {})
    assert isinstance(outcome, Returned)
    assert outcome.output == [["LIMIT", "main", "math"], True]


def test_gmtime_breaks_any_moment_down_as_cpython_does(engine: SandboxEngine) -> None:
    """The port's own `gmtime` clamps before 1970 and after 2106; the runtime's stand-in does not."""
    generator = random.Random(31)
    moments: list[float] = [0, -1, -2, -1.5, 86399, 951782400, 951868800, 2**31, -62135596800, 253402300799]
    moments += [generator.randint(-62135596800, 253402300799) for _ in range(2000)]
    outcome = run(engine, "import time\ndef main(x):\n    return [list(time.gmtime(v)) for v in x]\n", moments)
    assert isinstance(outcome, Returned)
    for moment, got in zip(moments, outcome.output, strict=True):
        day = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=int(moment // 1))
        expected = [day.year, day.month, day.day, day.hour, day.minute, day.second, day.weekday()]
        assert got == [*expected, day.timetuple().tm_yday, 0], moment
