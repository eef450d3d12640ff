"""The oldest-first global feed's position and the in-process "something was appended" signal."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import trio


@dataclass(frozen=True, slots=True, order=True)
class FeedPosition:
    """Where a follower has read to in `read_forward`: the sort key of the last record it saw.

    On SQLite `commit_order` equals `global_position`; on PostgreSQL it is the appending transaction's
    id. Positions are only comparable within one store.
    """

    commit_order: int
    global_position: int


class AppendSignal:
    """Wakes followers after appends commit in this process (and, on PostgreSQL, in any process
    sharing the database, through LISTEN/NOTIFY).

    Lives on the Trio side: `notify` must run in the Trio thread (stores call it through the Trio
    token). A follower reads `generation`, reads the feed, then `await wait_beyond(generation)`;
    an append committed between its read and its wait is never missed. A follower on PostgreSQL
    should also wake on a timeout, since a record behind the horizon appears without a new append.
    """

    def __init__(self) -> None:
        self._generation = 0
        self._event = trio.Event()

    @property
    def generation(self) -> int:
        """How many notifications this process has seen."""
        return self._generation

    def notify(self) -> None:
        """Wake every waiter (Trio thread only)."""
        self._generation += 1
        self._event.set()
        self._event = trio.Event()

    async def wait_beyond(self, generation: int) -> None:
        """Return once `generation` is behind the signal's (at once when it already is)."""
        while self._generation <= generation:
            await self._event.wait()


class KeyedSignal:
    """Wakes the waiters of one key (a run id) when it is told, not every waiter at every append.

    Lives on the Trio side, like `AppendSignal`. A waiter takes `watch(key)` *before* it reads what it waits for,
    then waits on the event it got: a `notify` of the key between its read and its wait is never missed. One
    event a key: waiters of one key share it, and `notify` drops it (a later `watch` makes a new one). A waiter
    that stops waiting without being told calls `forget(key, event)`, so nothing is kept for a key no one tells.
    """

    def __init__(self) -> None:
        self._events: dict[str, trio.Event] = {}

    def watch(self, key: str) -> trio.Event:
        """The event set at the next `notify` naming `key` (Trio thread only)."""
        event = self._events.get(key)
        if event is None:
            event = self._events[key] = trio.Event()
        return event

    def notify(self, keys: Iterable[str]) -> None:
        """Wake the waiters of each of `keys` (Trio thread only)."""
        for key in keys:
            event = self._events.pop(key, None)
            if event is not None:
                event.set()

    def forget(self, key: str, event: trio.Event) -> None:
        """Stop keeping `event` for `key` (a waiter gave up); nothing when the key has another event by now."""
        if self._events.get(key) is event:
            del self._events[key]

    def __len__(self) -> int:
        """How many keys are watched."""
        return len(self._events)


StreamsListener = Callable[[frozenset[str]], None]


class StreamsAppended:
    """Tells listeners which streams each append of this process wrote to, once it committed (a stream's name
    begins with its scope's key, `streams.scope_key_of`).

    Trio thread only: `tell` runs in the appending task, after the append returned, and each listener must only
    note the streams and return (it must not block or await). Appends made by other processes sharing a
    PostgreSQL ledger are not told here: a follower that needs them reads again at its sweep (`AppendSignal`
    wakes on them but says nothing of where they landed).
    """

    def __init__(self) -> None:
        self._listeners: list[StreamsListener] = []

    @contextmanager
    def listening(self, listener: StreamsListener) -> Iterator[None]:
        """Tell `listener` the streams of every append committed while the block runs."""
        self._listeners.append(listener)
        try:
            yield
        finally:
            self._listeners.remove(listener)

    def tell(self, streams: frozenset[str]) -> None:
        for listener in tuple(self._listeners):
            listener(streams)
