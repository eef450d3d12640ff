"""What the computation page asks to verify on the pinned artifact ("What to verify on the real artifact"): the
snapshots of MicroPython's WebAssembly port that `make install` builds."""

from __future__ import annotations

import json
import random
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import wasmtime

from auto_runtime.sandbox.artifact import (
    REBUILD,
    SNAPSHOT_SHA256,
    SOURCE_SHA256,
    ArtifactMismatchError,
    load_artifact,
    snapshot_path,
)
from auto_runtime.sandbox.bridge import Bridge, activate
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.evaluate import Evaluation, evaluate
from auto_runtime.sandbox.interruption import RunControl, install_deadline
from auto_runtime.sandbox.outcomes import Raised, Returned
from auto_runtime.sandbox.store_run import StoreEnding, StoreSession, run_store
from tests.sandbox_engine import session_cache_folder


def raw(engine: SandboxEngine, code: str, heap: str = "240M", clock_ns: int = 0) -> StoreEnding:
    """A line of MicroPython executed in a fresh instance of the snapshot, with no bridge answers. It runs in the
    prelude's namespace, so it reaches what no program can (`_import`, the real import)."""
    session = StoreSession(engine, 10**10, memory_bytes=(80 << 20) if heap == "64M" else (256 << 20))
    bridge = Bridge((), {}, clock_ns)
    return run_store(engine, session, code, bridge, RunControl(time.monotonic() + 10), heap_size=heap)


def evaluate_program(engine: SandboxEngine, program: str, value: object = None) -> object:
    evaluation = Evaluation(program, 1, json.dumps(value), 0, 1_048_320)
    return evaluate(engine, evaluation, RunControl(time.monotonic() + 10))


def test_the_artifact_is_pinned(tmp_path: Path) -> None:
    for heap, digest in SNAPSHOT_SHA256.items():
        artifact = load_artifact(heap)
        assert artifact.sha256 == digest
        assert artifact.sandbox_name == f"{SOURCE_SHA256[:12]}/wasmtime-50.0.1" == "06338c955b03/wasmtime-50.0.1"
        other = tmp_path / f"other-{heap}.wasm"
        other.write_bytes(artifact.wasm + b"\0")
        with pytest.raises(ArtifactMismatchError, match="not the pinned"):
            load_artifact(heap, other)
    with pytest.raises(ArtifactMismatchError, match=r"cannot be read.*make install"):
        load_artifact("240M", tmp_path / "missing.wasm")
    assert snapshot_path("240M").name == "micropython-06338c955b03-240M.wasm"


def test_the_compiled_module_is_cached_on_disk(tmp_path: Path) -> None:
    first = SandboxEngine(tmp_path)
    first.close()
    second = SandboxEngine(tmp_path)
    second.close()
    assert first.compiled_now and not second.compiled_now
    assert len(list(tmp_path.glob("*.cwasm"))) == len(SNAPSHOT_SHA256)


def test_the_build_is_the_one_measured(engine: SandboxEngine) -> None:
    ending = raw(engine, 'sys = _import("sys")\n_import("builtins").print(sys.implementation._build, sys.version)')
    assert ending.stdout == "pyscript 3.4.0; MicroPython v1.27.0 on 2025-12-10\n"


STRESS = """
def _stress(rounds):
    def pairs(n):
        for i in range(n):
            yield i, "k%d" % (i * 7 % 97)
    kept = []
    total = 0
    for r in range(rounds):
        rows = [{"id": "x%d" % i, "vals": [i, str(i), {"n": i * 2}], "tag": k} for i, k in pairs(300)]
        total += sum(d["vals"][2]["n"] + len(d["id"]) + int(d["vals"][1]) for d in rows)
        kept.append("".join(d["tag"] for d in rows[::50]))
        if r % 10 == 0:
            gc.collect()
    return [total, len("/".join(kept)), len(kept)]
"""


