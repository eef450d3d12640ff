"""Passing store faults (a full disk): the one log line when the store starts refusing writes, and the one
when it takes them again.

Both stores report through a `FaultLog`, so an operator reads one warning per episode, not one per refused
write, whichever request or background loop met it first. The SQLite writer thread and the Trio thread (for
PostgreSQL) call it; a race between threads can at worst repeat a line.
"""

from __future__ import annotations

import logging

from .errors import LedgerUnavailable

log = logging.getLogger("auto_runtime.ledger")


class FaultLog:
    """Whether the store is refusing writes now, logged once at each change."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.failing = False

    def refused(self, cause: str) -> LedgerUnavailable:
        """A write met a passing fault: the error to raise to its caller (logged when the episode begins)."""
        if not self.failing:
            self.failing = True
            log.warning(
                "%s: the disk is full (%s); writes answer unavailable until space is freed, reads go on",
                self.where,
                cause,
            )
        return LedgerUnavailable(cause)

    def took(self) -> None:
        """A write committed: the episode, if any, is over."""
        if self.failing:
            self.failing = False
            log.info("%s: writes are taken again", self.where)
