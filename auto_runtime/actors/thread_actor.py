"""Thread actors: a blocking behaviour in its own pykka `ThreadingActor` thread, bridged to Trio.

For the few long-lived actors that own a blocking resource (the SQLite writer, sandbox workers). Never
create one per run or per playbook: each is an OS thread.

Concurrency rules
- The mailbox belongs to the `ThreadActorRef` (on the Trio side): a bounded, ordered table of messages
  not yet completed. `tell`/`ask` (Trio thread only) add to it and forward the message to the current
  pykka actor's inbox; they raise `MailboxFull` when the table is full. No thread is used per message.
- The actor thread reports every outcome back with `TrioToken.run_sync_soon` (a completion callback),
  in order; the Trio side then removes the message from the table and answers the asker.
- A message is handled at most once: a thread claims it (under a lock) before handling it. After a
  restart the new life is sent every message still in the table, in order; those an old, abandoned
  thread already claimed are skipped.
- Any `BaseException` in the behaviour is caught in the actor thread (pykka would otherwise call
  `ActorRegistry.stop_all()`); it is reported to the asker and ends the life as a crash
  (`ActorCrashedError` for the supervisor). The thread then skips what is left in its inbox.
- A graceful stop stops forwarding, lets the thread finish what it was sent, runs `on_stop` and ends the
  thread. A cancelled life (shutdown timeout) abandons the thread: a thread cannot be killed, so it
  finishes its current message and skips the rest.
- Threads start with a small stack (`threading.stack_size`, 256 KiB by default) and as daemons.
"""

from __future__ import annotations

import abc
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import pykka
import trio
import trio.lowlevel

from auto_runtime.actors.errors import ActorCrashedError, ActorStoppedError, MailboxFull
from auto_runtime.actors.reply import Reply
from auto_runtime.actors.trio_actor import DEFAULT_ASK_TIMEOUT, DEFAULT_MAILBOX_CAPACITY
from auto_runtime.supervision.child_spec import DEFAULT_SHUTDOWN_SECONDS, ChildContext, ChildSpec, Restart

log = logging.getLogger("auto_runtime.supervision.thread_actor")

M = TypeVar("M")
R = TypeVar("R")

THREAD_STACK_SIZE = 256 * 1024
_STACK_SIZE_LOCK = threading.Lock()


class ThreadActor(abc.ABC, Generic[M, R]):
    """A blocking behaviour. Every method runs in the actor's own thread, one message at a time.

    The instance is built in that thread (by the ref's factory) for each life, so a constructor may
    open blocking resources; `on_stop` runs after a graceful end, not after a crash.
    """

    def on_start(self) -> None:
        """Prepare before the first message (an error fails the life)."""

    @abc.abstractmethod
    def receive(self, message: M) -> R:
        """Handle one message; the return value is the reply to an `ask`."""

    def on_stop(self) -> None:
        """Release what the instance holds after a graceful end."""


class _Envelope:
    __slots__ = ("claimed", "message", "reply", "seq")

    def __init__(self, seq: int, message: Any, reply: Reply[Any] | None) -> None:
        self.seq = seq
        self.message = message
        self.reply = reply
        self.claimed = False


class _Life:
    """One thread's life. `abandoned` is written by the Trio thread and read by the actor thread."""

    __slots__ = ("abandoned", "crash", "host", "ready", "stopped", "token")

    def __init__(self, token: trio.lowlevel.TrioToken) -> None:
        self.token = token
        self.ready = trio.Event()
        self.stopped = trio.Event()
        self.crash: BaseException | None = None
        self.abandoned = False
        self.host: pykka.ActorRef[Any] | None = None

    def report(self, callback: Callable[..., object], *args: object) -> None:
        """Run `callback(*args)` on the Trio thread; called from the actor thread."""
        with contextlib.suppress(trio.RunFinishedError):
            self.token.run_sync_soon(callback, *args)


class _Host(pykka.ThreadingActor):
    """The pykka actor that runs one life of a `ThreadActorRef` in its thread."""

    use_daemon_thread = True

    def __init__(
        self, ref: ThreadActorRef[Any, Any], life: _Life, factory: Callable[[], ThreadActor[Any, Any]]
    ) -> None:
        super().__init__()
        self._ref = ref
        self._life = life
        self._factory = factory
        self._instance: ThreadActor[Any, Any] | None = None
        self._dead = False

    def on_start(self) -> None:
        try:
            instance = self._factory()
            instance.on_start()
        except BaseException as error:
            self._die(None, error)
            return
        self._instance = instance
        self._life.report(self._life.ready.set)

    def on_receive(self, message: Any) -> Any:
        envelope = message
        if self._dead or self._life.abandoned or self._instance is None:
            return None
        if not self._ref._claim(envelope):
            return None
        try:
            result = self._instance.receive(envelope.message)
        except BaseException as error:
            self._die(envelope, error)
            return None
        self._life.report(self._ref._complete, envelope, result)
        return None

    def on_stop(self) -> None:
        instance, self._instance = self._instance, None
        if instance is not None and not self._dead:
            try:
                instance.on_stop()
            except BaseException as error:
                log.warning("thread actor %s: on_stop failed: %r", self._ref.name, error)
        self._life.report(self._life.stopped.set)

    def _die(self, envelope: _Envelope | None, error: BaseException) -> None:
        self._dead = True
        self._life.report(self._ref._crashed, self._life, envelope, error)
        _stop_host(self.actor_ref)


