"""The save-time checkers: two threads of their own, apart from the run workers (settled point 13).

The checkers start with their `Checkers` and stay until closed. A check runs on a checker thread within
`CHECK_SECONDS` of wall-clock time counted from when the checker takes it; past that it is
`CheckTimedOut` (a refusal, `invalid_input`, for the caller). A check that finds no checker ready raises
`CheckerUnavailable` at once (`unavailable`, 503): the seeds' rule, which wins over settled point 13's
"none ready within its 2 s". A checker that timed out or broke ends and the pool starts a fresh one.

`compile_pass` is the third pass: the sandbox's own MicroPython compiles the program without running it.
The pass is part of the check, so a compile that passes its bounds (its fuel, the heap, the stack) is the
program's problem, refused, never a breakage: MicroPython computes numbers written with constants while it
compiles (`7 ** 10000000`), and the largest such number, when it is large, is blamed at its line; without
one, `CompileBeyondBounds` says so without a line.
"""

from __future__ import annotations

import ctypes
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

from auto_runtime.sandbox.bridge import Bridge
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.limits import COMPILE_FUEL
from auto_runtime.sandbox.prelude import COMPILE_ENTRY
from auto_runtime.sandbox.program_rules import FOLDED_BITS, SANDBOX_CANNOT_READ, Problem, largest_folded_number
from auto_runtime.sandbox.store_run import StoreSession, run_store
from auto_runtime.sandbox.workers import NoWorkerFree, WorkerPool

CHECK_SECONDS = 2.0
CHECKERS = 2
CHECK_TIMED_OUT = "The check of the program did not finish within 2 seconds; make the program smaller or simpler"
NUMBER_TOO_LARGE = "compiling it computes a number too large for the check's bounds; write a smaller number"
"""After the compile pass's `cannot read` prefix, for the line of the number it could not compute."""
COMPILE_BEYOND_BOUNDS = (
    "The sandbox's Python could not compile the program within the check's bounds; make the program smaller or simpler"
)

T = TypeVar("T")
_PROGRAM_FRAME = re.compile(r'File "program", line (\d+)')


class CheckerUnavailable(Exception):
    """No checker was ready to take the check."""


class CheckTimedOut(Exception):
    """The check did not finish within its wall-clock time."""


class CompileBeyondBounds(Exception):
    """The compile pass passed its fuel, heap or stack, and no number written with constants explains it."""


class CheckBroken(Exception):
    """The sandbox broke while compiling: the runtime's own failure, not the program's."""


def _raise_in(thread_id: int, error: type[BaseException] | None) -> None:
    """Set (or, with None, withdraw) an exception that Python raises in that thread at its next instruction."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(error) if error else None)


@contextmanager
def stopped_at_deadline(control: RunControl) -> Iterator[None]:
    """Stop the Python code of this block, on this thread, with `CheckTimedOut` once `control`'s deadline passes.

    The epoch ticker stops only the sandbox; the first two passes are Python (YAML, JSON Schema, `ast`), and a
    small document can keep them busy for minutes (a schema whose YAML aliases multiply its subschemas). A
    stop that was set but not yet raised when the block ends is withdrawn, so it never lands outside it."""
    thread_id = threading.get_ident()
    lock = threading.Lock()
    inside = [True]

    def interrupt() -> None:
        with lock:
            if inside[0]:
                _raise_in(thread_id, CheckTimedOut)

    timer = threading.Timer(max(0.0, control.deadline - time.monotonic()), interrupt)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            inside[0] = False
            _raise_in(thread_id, None)


def compile_pass(engine: SandboxEngine, source: str, first_line: int, control: RunControl) -> Problem | None:
    """Compile the program in the sandbox; the first line it cannot read, or None."""
    import json

    request = json.dumps({"source": source, "first_line": first_line}, ensure_ascii=False).encode()
    session = StoreSession(engine, COMPILE_FUEL)
    bridge = Bridge(("program", "result"), {"program": request}, clock_ns=0)
    ending = run_store(engine, session, COMPILE_ENTRY, bridge, control)
    del session
    if control.stopped is not None:
        raise CheckTimedOut()
    if bridge.refused is None and (ending.trap is not None or (bridge.result or b"").startswith(b"E")):
        return _beyond_bounds(source, first_line)
    if bridge.refused is not None or not ending.clean or bridge.result is None:
        raise CheckBroken(bridge.refused or ending.trap or ending.error or ending.stderr[-500:])
    if bridge.result == b"C":
        return None
    if not bridge.result.startswith(b"S"):
        raise CheckBroken(f"an unknown compile answer {bridge.result[:20]!r}")
    trace, message = json.loads(bridge.result[1:].decode("utf-8", "replace"))
    lines = _PROGRAM_FRAME.findall(trace)
    line = int(lines[-1]) if lines else first_line
    return (line, 0, SANDBOX_CANNOT_READ + (message or "invalid syntax"))


def _beyond_bounds(source: str, first_line: int) -> Problem:
    """The compile pass ran out of fuel, heap or stack (a trap, or `MemoryError`/`RuntimeError` raised while
    compiling): blame the largest number the compiler computes, or raise `CompileBeyondBounds`."""
    largest = largest_folded_number(source)
    if largest is None or largest[1] <= FOLDED_BITS:
        raise CompileBeyondBounds()
    return (largest[0] + first_line - 1, 0, SANDBOX_CANNOT_READ + NUMBER_TOO_LARGE)


class Checkers(Generic[T]):
    """The checker threads. `check(job)` runs `job(control)` with a control that stops it at 2 seconds."""

    def __init__(self, count: int = CHECKERS, seconds: float = CHECK_SECONDS) -> None:
        self.seconds = seconds
        self.pool = WorkerPool(count, name="sandbox-checker", wait_seconds=0.0, idle_seconds=None)
        self.pool.prestart()

    async def check(self, job: Callable[[RunControl], T]) -> T:
        """The job's result; `CheckerUnavailable` when none is ready, `CheckTimedOut` past the time."""
        seconds = self.seconds

        def timed(control: RunControl) -> tuple[T, bool]:
            control.deadline = time.monotonic() + seconds
            result = job(control)
            if time.monotonic() > control.deadline:
                raise CheckTimedOut()
            return result, False

        control = RunControl(time.monotonic() + 3600.0)
        try:
            return await self.pool.submit(timed, control)
        except NoWorkerFree as error:
            raise CheckerUnavailable("No checker is ready") from error

    def close(self) -> None:
        self.pool.close()