def _chunks(engine: SandboxEngine, chunks: list[str]) -> str:
    """Execute the chunks one after another in one instance (each returns to the top level); its output."""
    session = StoreSession(engine, 10**11)
    bridge = Bridge((), {}, 0)
    session.deadline_handle = install_deadline(session.store, RunControl(time.monotonic() + 60))
    activate(bridge)
    try:
        instance = engine.pres["240M"].instantiate(session.store)
        exports = instance.exports(session.store)
        memory = exports["memory"]
        assert isinstance(memory, wasmtime.Memory)
        for offset, data in engine.tails["240M"]:
            memory.write(session.store, data, offset)
        for chunk in chunks:
            code = chunk.encode()
            place = int(exports["malloc"](session.store, len(code) + 13))
            memory.write(session.store, code + bytes(13), place)
            exports["mp_js_do_exec"](session.store, place, len(code), place + len(code) + 1)
    finally:
        activate(None)
    return bridge.stdout.text() + bridge.stderr.text()


def test_the_collector_is_right_at_the_top_level_and_stays_off_in_runs(engine: SandboxEngine) -> None:
    """This port collects only once control is back at its top level (no pointer left on the WebAssembly stack),
    so collections between the chunks of one instance keep every live object; within a run nothing is collected,
    and the prelude turns automatic collection off besides."""
    namespace: dict[str, Any] = {"gc": type("gc", (), {"collect": staticmethod(lambda: None)})}
    exec(STRESS, namespace)
    right = namespace["_stress"](40)
    output = _chunks(
        engine,
        [
            "gc = _import('gc')\ngc.enable()\n" + STRESS,
            "_results = [_stress(40) for _ in range(3)]\n_before = gc.mem_free()",
            "gc.collect()",
            "_import('builtins').print(gc.mem_free() > _before, _results)",
        ],
    )
    assert output == f"True {[right] * 3}\n"
    program = "def main(x):\n" + "".join("    " + line + "\n" for line in STRESS.splitlines())
    program = program.replace("gc.collect()", "pass") + "    return _stress(40)\n"
    outcome = evaluate_program(engine, program)
    assert isinstance(outcome, Returned) and outcome.output == right


MODULES = """
    __main__ _asyncio abc array asyncio/__init__ asyncio/core asyncio/event asyncio/funcs asyncio/lock base64
    binascii builtins cmath collections collections/__init__ collections/defaultdict copy datetime deflate errno
    fnmatch framebuf functools gc gzip hashlib heapq hmac html/__init__ inspect io itertools js jsffi json locale
    logging math micropython operator os os/__init__ os/path pathlib platform random re select stat string struct
    sys tarfile/__init__ tarfile/write time types uctypes unittest/__init__ uu vfs zlib
"""
"""What `help("modules")` lists: the port's own modules and its frozen ones (the save-time rules refuse all but
six, and so does the prelude's import guard)."""


def test_modules_entropy_files_and_environment(engine: SandboxEngine) -> None:
    listed = raw(engine, '_import("builtins").help("modules")').stdout.split("Plus any modules")[0].split()
    assert sorted(set(listed)) == sorted(set(MODULES.split()))
    assert raw(engine, '_import("builtins").print(_import("random").getrandbits(8) >= 0)').stdout == "True\n"
    assert "OSError: 44" in raw(engine, '_import("builtins").open("/etc/passwd")').stderr
    assert "no module named 'uos'" in raw(engine, '_import("os")').stderr
    assert raw(engine, '_import("builtins").print(_import("sys").path)').stdout == "['', '.frozen', '/lib']\n"


def test_the_imports_are_answered_by_the_host(engine: SandboxEngine) -> None:
    names = {item.name for item in engine.module.imports}
    assert not any(name.startswith("invoke_") for name in names if name)
    assert "_emscripten_throw_longjmp" not in names
    assert {"mp_js_time_ms", "mp_js_random_u32", "calln", "lookup_attr", "fd_write", "emscripten_resize_heap"} <= names
    assert {item.module for item in engine.module.imports} == {"env", "wasi_snapshot_preview1"}
    assert sorted(export.name for export in engine.module.exports) == ["malloc", "memory", "mp_js_do_exec"]


