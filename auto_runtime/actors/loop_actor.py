"""Loop actors: an asyncio event loop on a thread of its own, with a thread actor's address (`BridgedRef`).

For a resource that needs asyncio (asyncpg, for the PostgreSQL ledger) in a Trio process. Each life is one
thread running one event loop: the behaviour (`LoopActor`) is built on it and its `on_start` runs first; each
message then runs as an asyncio task of its own, concurrently with the others, and its outcome goes back
through the one bridge (`thread_bridge.TrioPort`), the outcomes of every task that finished in one turn of the
loop with one hop to Trio.

Concurrency rules (beyond `thread_actor`'s, which hold for the mailbox, claims and restarts)
- Messages reach the loop with `call_soon_threadsafe` and are claimed there; a message whose asker was
  cancelled before the loop took it is skipped.
- Cancelling an asker cancels the message's asyncio task (through `Reply.on_abandon`); the task's work is
  cancelled the asyncio way (asyncpg cancels the running query and rolls back).
- An `Exception` from `receive` answers its asker; the life goes on. Anything else (a `BaseException` that
  is not a cancellation) ends the life as a crash: its asker gets it, the tasks already running are cancelled
  and their askers get `ActorCrashedError`, and the messages taken but not yet begun go back to the mailbox
  for the next life; the supervisor decides what comes next.
- A graceful stop lets the tasks running finish, runs `on_stop` and ends the loop and its thread. A cancelled
  life (shutdown timeout) cancels the running tasks and skips what was not started. Unlike a thread actor's,
  `on_stop` also runs after a crash once the tasks are cancelled (the loop can still run it), so a life's
  connections are closed however it ends; only a crash that stops the loop itself skips it.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import functools
import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import outcome

from auto_runtime.actors.errors import ActorCrashedError
from auto_runtime.actors.thread_actor import BridgedRef, Envelope, Life
from auto_runtime.actors.trio_actor import DEFAULT_MAILBOX_CAPACITY

log = logging.getLogger("auto_runtime.supervision.loop_actor")

M = TypeVar("M")
R = TypeVar("R")


class LoopActor(abc.ABC, Generic[M, R]):
    """An asyncio behaviour: built on its life's loop thread; `receive` runs once per message, concurrently."""

    async def on_start(self) -> None:
        """Prepare before the first message (an error fails the life)."""

    @abc.abstractmethod
    async def receive(self, message: M) -> R:
        """Handle one message as a task of its own; the return value is the reply to an `ask`."""

    async def on_stop(self) -> None:
        """Release what the instance holds at the end of the life (graceful, or after a crash)."""


