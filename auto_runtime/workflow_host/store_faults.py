"""How the workflow host's background loops (the timer loop, the reactions follower) wait out a ledger that
cannot take writes (`LedgerUnavailable`, a full disk).

A full disk is a passing fault: such a loop does not end (its supervisor would restart it, and a second end
within the restart intensity would stop the server). It leaves what it could not record where it was (due
entries stay armed, the follower's saved position stays put), waits, and tries again, waiting longer after
each fault in a row, up to `FAULT_BACKOFF.maximum`; the first sweep that goes through resets the wait. The
ledger warns once when the fault begins and once when it ends; each loop says at `info` when it starts
waiting and when it goes on.
"""

from __future__ import annotations

import logging
from typing import Final

from auto_runtime.supervision.backoff import Backoff

log = logging.getLogger("auto_runtime.workflows")

FAULT_BACKOFF: Final = Backoff(initial=0.1, factor=2.0, maximum=5.0)


class FaultPause:
    """The wait of one loop (`what`, for the log) after its faults in a row."""

    def __init__(self, what: str, backoff: Backoff = FAULT_BACKOFF) -> None:
        self.what = what
        self.backoff = backoff
        self.in_a_row = 0

    def after_fault(self) -> float:
        """Seconds to wait before trying again after one more fault."""
        self.in_a_row += 1
        if self.in_a_row == 1:
            log.info("%s: the ledger cannot take writes (its disk is full); waiting to try again", self.what)
        return self.backoff.delay(self.in_a_row)

    def went_through(self) -> None:
        if self.in_a_row:
            log.info("%s: the ledger takes writes again; going on", self.what)
        self.in_a_row = 0