def test_every_javascript_import_stops_the_run(engine: SandboxEngine) -> None:
    for code in ('_import("js").document', '_import("js").setTimeout(1)', '_import("jsffi").create_proxy(len)'):
        ending = raw(engine, code)
        assert ending.exit_code is None and ending.trap is None
        assert ending.error is not None and ending.error.startswith("the host stopped the guest: the sandbox gives no")


def test_the_clock_and_the_seed_come_from_the_host_at_run_time(engine: SandboxEngine) -> None:
    code = (
        'time = _import("time")\n'
        '_import("builtins").print(time.time_ns(), time.time(), _import("random").getrandbits(30))'
    )
    first = raw(engine, code, clock_ns=1_767_225_600_123 * 1_000_000).stdout.split()
    second = raw(engine, code, clock_ns=1_790_000_000_456 * 1_000_000).stdout.split()
    assert first[:2] == ["1767225600123000000", "1767225600.123"]
    assert second[:2] == ["1790000000456000000", "1790000000.456"]
    assert first[2] != second[2]
    assert raw(engine, code, clock_ns=1_767_225_600_123 * 1_000_000).stdout.split() == first


def test_builtins_are_replaced_and_a_replacement_deleted_restores_the_original(engine: SandboxEngine) -> None:
    """Only code that reaches `builtins` can delete a replacement, and no program does: `import builtins` and
    `__builtins__` are refused at save and by the import guard (tests/security/test_prelude_escapes.py)."""
    ending = raw(
        engine,
        "builtins = _import('builtins')\nbuiltins.open = 1\nbuiltins.print(open)\ntry:\n    eval('1')\n"
        "except NameError as e:\n    builtins.print(e)\ndel builtins.eval\nbuiltins.print(eval('1 + 1'))\n"
        "def f():\n    pass\nbuiltins.print(hasattr(f, '__globals__'))",
    )
    assert ending.stdout == "1\nnot available in the sandbox\n2\nTrue\n"
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
    """The snapshot's memory starts at its heap and a little more: a store limit below that cannot instantiate
    it, and the heap grows (a new area) only as far as the store's limit allows."""
    memory_type = next(item.type for item in engine.module.exports if item.name == "memory")
    assert isinstance(memory_type, wasmtime.MemoryType)
    assert 240 * 16 < memory_type.limits.min < 256 * 16
    session = StoreSession(engine, 10**10, memory_bytes=200 << 20)
    ending = run_store(engine, session, "pass", Bridge((), {}, 0), RunControl(time.monotonic() + 5))
    assert not ending.clean and ending.error is not None
    assert raw(engine, "_b = bytearray(230 * 1024 * 1024)").clean
    assert "MemoryError" in raw(engine, "_b = bytearray(300 * 1024 * 1024)").stderr


def test_a_bridge_answer_is_placed_whole(engine: SandboxEngine) -> None:
    session = StoreSession(engine, 10**10)
    bridge = Bridge(("input",), {"input": ("é" * 200_000).encode()}, 0)
    code = "_a = _call('input', '')\n_import('builtins').print(len(_a), _a[:2], _a == 'é' * 200000)"
    ending = run_store(engine, session, code, bridge, RunControl(time.monotonic() + 5))
    assert ending.stdout == "200000 éé True\n"


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
    ending = raw(engine, "sys = _import('sys')\nsys.stdout.write('x' * 200000)\nsys.stderr.write('y' * 200000)")
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


def test_the_server_refuses_to_start_with_another_snapshot_in_one_line(tmp_path: Path) -> None:
    """The pinned digest is changed in the server's process, as a snapshot built from other bytes would be met."""
    from tests.e2e.server_process import base_environment

    script = (
        "import sys\nimport auto_runtime.sandbox.artifact as artifact\n"
        "artifact.SNAPSHOT_SHA256['64M'] = '0' * 64\n"
        "from auto_runtime.cli import main\nsys.exit(main(['serve']))\n"
    )
    environment = base_environment(tmp_path)
    environment["PORT"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"The sandbox snapshot {snapshot_path('64M')} has SHA-256 ")
    assert lines[0].endswith(f"not the pinned {'0' * 64}; {REBUILD}")
