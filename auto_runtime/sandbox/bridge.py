"""The host side of the guest's bridge, and the run's clock and output.

A `Bridge` belongs to one run on one thread. Its calls answer once each and in the order given
(`program`, `input`, `start`, `end`, `result` for an evaluation; a program whose top level raised goes
from `program` straight to `result`); a call out of order or a second call is refused and marks the run
broken. The guest's `host.call(name, payload)` reaches `Bridge.call` through the host's `calln`
(`host_imports.py`), which places the answer in the guest's memory; `start` gives the store the work allowance,
`end` reads what is left and gives the writer its allowance.

The host functions find the guest's memory and `malloc` once per run (kept on the run's `Bridge`, which no other run
sees, as `c_api` handles) and copy bytes in and out of the memory directly, with the bounds `wasmtime.Memory.read`
and `write` apply. What the guest writes to its standard output and error is kept on the bridge, up to `LOG_BYTES`
each, for the log only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from auto_runtime.sandbox.c_api import Function, Memory
from auto_runtime.sandbox.limits import LOG_BYTES

_local = threading.local()

FINISHED = "finished"
"""`Bridge.stopped` once the guest sent its result: the host ended the instance, a clean ending."""


class BoundedLog:
    """Bytes a guest wrote to one stream, kept up to `LOG_BYTES`."""

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
        self.memory: Memory | None = None
        """The guest's memory, looked up at the first call that needs it."""
        self.malloc: Function | None = None
        """The guest's `malloc`, looked up at the first bridge answer."""
        self.stdout = BoundedLog()
        self.stderr = BoundedLog()
        self.stopped: str | None = None
        """Why the host stopped the guest (`FINISHED` after the result), or None (`host_imports`)."""

    @property
    def last_call(self) -> str | None:
        return self.order[self.position - 1] if self.position > 0 else None

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
    is a new one, so the memory and `malloc` the bridge found for an earlier store are forgotten."""
    if bridge is not None:
        bridge.memory = None
        bridge.malloc = None
    _local.bridge = bridge


def active_bridge() -> Bridge | None:
    bridge: Bridge | None = getattr(_local, "bridge", None)
    return bridge
