"""A queue that is fair across orgs and, inside an org, across playbooks: who waits for a sandbox worker.

Order: the next item served is the first eligible item (FIFO) of a playbook of the org that was served least
recently; inside that org, of its playbook that was served least recently; among orgs (or playbooks) never
served, or forgotten, the one whose item came first. Every service counts, the ones that never waited too
(`served`), so an org whose runs hold every worker comes after any org that waits behind them: a worker that
frees goes to the other org first, whatever the busy org sends.

Memory is bounded: a FIFO lives while it holds items, and the pool remembers the last `REMEMBERED` orgs and
playbooks it served (a forgotten one counts as never served, which only moves it ahead of orgs that were).

Not thread-safe: the caller guards it (the worker pool, with its lock). Items are compared by identity.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
K = TypeVar("K")

REMEMBERED = 4096


@dataclass(frozen=True)
class JobOwner:
    """Whom a job is for: the org and the playbook whose queue it waits in when every worker is busy."""

    org: str
    playbook: str


UNATTRIBUTED = JobOwner("", "")
"""The owner of jobs no org asked for (the save-time checker's, which never wait)."""


@dataclass(eq=False)
class _Entry(Generic[T]):
    item: T
    owner: JobOwner
    arrival: int


class FairQueue(Generic[T]):
    """Items waiting by org, then by playbook, each playbook's in arrival order; see the module docstring."""

    def __init__(self, remembered: int = REMEMBERED) -> None:
        self.remembered = remembered
        self._waiting: dict[str, dict[str, deque[_Entry[T]]]] = {}
        self._entries: dict[int, _Entry[T]] = {}
        self._org_served: OrderedDict[str, int] = OrderedDict()
        self._playbook_served: OrderedDict[JobOwner, int] = OrderedDict()
        self._arrivals = itertools.count()
        self._services = itertools.count(1)

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, item: T, owner: JobOwner) -> None:
        """`item` waits at the end of its owner's playbook's FIFO."""
        entry = _Entry(item, owner, next(self._arrivals))
        self._entries[id(item)] = entry
        self._waiting.setdefault(owner.org, {}).setdefault(owner.playbook, deque()).append(entry)

    def remove(self, item: T) -> bool:
        """Take `item` out of the queue (a waiter that gave up); False when it was not waiting."""
        entry = self._entries.pop(id(item), None)
        if entry is None:
            return False
        self._drop(entry)
        return True

    def pop_next(self, eligible: Callable[[T], bool] = lambda _: True) -> T | None:
        """The next eligible item in the fair order, counted as served and taken out; None when there is none."""
        best: _Entry[T] | None = None
        best_rank: tuple[int, int, int] | None = None
        for org, playbooks in self._waiting.items():
            org_rank = self._org_served.get(org, 0)
            for fifo in playbooks.values():
                first = next((entry for entry in fifo if eligible(entry.item)), None)
                if first is None:
                    continue
                rank = (org_rank, self._playbook_served.get(first.owner, 0), first.arrival)
                if best_rank is None or rank < best_rank:
                    best, best_rank = first, rank
        if best is None:
            return None
        del self._entries[id(best.item)]
        self._drop(best)
        self.served(best.owner)
        return best.item

    def served(self, owner: JobOwner) -> None:
        """Count a service of `owner`: its org and its playbook go behind every other."""
        service = next(self._services)
        _remember(self._org_served, owner.org, service, self.remembered)
        _remember(self._playbook_served, owner, service, self.remembered)

    def drain(self) -> list[T]:
        """Every waiting item, in arrival order, taken out of the queue."""
        entries = sorted(self._entries.values(), key=lambda entry: entry.arrival)
        self._entries.clear()
        self._waiting.clear()
        return [entry.item for entry in entries]

    def _drop(self, entry: _Entry[T]) -> None:
        playbooks = self._waiting[entry.owner.org]
        fifo = playbooks[entry.owner.playbook]
        fifo.remove(entry)
        if not fifo:
            del playbooks[entry.owner.playbook]
            if not playbooks:
                del self._waiting[entry.owner.org]


def _remember(served: OrderedDict[K, int], key: K, service: int, remembered: int) -> None:
    """`key` was served at `service`; only the `remembered` most recent keys are kept."""
    served[key] = service
    served.move_to_end(key)
    while len(served) > remembered:
        served.popitem(last=False)
