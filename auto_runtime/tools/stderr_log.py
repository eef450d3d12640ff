"""A process's stderr into the server's log, bounded as journald and Docker's log drivers bound a unit's output.

A tool server's stderr is the tool server's to write: one that floods it (16 MB/s was measured) must not take the
server's log, its disk or its Trio thread. So:

- a token bucket of `BURST_LINES` lines, refilled at `LINES_PER_SECOND`, decides which lines are logged; the
  others are counted, and the count is logged as one line every `REPORT_SECONDS` at most while lines are dropped
  (journald's `RateLimitIntervalSec`/`RateLimitBurst`, and its "Suppressed N messages" line);
- a line is cut at `LINE_BYTES` bytes (the rest of it, to its line break, is not read into memory), with a note of
  what was cut (Docker's drivers split long lines; a cut keeps one line one line);
- while the bucket is empty, a chunk's lines are counted at once (`bytes.count`), never split one by one, so a
  flood costs the reader little more than reading it.

Every line logged is scrubbed of the shared secrets. `last_line` keeps the newest line the process wrote, logged
or dropped, for the words of a server that fails to start.

Concurrency rules: one `StderrLog` per pipe, fed by the one task that reads it, on the Trio thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger("auto_runtime.tools")

LINES_PER_SECOND = 50.0
"""The lines of one server's stderr logged a second, on average, past a burst."""
BURST_LINES = 500
"""The lines logged at once after a quiet spell: the bucket's size."""
LINE_BYTES = 4096
"""The longest line logged; the rest of a longer line is cut."""
REPORT_SECONDS = 10.0
"""How often, at most, the count of the lines dropped is logged while lines are dropped."""


class StderrLog:
    """One pipe's lines into the log, within the bounds above; `clock` gives seconds (the server's clock: a move
    refills the bucket and makes a report due, as the time passing would)."""

    def __init__(self, name: str, scrub: Callable[[str], str], clock: Callable[[], float]) -> None:
        self.name = name
        self.scrub = scrub
        self.clock = clock
        self.tokens = float(BURST_LINES)
        self.refilled_at: float | None = None
        """When the bucket was last refilled; None until the first line (the clock is read only then)."""
        self.dropped = 0
        self.reported_at: float | None = None
        self.last_line = ""
        self._partial = bytearray()
        self._cut = 0

    def feed(self, chunk: bytes) -> None:
        """The next bytes read from the pipe."""
        start = 0
        while start < len(chunk):
            self._refill()
            if self.tokens < 1:
                self._count(chunk, start)
                break
            end = chunk.find(b"\n", start)
            if end < 0:
                self._keep(chunk[start:])
                break
            self._keep(chunk[start:end])
            self._line()
            start = end + 1
        self.report_if_due()

    def report_if_due(self) -> None:
        """Log the count of the lines dropped, when there is one and `REPORT_SECONDS` have passed."""
        if self.reported_at is None:
            self.reported_at = self.clock()
        elif self.dropped and self.clock() - self.reported_at >= REPORT_SECONDS:
            self.report()

    def report(self) -> None:
        """Log the count of the lines dropped since the last report, if any."""
        if self.dropped:
            log.warning(
                "tool server %s (stderr): %d lines dropped, past %g lines a second",
                self.name,
                self.dropped,
                LINES_PER_SECOND,
            )
            self.dropped = 0
        self.reported_at = self.clock()

    def _refill(self) -> None:
        now = self.clock()
        since = now - self.refilled_at if self.refilled_at is not None else 0.0
        self.tokens = min(float(BURST_LINES), self.tokens + since * LINES_PER_SECOND)
        self.refilled_at = now

    def _keep(self, part: bytes) -> None:
        room = LINE_BYTES - len(self._partial)
        self._partial += part[:room]
        self._cut += max(0, len(part) - room)

    def _line(self) -> None:
        text = self._partial.decode("utf-8", errors="replace").rstrip()
        cut = self._cut
        self._partial.clear()
        self._cut = 0
        if not text:
            return
        self.last_line = text
        if self.tokens < 1:
            self.dropped += 1
            return
        self.tokens -= 1
        note = f" [{cut:,} more bytes cut]" if cut else ""
        log.warning("tool server %s (stderr): %s%s", self.name, self.scrub(text), note)

    def _count(self, chunk: bytes, start: int) -> None:
        """Every line ending in `chunk[start:]` dropped at once, the newest kept as `last_line`."""
        last_end = chunk.rfind(b"\n", start)
        if last_end < 0:
            self._keep(chunk[start:])
            return
        self.dropped += chunk.count(b"\n", start, last_end + 1)
        before = chunk.rfind(b"\n", start, last_end)
        if before < 0:
            self._keep(chunk[start:last_end])
        else:
            self._partial.clear()
            self._keep(chunk[before + 1 : last_end])
        text = self._partial.decode("utf-8", errors="replace").rstrip()
        self.last_line = text or self.last_line
        self._partial.clear()
        self._cut = 0
        self._keep(chunk[last_end + 1 :])
