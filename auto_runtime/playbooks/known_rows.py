"""Rows a process keeps in memory because it is the only writer of what they show (`Ledger.sole_writer`).

A `KnownRows` holds at most `capacity` values by key, the least recently used going first. Two ways in:

- `changed(key, value)`: the value as this process's own append just made it. It always wins.
- `forget(key)`: this process changed what the key shows; the next `get` misses and reads it again.
- `fill(key, value, ticket)`: a value read from the ledger on a miss. It is kept only when no `changed` came
  between the `ticket()` taken before the read and the fill (nor a `forget`), since the read may have seen the
  state before that change. A refused fill costs nothing but the next miss.

Concurrency: used from Trio tasks only (one thread), so each call is atomic; a read's await sits between
`ticket` and `fill`, which is what the ticket guards.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from cachetools import LRUCache

K = TypeVar("K")
V = TypeVar("V")


class KnownRows(Generic[K, V]):
    def __init__(self, capacity: int) -> None:
        self._rows: LRUCache[K, V] = LRUCache(capacity)
        self._changes = 0

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, key: K) -> V | None:
        return self._rows.get(key)

    def ticket(self) -> int:
        """Take before reading a value from the ledger; give it to `fill`."""
        return self._changes

    def fill(self, key: K, value: V, ticket: int) -> None:
        if ticket == self._changes:
            self._rows[key] = value

    def changed(self, key: K, value: V) -> None:
        self._changes += 1
        self._rows[key] = value

    def forget(self, key: K) -> None:
        self._changes += 1
        self._rows.pop(key, None)
