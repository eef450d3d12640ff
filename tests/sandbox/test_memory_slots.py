"""The engine's memory slots (`sandbox/memory_slots.py`): an instance's linear memory is the snapshot's image laid
copy-on-write into a slot, and nothing a dropped store wrote there is readable by the next store that takes it.

The host reads the guest's memory directly (what no program can do), on one thread, one store after another, as
a worker runs its jobs: the marker a run left fills its memory when it ends, and the next instance's memory holds
none of it, neither when just instantiated nor once its own line ran; it holds the snapshot's image instead.
"""

from __future__ import annotations

import time

import pytest
import wasmtime

from auto_runtime.sandbox.artifact import load_artifact
from auto_runtime.sandbox.bridge import Bridge, activate
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl, install_deadline
from auto_runtime.sandbox.store_run import StoreSession
from auto_runtime.sandbox.wasm_binary import DATA, find, read_data, read_sections

MARKER = b"left-by-the-earlier-run:"
LEAVES_A_MARKER = f"_kept = {MARKER!r} * 400000\n_small = {MARKER!r} * 3\n_big = bytearray(b'\\xab' * 50000000)"
TRIVIAL = "pass"


def _memory_after(engine: SandboxEngine, code: str, *, before_running: bool = False) -> bytes:
    """Everything in a fresh instance's linear memory: just instantiated, or once `code` ran."""
    session = StoreSession(engine, 10**10)
    session.deadline_handle = install_deadline(session.store, RunControl(time.monotonic() + 30))
    activate(Bridge((), {}, 0))
    try:
        instance = engine.pres["240M"].instantiate(session.store)
        exports = instance.exports(session.store)
        memory = exports["memory"]
        assert isinstance(memory, wasmtime.Memory)
        if not before_running:
            for offset, data in engine.tails["240M"]:
                memory.write(session.store, data, offset)
            encoded = code.encode()
            place = int(exports["malloc"](session.store, len(encoded) + 13))
            memory.write(session.store, encoded + bytes(13), place)
            exports["mp_js_do_exec"](session.store, place, len(encoded), place + len(encoded) + 1)
        return bytes(memory.read(session.store, 0, memory.data_len(session.store)))
    finally:
        activate(None)


@pytest.mark.slow(seconds=22)
def test_a_store_takes_a_slot_that_holds_nothing_of_the_store_before(engine: SandboxEngine) -> None:
    image = read_data(find(read_sections(load_artifact("240M").wasm), DATA))
    for _ in range(3):
        left = _memory_after(engine, LEAVES_A_MARKER)
        assert left.count(MARKER) >= 400_000, "the run left its marker in memory (so the test can fail)"
        assert left.count(b"\xab" * 4096) >= 12_000
        fresh = _memory_after(engine, TRIVIAL, before_running=True)
        assert MARKER not in fresh and b"\xab" * 64 not in fresh
        assert all(fresh[s.offset : s.offset + len(s.data)] == s.data for s in image), "the snapshot's image"
        assert MARKER not in _memory_after(engine, TRIVIAL)