class ThreadActorRef(Generic[M, R]):
    """The address of a thread actor: its name and its bounded mailbox, valid across restarts::

    writer = ThreadActorRef[Append, int]("ledger-writer")
    await supervisor.start_child(writer.child_spec(SqliteWriter))
    position = await writer.ask(Append(event))
    """

    def __init__(
        self, name: str, capacity: int = DEFAULT_MAILBOX_CAPACITY, *, stack_size: int = THREAD_STACK_SIZE
    ) -> None:
        if capacity < 1:
            raise ValueError("a mailbox holds at least one message")
        self.name = name
        self.capacity = capacity
        self.stack_size = stack_size
        self._pending: dict[int, _Envelope] = {}
        self._next_seq = 0
        self._claim_lock = threading.Lock()
        self._forward_to: pykka.ActorRef[Any] | None = None
        self._life: _Life | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"ThreadActorRef({self.name!r}, pending={self.pending}, capacity={self.capacity})"

    @property
    def pending(self) -> int:
        """Messages accepted and not yet completed (queued or in flight)."""
        return len(self._pending)

    def tell(self, message: M) -> None:
        """Enqueue without waiting; raises `MailboxFull` or `ActorStoppedError`."""
        self._post(message, None)

    async def ask(self, message: M, *, timeout: float | None = DEFAULT_ASK_TIMEOUT) -> R:
        """Enqueue and wait for the reply from the actor thread (or its error)."""
        reply: Reply[R] = Reply()
        self._post(message, reply)
        return await reply.wait(self.name, timeout)

    def stop(self) -> None:
        """Close the address: new messages are refused, queued ones are still handled by this life."""
        self._closed = True
        self.request_stop()

    def request_stop(self) -> None:
        """End the current life once the thread has handled what it was already sent."""
        self._forward_to = None
        life = self._life
        if life is not None and life.host is not None:
            _stop_host(life.host)

    def child_spec(
        self,
        factory: Callable[[], ThreadActor[M, R]],
        *,
        restart: Restart = Restart.PERMANENT,
        shutdown: float = DEFAULT_SHUTDOWN_SECONDS,
    ) -> ChildSpec:
        """A child spec running one thread per life with instances from `factory`."""

        async def serve_as_child(ctx: ChildContext) -> None:
            await self.serve_life(factory, started=ctx.started, on_stop_requested=ctx.on_stop_requested)
            if self._closed:
                ctx.finish()

        return ChildSpec(name=self.name, start=serve_as_child, restart=restart, shutdown=shutdown)

    async def serve_life(
        self,
        factory: Callable[[], ThreadActor[M, R]],
        *,
        started: Callable[[], None] | None = None,
        on_stop_requested: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        """Start a thread, hand it every pending message, and wait until it stops.

        Raises `ActorCrashedError` when the behaviour raised (the asker got the original error).
        """
        if self._life is not None:
            raise RuntimeError(f"thread actor {self.name!r} is already served")
        life = _Life(trio.lowlevel.current_trio_token())
        self._life = life
        try:
            life.host = _start_with_stack_size(self.stack_size, lambda: _Host.start(self, life, factory))
            await _first_of(life.ready, life.stopped)
            if life.crash is not None:
                raise ActorCrashedError(self.name, life.crash) from life.crash
            if not self._closed:
                self._forward_to = life.host
            for envelope in list(self._pending.values()):
                _forward(life.host, envelope)
            if self._closed:
                _stop_host(life.host)
            if started is not None:
                started()
            if on_stop_requested is not None:
                on_stop_requested(self.request_stop)
            await life.stopped.wait()
            if life.crash is not None:
                raise ActorCrashedError(self.name, life.crash) from life.crash
        except trio.Cancelled:
            life.abandoned = True
            self.request_stop()
            raise
        finally:
            self._forward_to = None
            self._life = None

    def _post(self, message: M, reply: Reply[R] | None) -> None:
        if self._closed:
            raise ActorStoppedError(self.name)
        if len(self._pending) >= self.capacity:
            raise MailboxFull(self.name, self.capacity)
        envelope = _Envelope(self._next_seq, message, reply)
        self._next_seq += 1
        self._pending[envelope.seq] = envelope
        target = self._forward_to
        if target is not None:
            _forward(target, envelope)

    def _claim(self, envelope: _Envelope) -> bool:
        """Called in an actor thread: True for the one thread that may handle `envelope`."""
        with self._claim_lock:
            if envelope.claimed:
                return False
            envelope.claimed = True
            return True

    def _complete(self, envelope: _Envelope, result: Any) -> None:
        self._pending.pop(envelope.seq, None)
        if envelope.reply is not None:
            envelope.reply.succeed(result)

    def _crashed(self, life: _Life, envelope: _Envelope | None, error: BaseException) -> None:
        if envelope is not None:
            self._pending.pop(envelope.seq, None)
            if envelope.reply is not None:
                envelope.reply.fail(error)
        if life is self._life:
            life.crash = error
            self._forward_to = None
        life.ready.set()


def _forward(host: pykka.ActorRef[Any], envelope: _Envelope) -> None:
    """Put a message in a life's inbox; a dead life leaves it pending for the next one."""
    with contextlib.suppress(pykka.ActorDeadError):
        host.tell(envelope)


def _stop_host(host: pykka.ActorRef[Any]) -> None:
    """Ask a life's thread to stop after the messages already in its inbox."""
    with contextlib.suppress(pykka.ActorDeadError):
        host.stop(block=False)


def _start_with_stack_size(size: int, start: Callable[[], pykka.ActorRef[Any]]) -> pykka.ActorRef[Any]:
    """Start a thread with a small stack; the setting is process-wide, so restore it at once."""
    with _STACK_SIZE_LOCK:
        previous = threading.stack_size(size)
        try:
            return start()
        finally:
            threading.stack_size(previous)


async def _first_of(*events: trio.Event) -> None:
    async with trio.open_nursery() as nursery:
        for event in events:

            async def wait(event: trio.Event = event) -> None:
                await event.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(wait)