class _LoopHost:
    """One life: a thread running an event loop. `wake` and `halt` are called from the Trio thread."""

    def __init__(self, ref: LoopActorRef[Any, Any], life: Life, factory: Callable[[], LoopActor[Any, Any]]) -> None:
        self._ref = ref
        self._life = life
        self._factory = factory
        self._loop = asyncio.new_event_loop()
        self._halted: asyncio.Event | None = None
        self._tasks: dict[Envelope, asyncio.Task[Any]] = {}
        self._started: set[Envelope] = set()
        self._finished: list[tuple[Envelope, outcome.Outcome[Any]]] = []
        self._instance: LoopActor[Any, Any] | None = None
        self._dead = False
        self.thread = threading.Thread(target=self._run, name=f"actor-{ref.name}", daemon=True)

    def wake(self) -> None:
        with contextlib.suppress(RuntimeError):  # a loop already closed: the next life gets the message
            self._loop.call_soon_threadsafe(self._take)

    def halt(self) -> None:
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._halt)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._live())
        except BaseException as error:  # asyncio lets SystemExit and KeyboardInterrupt out of the loop
            running = list(self._tasks)
            self._tasks.clear()
            if not self._dead:
                self._dead = True
                self._life.report(self._ref._crashed, self._life, running, error)
            self._life.report(self._life.stopped.set)
        finally:
            self._loop.close()

    async def _live(self) -> None:
        self._halted = asyncio.Event()
        try:
            instance = self._factory()
            await instance.on_start()
        except BaseException as error:
            self._die(None, error)
            return
        self._instance = instance
        self._life.report(self._life.ready.set)
        await self._halted.wait()
        if self._life.abandoned or self._dead:
            for task in self._tasks.values():
                task.cancel()
        while self._tasks:
            await asyncio.wait(list(self._tasks.values()))
        try:
            await instance.on_stop()
        except BaseException as error:
            log.warning("loop actor %s: on_stop failed: %r", self._ref.name, error)
        self._flush()
        self._life.report(self._life.stopped.set)

    def _halt(self) -> None:
        if self._halted is not None:
            self._halted.set()

    def _take(self) -> None:
        """Start a task for each message in the life's inbox (on the loop)."""
        self._life.wake_pending = False
        instance = self._instance
        if instance is None or self._dead or self._life.abandoned:
            return
        inbox = self._life.inbox
        while inbox:
            envelope = inbox.popleft()
            if not self._ref._claim(envelope):
                continue
            if envelope.abandoned:
                self._finish(envelope, None)
                continue
            task = self._loop.create_task(self._handle(instance, envelope))
            self._tasks[envelope] = task
            task.add_done_callback(functools.partial(self._done, envelope))
            if envelope.reply is not None:
                envelope.reply.on_abandon = lambda task=task: self._cancel_soon(task)

    async def _handle(self, instance: LoopActor[Any, Any], envelope: Envelope) -> Any:
        self._started.add(envelope)
        return await instance.receive(envelope.message)

    def _cancel_soon(self, task: asyncio.Task[Any]) -> None:
        """The asker was cancelled (called on the Trio thread)."""
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(task.cancel)

    def _done(self, envelope: Envelope, task: asyncio.Task[Any]) -> None:
        self._tasks.pop(envelope, None)
        started = envelope in self._started
        self._started.discard(envelope)
        if self._dead and not started:
            return  # given back to the mailbox by the crash: the next life runs it
        if task.cancelled():
            self._finish(envelope, outcome.Error(asyncio.CancelledError()))
            return
        error = task.exception()
        if error is None:
            self._finish(envelope, outcome.Value(task.result()))
        elif isinstance(error, Exception):
            self._finish(envelope, outcome.Error(error))
        else:
            self._die(envelope, error)

    def _finish(self, envelope: Envelope, result: outcome.Outcome[Any] | None) -> None:
        """Queue an outcome (None: skipped); one flush per turn of the loop answers them all."""
        if not self._finished:
            self._loop.call_soon(self._flush)
        self._finished.append((envelope, result if result is not None else _SKIPPED))

    def _flush(self) -> None:
        finished, self._finished = self._finished, []
        if finished:
            self._life.report(self._ref._answer, finished)

    def _die(self, envelope: Envelope | None, error: BaseException) -> None:
        if self._dead:
            return
        self._dead = True
        self._flush()
        crashed = [envelope] if envelope is not None else []
        for running, task in self._tasks.items():
            task.cancel()
            if running not in self._started:
                self._ref._unclaim(running)
            elif running.reply is not None:
                self._finished.append((running, outcome.Error(ActorCrashedError(self._ref.name, error))))
        self._life.report(self._ref._crashed, self._life, crashed, error)
        self._halt()


_SKIPPED: outcome.Outcome[Any] = outcome.Error(asyncio.CancelledError())
"""The outcome of a message skipped because nobody waits for it (its reply is abandoned already)."""


class LoopActorRef(BridgedRef[M, R, LoopActor[M, R]]):
    """The address of a loop actor: a bounded mailbox valid across restarts (threads with the default stack)."""

    def __init__(self, name: str, capacity: int = DEFAULT_MAILBOX_CAPACITY, *, stack_size: int = 0) -> None:
        super().__init__(name, capacity, stack_size=stack_size)

    def _launch(self, life: Life, factory: Callable[[], LoopActor[M, R]]) -> None:
        host = _LoopHost(self, life, factory)
        life.wake = host.wake
        life.halt = host.halt
        host.thread.start()

    def _answer(self, finished: list[tuple[Envelope, outcome.Outcome[Any]]]) -> None:
        """Trio thread: the messages are done; answer their askers in the order they finished."""
        for envelope, result in finished:
            self._pending.pop(envelope.seq, None)
            if envelope.reply is not None:
                envelope.reply.settle(result)
