"""The bounds of a process's stderr in the log (issue 37.9), with an injected clock: a burst, then a rate; a cut
line; every line either logged or counted, and the count logged at most every `REPORT_SECONDS`."""

from __future__ import annotations

import logging

import pytest

from auto_runtime.tools.stderr_log import BURST_LINES, LINE_BYTES, LINES_PER_SECOND, REPORT_SECONDS, StderrLog


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if "(stderr)" in record.getMessage()]


def test_a_burst_is_logged_then_the_rest_is_counted_and_reported(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "auto_runtime.tools")
    clock = Clock()
    stderr = StderrLog("notes", lambda text: text.replace("sekret", "[redacted]"), clock)
    stderr.feed(b"".join(f"line {index} sekret\n".encode() for index in range(BURST_LINES + 1000)))
    lines = logged(caplog)
    assert len(lines) == BURST_LINES
    assert lines[0] == "tool server notes (stderr): line 0 [redacted]"
    assert stderr.dropped == 1000 and stderr.last_line == f"line {BURST_LINES + 999} sekret"
    clock.now = 1.0
    stderr.feed(b"".join(f"more {index}\n".encode() for index in range(100)))
    lines = logged(caplog)
    assert len(lines) == BURST_LINES + int(LINES_PER_SECOND)
    assert stderr.dropped == 1000 + 100 - int(LINES_PER_SECOND)
    clock.now = REPORT_SECONDS
    stderr.report_if_due()
    assert (
        logged(caplog)[-1]
        == f"tool server notes (stderr): 1050 lines dropped, past {LINES_PER_SECOND:g} lines a second"
    )
    assert stderr.dropped == 0


def test_a_long_line_is_cut_and_its_rest_never_kept(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "auto_runtime.tools")
    stderr = StderrLog("notes", lambda text: text, Clock())
    for _ in range(100):
        stderr.feed(b"z" * 10_000)
    stderr.feed(b"\nnext\n")
    first, second = logged(caplog)
    assert first == f"tool server notes (stderr): {'z' * LINE_BYTES} [{1_000_000 - LINE_BYTES:,} more bytes cut]"
    assert second == "tool server notes (stderr): next"
