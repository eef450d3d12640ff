"""The engine's memory slots (`sandbox/memory_slots.py`): a store's linear memory comes from a slot kept partly
resident, and nothing a dropped store wrote there is readable by the next store that takes the slot.

The host reads the guest's memory directly (what no program can do), before and after each run, on one thread,
one store after another, as a worker runs its jobs: the marker a run left fills its memory when it ends, and the
next instance's memory holds none of it, neither before its own `_start` nor after.
"""

from __future__ import annotations

import wasmtime

from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.limits import MEMORY_BYTES
from auto_runtime.sandbox.memory_slots import KEEP_RESIDENT

MARKER = b"left-by-the-earlier-run:"
LEAVES_A_MARKER = f"kept = {MARKER!r} * 400000\nsmall = {MARKER!r} * 3"
TRIVIAL = "pass"


def _memory_after(engine: SandboxEngine, code: str, *, before_start: bool = False) -> bytes:
    """Everything in a fresh store's linear memory: just instantiated, or once `_start` of `code` ended."""
    store = wasmtime.Store(engine.engine)
    store.set_limits(memory_size=MEMORY_BYTES, instances=1, memories=1)
    store.set_fuel(10**10)
    store.set_epoch_deadline(10**9)
    wasi = wasmtime.WasiConfig()
    wasi.argv = ["micropython", "-X", "heapsize=240M", "-c", code]
    store.set_wasi(wasi)
    instance = engine.pre.instantiate(store)
    memory = instance.exports(store)["memory"]
    assert isinstance(memory, wasmtime.Memory)
    if not before_start:
        try:
            instance.exports(store)["_start"](store)
        except wasmtime.ExitTrap as exited:
            assert exited.code == 0
    return bytes(memory.read(store, 0, memory.data_len(store)))


def test_a_store_takes_a_slot_that_holds_nothing_of_the_store_before(engine: SandboxEngine) -> None:
    for _ in range(3):
        left = _memory_after(engine, LEAVES_A_MARKER)
        assert left.count(MARKER) >= 400_000, "the run left its marker in memory (so the test can fail)"
        assert left.find(MARKER) < KEEP_RESIDENT < left.rfind(MARKER), "both in the resident part and past it"
        assert MARKER not in _memory_after(engine, TRIVIAL, before_start=True)
        assert MARKER not in _memory_after(engine, TRIVIAL)
