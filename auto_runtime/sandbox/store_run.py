"""One fresh store and instance of the snapshot, one line of the prelude executed in it, on the calling thread.

Every run gets a new `Store` (the memory limit, one instance and one memory, the prelude's fuel, the deadline
callback) and a new instance of the snapshot of its heap size (`engine.pres`), laid copy-on-write over the
snapshot's memory: the interpreter, its heap and the prelude are already set up, and nothing of another run is
reachable; the snapshot's tail (a few bytes far above the rest, `snapshot.py`) is written into it. The line
given (an entry of the prelude, such as `prelude.EVALUATE_ENTRY`) is written into the instance's memory and executed
with `mp_js_do_exec`, which returns once it ran; a Python exception it did not
catch comes back as the exception's text (kept with the run's stderr). The bridge's `result` call ends the
instance at once, a clean ending: nothing runs after the result. A guest the host stopped for any other reason
(`Bridge.stopped`) ends with that reason as its error, never as work used up. The store, its
instance and its callback handle are dropped before this returns, so nothing of a run outlives it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import wasmtime

from auto_runtime.sandbox import c_api
from auto_runtime.sandbox.bridge import FINISHED, Bridge, activate
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl, install_deadline
from auto_runtime.sandbox.limits import HEAP_SIZE, MEMORY_BYTES

_RESULT_CELL = 12
_PROXY_EXCEPTION = -1


@dataclass(frozen=True)
class StoreEnding:
    """How the line ended: it returned (`exit_code` 0), raised (`exit_code` 1), trapped, or was stopped with an
    error.

    `trap_functions` are the snapshot's function indices of a trap's innermost frames, innermost first, as
    far as Wasmtime reports them: what the guest was doing when it trapped."""

    exit_code: int | None
    trap: str | None
    error: str | None
    stdout: str
    stderr: str
    trap_functions: tuple[int, ...] = ()

    @property
    def clean(self) -> bool:
        return self.exit_code == 0 and self.trap is None and self.error is None


class StoreSession:
    """The live store of one run, for the bridge hooks that set and read its fuel."""

    def __init__(self, engine: SandboxEngine, prelude_fuel: int, memory_bytes: int = MEMORY_BYTES) -> None:
        self.store = wasmtime.Store(engine.engine)
        self.store.set_limits(memory_size=memory_bytes, instances=1, memories=1)
        self.context = c_api.context_of(self.store)
        """The store's context for the C API (`c_api`), valid while `store` lives."""
        c_api.set_fuel(self.context, prelude_fuel)
        self.deadline_handle: object = None

    def set_fuel(self, fuel: int) -> None:
        c_api.set_fuel(self.context, fuel)

    def fuel_left(self) -> int:
        return c_api.get_fuel(self.context)


def _execute(engine: SandboxEngine, context: int, code: bytes, heap_size: str) -> str | None:
    """Instantiate the snapshot and execute `code`; the text of an exception it let escape, or None."""
    instance = c_api.Instance(engine.pres[heap_size], context)
    memory = instance.memory()
    for offset, data in engine.tails[heap_size]:
        memory.write(context, data, offset)
    place = instance.function(b"malloc")(context, len(code) + 1 + _RESULT_CELL)
    out = place + len(code) + 1
    memory.write(context, code + bytes(1 + _RESULT_CELL), place)
    instance.function(b"mp_js_do_exec")(context, place, len(code), out)
    kind, length, text_at = struct.unpack("<iII", memory.read(context, out, out + _RESULT_CELL))
    if kind == _PROXY_EXCEPTION:
        return memory.read(context, text_at, text_at + length).decode("utf-8", "replace")
    return None


def run_store(
    engine: SandboxEngine,
    session: StoreSession,
    code: str,
    bridge: Bridge,
    control: RunControl,
    heap_size: str = HEAP_SIZE,
) -> StoreEnding:
    """Execute `code` in a fresh instance of the `heap_size` snapshot, in the session's store, on this thread."""
    store = session.store
    session.deadline_handle = install_deadline(store, control)
    exit_code: int | None = 0
    trap: str | None = None
    error: str | None = None
    trap_functions: tuple[int, ...] = ()
    escaped: str | None = None
    activate(bridge)
    try:
        with engine.ticker.running():
            escaped = _execute(engine, session.context, code.encode(), heap_size)
    except wasmtime.Trap as trapped:
        # wasmtime-py raises a trap from inside a generator (`enter_wasm`) whose frame holds the trap and the
        # store: a reference cycle that would keep the store's memory until Python's collector runs.
        trapped.__traceback__ = None
        if bridge.stopped == FINISHED:
            pass
        elif bridge.stopped is not None:
            exit_code = None
            error = f"the host stopped the guest: {bridge.stopped}"
        else:
            exit_code = None
            trap = trapped.trap_code.name if trapped.trap_code is not None else f"trap: {trapped.message}"
            trap_functions = tuple(frame.func_index for frame in trapped.frames or ())
    except wasmtime.WasmtimeError as failed:
        failed.__traceback__ = None
        exit_code = None
        error = str(failed) or type(failed).__name__
    finally:
        activate(None)
    if escaped is not None:
        exit_code = 1
        bridge.stderr.write(escaped.encode())
    return StoreEnding(exit_code, trap, error, bridge.stdout.text(), bridge.stderr.text(), trap_functions)
