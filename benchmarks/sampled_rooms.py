"""Where a server's busy time goes, by room: py-spy samples a running server while a route is under load.
Prints; asserts nothing.

Each sample is one thread's stack at one instant. A sample is *busy* unless its innermost frame is a wait: the
event loop's `epoll` wait, a condition or thread-cache wait, a sleep, or a wait on a `SimpleQueue` of the
sandbox (a C call, so the Python function waiting is the innermost frame: a companion between callables, an
expression instance or its input waiting for the other's turn) (`IDLE_FRAMES`). A busy sample is counted
against the room of its innermost frame: `auto_runtime/<room>` for the package's own code, the distribution's
top folder for a library (`trio`, `wasmtime`, `pykka`, ...). Native code runs under the Python
frame that called it, so a Wasmtime call counts as `wasmtime` and a SQLite statement as the caller's room.

The actor layer's share is the busy samples whose innermost frame is in `auto_runtime/actors` or `pykka`:
the mailboxes, asks, replies, registries and thread actors themselves, not the work they carry out.

Needs `py-spy` (a dev dependency) and the right to attach to a child process (root, or `ptrace_scope` 0).
"""

from __future__ import annotations

import collections
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

SAMPLES_A_SECOND = 250
ACTOR_ROOMS = frozenset({"auto_runtime/actors", "pykka"})
IDLE_FRAMES = (
    "EpollIOManager.get_events (trio/_core/_io_epoll.py",
    "Condition.wait (threading.py",
    "WorkerThread._work (trio/_core/_thread_cache.py:211)",
    "sleep (",
    "Companion._serve (auto_runtime/sandbox/companion.py",
    "_Conversation._take (auto_runtime/functions/workflow/engine/sandbox_evaluator.py",
    "_Instance.next_reply (auto_runtime/functions/workflow/engine/sandbox_evaluator.py",
)
_FILE_OF_FRAME = re.compile(r"\(([^()]*):\d+\)$")


@dataclass(frozen=True)
class Shares:
    """Busy samples by room, and how many samples were waits."""

    busy: Mapping[str, int]
    idle: int

    @property
    def total(self) -> int:
        return sum(self.busy.values())

    def share(self, rooms: frozenset[str]) -> float:
        return sum(count for room, count in self.busy.items() if room in rooms) / max(self.total, 1)


def room_of(frame: str) -> str:
    """The room of one py-spy frame, `function (file:line)`."""
    found = _FILE_OF_FRAME.search(frame)
    file = found.group(1) if found else "?"
    parts = file.split("/")
    if parts[0] == "auto_runtime":
        return "/".join(parts[:2]) if len(parts) > 2 else file
    return parts[0]


def shares_of(raw: str) -> Shares:
    """Counts py-spy's raw (collapsed) output: one line a distinct stack, `frame;frame;... count`."""
    busy: collections.Counter[str] = collections.Counter()
    idle = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        innermost = stack.rsplit(";", 1)[-1]
        if any(mark in innermost for mark in IDLE_FRAMES):
            idle += int(count)
        else:
            busy[room_of(innermost)] += int(count)
    return Shares(busy, idle)


def py_spy() -> str | None:
    """The `py-spy` beside this interpreter, or on `PATH`."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def sampled(pid: int, seconds: float, under_load: Callable[[], object]) -> Shares:
    """Samples process `pid` for `seconds` while `under_load()` runs (it should last at least as long)."""
    program = py_spy()
    if program is None:
        raise RuntimeError("py-spy is not installed (pip install py-spy)")
    with tempfile.TemporaryDirectory(prefix="auto-runtime-spy-") as folder:
        out = Path(folder) / "samples.txt"
        command = [program, "record", "-p", str(pid), "-r", str(SAMPLES_A_SECOND), "-d", str(int(seconds))]
        command += ["-f", "raw", "-o", str(out), "--threads", "--nonblocking"]
        spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        under_load()
        _, errors = spy.communicate()
        if spy.returncode != 0 or not out.exists():
            raise RuntimeError(f"py-spy failed: {errors.decode(errors='replace').strip()}")
        return shares_of(out.read_text())


def print_shares(label: str, shares: Shares, top: int = 6) -> None:
    """One line: the actor layer's share of the busy samples, then the largest rooms."""
    rooms = collections.Counter(shares.busy).most_common(top)
    largest = ", ".join(f"{room} {count / max(shares.total, 1):.1%}" for room, count in rooms)
    print(f"  {label:<28} actor layer {shares.share(ACTOR_ROOMS):6.2%} of {shares.total:,} busy samples ({largest})")
