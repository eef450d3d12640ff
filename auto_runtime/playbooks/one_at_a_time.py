"""Commands on one key go one at a time inside this process; commands on different keys never wait.

Saves of one playbook's definitions share a ledger stream per type, and changes to an org's playbooks share the
org's stream: each appends with the stream version it read, so two at once in one process would clash on the
ledger's expected version and retry, and past a few clashes answer `conflict` although they never touched the
same thing. Taking the key's turn first makes them meet one after the other. The expected version stays the
guard between server processes (the command loop's retry is for that).

Concurrency rules: one Trio event loop owns a `OneAtATime`; turns on one key are taken in the order they are
asked (a `trio.Lock` is fair). A key is kept only while a command holds or waits for its turn, so memory grows
with the commands in flight, never with the keys ever seen. A command cancelled while it waits gives up its
place and leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import trio

Key = TypeVar("Key", bound=Hashable)


@dataclass
class _Turns:
    lock: trio.Lock = field(default_factory=trio.Lock)
    users: int = 0
    """Commands holding or waiting for this key's turn; the entry goes when it is back to zero."""


class OneAtATime(Generic[Key]):
    """A turn per key: `async with one_at_a_time.turn(key):` runs its block while no other block of `key` runs."""

    def __init__(self) -> None:
        self._turns: dict[Key, _Turns] = {}

    @asynccontextmanager
    async def turn(self, key: Key) -> AsyncIterator[None]:
        turns = self._turns.get(key)
        if turns is None:
            turns = self._turns[key] = _Turns()
        turns.users += 1
        try:
            async with turns.lock:
                yield
        finally:
            turns.users -= 1
            if turns.users == 0:
                del self._turns[key]

    def __len__(self) -> int:
        """Keys with a command holding or waiting for their turn."""
        return len(self._turns)
