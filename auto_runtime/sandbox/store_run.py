"""One fresh store and instance, run from `_start` to its end on the calling thread.

Every run gets a new `Store`: the memory limit, one instance and one memory, the prelude's fuel, the
deadline callback, WASI with the given argv, an empty environment, no preopened directory, no stdin, and
stdout and stderr kept up to `LOG_BYTES` each. The store, its instance and its callback handle are dropped
before this returns, so nothing of a run outlives it.
"""

from __future__ import annotations

from dataclasses import dataclass

import wasmtime

from auto_runtime.sandbox.bridge import Bridge, activate
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl, install_deadline
from auto_runtime.sandbox.limits import HEAP_SIZE, LOG_BYTES, MEMORY_BYTES


class _BoundedLog:
    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.kept = 0

    def write(self, data: bytes) -> None:
        room = LOG_BYTES - self.kept
        if room > 0:
            piece = bytes(data[:room])
            self.parts.append(piece)
            self.kept += len(piece)

    def text(self) -> str:
        return b"".join(self.parts).decode("utf-8", "replace")


@dataclass(frozen=True)
class StoreEnding:
    """How `_start` ended: it returned (`exit_code` 0), exited, trapped, or was stopped with an error.

    `trap_functions` are the artifact's function indices of a trap's innermost frames, innermost first, as
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
        self.store.set_fuel(prelude_fuel)
        self.deadline_handle: object = None

    def set_fuel(self, fuel: int) -> None:
        self.store.set_fuel(fuel)

    def fuel_left(self) -> int:
        return int(self.store.get_fuel())


def run_store(
    engine: SandboxEngine,
    session: StoreSession,
    code: str,
    bridge: Bridge,
    control: RunControl,
    heap_size: str = HEAP_SIZE,
) -> StoreEnding:
    """Run MicroPython with `code` as its `-c` program in the session's store, on this thread."""
    store = session.store
    stdout = _BoundedLog()
    stderr = _BoundedLog()
    wasi = wasmtime.WasiConfig()
    wasi.argv = ["micropython", "-X", f"heapsize={heap_size}", "-c", code]
    wasi.env = []
    wasi.stdout_custom = stdout.write
    wasi.stderr_custom = stderr.write
    store.set_wasi(wasi)
    session.deadline_handle = install_deadline(store, control)
    exit_code: int | None = 0
    trap: str | None = None
    error: str | None = None
    trap_functions: tuple[int, ...] = ()
    activate(bridge)
    try:
        with engine.ticker.running():
            instance = engine.pre.instantiate(store)
            start = instance.exports(store)["_start"]
            start(store)
    except wasmtime.ExitTrap as exited:
        exit_code = int(exited.code)
    except wasmtime.Trap as trapped:
        exit_code = None
        trap = trapped.trap_code.name if trapped.trap_code is not None else f"trap: {trapped.message}"
        trap_functions = tuple(frame.func_index for frame in trapped.frames or ())
    except wasmtime.WasmtimeError as failed:
        exit_code = None
        error = str(failed) or type(failed).__name__
    finally:
        activate(None)
        instance = None
        start = None
    return StoreEnding(exit_code, trap, error, stdout.text(), stderr.text(), trap_functions)
