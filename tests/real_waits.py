"""How long each test waited in real time, and the report of the longest waits at the end of a run (issue 36:
no test waits more than `WAIT_BOUND_SECONDS` of real time for a limit of the contract).

A test's wait is its wall time (setup, call and teardown) less the CPU time that the test process and every
process under it (the servers and fakes it started, their children) spent over the same span: the time in
which nothing of the test worked, so the time it spent waiting for a clock, a limit or a timeout. The CPU is
read from `/proc` (`utime`, `stime` and the reaped children's `cutime`, `cstime` of each process of the tree,
found through `/proc/<pid>/task/<tid>/children`). Two parts of the tree working at once count twice, so a
wait can hide behind work; on a busy machine the time a process waits for a core counts as waiting: the
report is a quiet machine's.

Walking the tree costs a few milliseconds a test with the session's servers alive (some seconds of CPU over
the suite), so it is measured when asked for: `AUTO_RUNTIME_TEST_WAITS=1 make pytest` (`ENABLE`).

The waits travel to the controlling process of `pytest-xdist` in each report's `user_properties`, and the
terminal summary lists the longest, marking those past the bound. It reports; it never fails a test (a wait
under load is not the test's fault). The waits left over the bound, and why, are said in the closing note.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _pytest.terminal import TerminalReporter

ENABLE = "AUTO_RUNTIME_TEST_WAITS"
"""The environment variable that turns the measure on (`1`)."""
WAIT_BOUND_SECONDS = 5.0
"""The acceptance's bound on a test's real wait."""
LISTED = 15
"""How many of the longest waits the summary lists."""
PROPERTY = "real_wait_seconds"
_TICKS = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> Iterator[int]:
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return
    for task in tasks:
        try:
            listed = (task / "children").read_text().split()
        except OSError:
            continue
        yield from (int(child) for child in listed)


def tree_cpu_seconds(root: int) -> float:
    """The CPU seconds of `root` and of every process under it: their own, and their reaped children's."""
    total = 0
    pending = [root]
    while pending:
        pid = pending.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(field) for field in fields[11:15])
        pending.extend(_children(pid))
    return total / _TICKS


class RealWaits:
    """The plugin: measures on the process that runs the tests, collects and reports on the one that reports."""

    def __init__(self) -> None:
        self.started: dict[str, tuple[float, float]] = {}
        """Each running test's start: its wall clock and its tree's CPU seconds."""
        self.waits: dict[str, float] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> None:
        """Only where the tests run (not in xdist's controller, which hears of them)."""
        self.started[item.nodeid] = (time.monotonic(), tree_cpu_seconds(os.getpid()))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> None:
        """The teardown's report carries the whole test's wait (`user_properties` are copied into the report
        made after this hook)."""
        if call.when != "teardown" or (start := self.started.get(item.nodeid)) is None:
            return
        waited = max(0.0, (time.monotonic() - start[0]) - (tree_cpu_seconds(os.getpid()) - start[1]))
        kept = [(name, value) for name, value in item.user_properties if name != PROPERTY]
        item.user_properties[:] = [*kept, (PROPERTY, round(waited, 3))]

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.started.pop(nodeid, None)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == PROPERTY and isinstance(value, (int, float)):
                self.waits[report.nodeid] = float(value)

    def pytest_terminal_summary(self, terminalreporter: TerminalReporter) -> None:
        if not self.waits:
            return
        longest = sorted(self.waits.items(), key=lambda entry: -entry[1])[:LISTED]
        over = sum(1 for waited in self.waits.values() if waited > WAIT_BOUND_SECONDS)
        terminalreporter.section(
            f"longest real waits (wall time less the CPU of the test's processes; bound {WAIT_BOUND_SECONDS:g} s)"
        )
        for nodeid, waited in longest:
            flag = "  (over the bound)" if waited > WAIT_BOUND_SECONDS else ""
            terminalreporter.write_line(f"{waited:7.2f} s  {nodeid}{flag}")
        terminalreporter.write_line(f"{over} test(s) waited more than {WAIT_BOUND_SECONDS:g} s")
