"""The timer loop's firing slots, handed out fairly across orgs and, inside an org, across playbooks.

A sweep fires the due entries of many runs at once, at most `total` runs at a time. When every slot is taken, a
run waits in the sandbox's `FairQueue` under its playbook (`JobOwner`), and a slot that frees goes to the waiter
of the org served least recently (then of its playbook served least recently), so one org whose runs keep
coming due (a runaway loop, a burst of timers) takes its turn like any other and never holds every slot while
another org waits. Every slot taken counts as a service, the ones taken without waiting too.

Concurrency: Trio only, one sweep's tasks; a freed slot is handed to the next waiter directly (it never returns
to the free count while one waits), and a waiter cancelled after it was handed one passes it on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from auto_runtime.ledger import OrgScope, PlaybookScope
from auto_runtime.sandbox.fair_queue import FairQueue, JobOwner


def owner_of(scope: OrgScope | PlaybookScope) -> JobOwner:
    """Whose turn a due entry of `scope` takes: its org and playbook (an org's own entries: the org's, no playbook)."""
    return JobOwner(scope.org, scope.playbook if isinstance(scope, PlaybookScope) else "")


class FairSlots:
    """At most `total` holders at once; waiters get a slot in the fair order of `FairQueue` (module docstring)."""

    def __init__(self, total: int) -> None:
        if total < 1:
            raise ValueError("there must be at least one slot")
        self.free = total
        self._waiting: FairQueue[trio.Event] = FairQueue()

    @property
    def waiting(self) -> int:
        """Holders waiting for a slot."""
        return len(self._waiting)

    @asynccontextmanager
    async def held(self, owner: JobOwner) -> AsyncIterator[None]:
        """Hold a slot for `owner` while the block runs, waiting for one in the fair order when none is free."""
        if self.free > 0 and not self._waiting:
            self.free -= 1
            self._waiting.served(owner)
        else:
            handed = trio.Event()
            self._waiting.add(handed, owner)
            try:
                await handed.wait()
            except BaseException:
                if not self._waiting.remove(handed):
                    self._release()
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        following = self._waiting.pop_next()
        if following is None:
            self.free += 1
        else:
            following.set()
