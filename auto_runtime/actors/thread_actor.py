"""Thread actors: a blocking behaviour in its own pykka `ThreadingActor` thread, bridged to Trio.

For the few long-lived actors that own a blocking resource (the SQLite writer, sandbox workers). Never
create one per run or per playbook: each is an OS thread. `loop_actor` gives the same address to an
asyncio loop thread (the PostgreSQL ledger).

Concurrency rules
- The mailbox belongs to the `ThreadActorRef` (on the Trio side): a bounded, ordered table of messages
  not yet completed. `tell`/`ask` (Trio thread only) add to it and forward the message to the current
  life's inbox (a deque the thread drains until empty, plus a wake-up in the pykka inbox when none is
  pending already: `Life.deliver`); they raise `MailboxFull`
  when the table is full. No thread is used per message.
- The actor thread reports outcomes back through the one bridge (`thread_bridge.TrioPort`), one hop per
  batch, in order; the Trio side then removes the messages from the table and answers the askers.
- A behaviour with `max_batch > 1` gets, in one `receive_batch` call, every message already in its inbox
  (up to `max_batch`), waiting for more only as its `batch_fill` asks (a bounded wait; none by default), and
  returns one outcome per message (an `outcome.Error`
  answers that asker with the error; the life goes on). `skips_abandoned` makes the thread drop messages
  whose asker was cancelled before the thread took them.
- A message is handled at most once: a thread claims it (under a lock) before handling it. After a
  restart the new life is sent every message still in the table, in order; those an old, abandoned
  thread already claimed are skipped.
- Any `BaseException` escaping `receive` / `receive_batch` is caught in the actor thread (pykka would
  otherwise call `ActorRegistry.stop_all()`); it is reported to the askers of the messages being handled
  and ends the life as a crash (`ActorCrashedError` for the supervisor). The thread then skips what is left
  in its inbox, which stays in the table for the next life.
- A graceful stop stops forwarding, lets the thread finish what it was sent, runs `on_stop` and ends the
  thread. A cancelled life (shutdown timeout) abandons the thread: a thread cannot be killed, so it
  finishes its current message and skips the rest.
- Threads start with a small stack (`threading.stack_size`, 256 KiB by default) and as daemons.
"""

from __future__ import annotations

import abc
import collections
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import outcome
import pykka
import trio
import trio.lowlevel

from auto_runtime.actors.errors import ActorCrashedError, ActorStoppedError, MailboxFull
from auto_runtime.actors.reply import Reply
from auto_runtime.actors.thread_bridge import TrioPort
from auto_runtime.actors.trio_actor import DEFAULT_ASK_TIMEOUT, DEFAULT_MAILBOX_CAPACITY
from auto_runtime.supervision.child_spec import DEFAULT_SHUTDOWN_SECONDS, ChildContext, ChildSpec, Restart

log = logging.getLogger("auto_runtime.supervision.thread_actor")

M = TypeVar("M")
R = TypeVar("R")
B = TypeVar("B")

THREAD_STACK_SIZE = 256 * 1024
STACK_SIZE_LOCK = threading.Lock()
"""The one lock every thread that sets the process-wide stack size (`threading.stack_size`) takes, around the
setting, the thread's start and the restore: thread actors, sandbox workers and their companions."""
_WAKE = object()
"""What a pykka inbox carries: "your life's inbox has messages"."""
FILL_POLL_SECONDS = 0.0001
"""How often a thread waiting for its batch to fill (`BatchFill`) looks at its inbox again."""


@dataclass(frozen=True, slots=True)
class BatchFill:
    """Wait for a batch to fill before handling it: until it holds `size` messages, or `seconds` have passed."""

    size: int
    seconds: float


class ThreadActor(abc.ABC, Generic[M, R]):
    """A blocking behaviour. Every method runs in the actor's own thread, one message (or batch) at a time.

    The instance is built in that thread (by the ref's factory) for each life, so a constructor may
    open blocking resources; `on_stop` runs after a graceful end, not after a crash.
    """

    max_batch: ClassVar[int] = 1
    """How many queued messages one `receive_batch` call may take; 1 calls `receive` for each."""
    skips_abandoned: ClassVar[bool] = False
    """Whether a message whose asker was cancelled before the thread took it is dropped unhandled."""

    def on_start(self) -> None:
        """Prepare before the first message (an error fails the life)."""

    @abc.abstractmethod
    def receive(self, message: M) -> R:
        """Handle one message; the return value is the reply to an `ask` (an exception ends the life)."""

    def receive_batch(self, messages: Sequence[M]) -> Sequence[outcome.Outcome[R]]:
        """Handle the messages already queued (when `max_batch > 1`): one outcome per message, in order.

        An `outcome.Error` answers its asker and the life goes on; an exception that escapes ends the life
        and fails every message of the batch. The default hands each message to `receive`."""
        return [outcome.Value(self.receive(message)) for message in messages]

    def after_batch(self) -> Callable[[], object] | None:
        """Asked in the actor's thread after each batch: a callback to run on the Trio thread right after the
        batch's askers are answered, in the same hop (a hop of its own costs the thread a wake-up write and
        a retake of the GIL); None, the default, runs nothing."""
        return None

    def batch_fill(self, taken: int) -> BatchFill | None:
        """Whether to wait for more messages before handling a batch of the `taken` already queued (at least
        one, fewer than `max_batch`); None, the default, handles them at once."""
        return None

    def on_stop(self) -> None:
        """Release what the instance holds after a graceful end."""


class Envelope:
    """A message in a mailbox, with its reply slot (None for `tell`); for the hosts of this package only."""

    __slots__ = ("claimed", "message", "reply", "seq")

    def __init__(self, seq: int, message: Any, reply: Reply[Any] | None) -> None:
        self.seq = seq
        self.message = message
        self.reply = reply
        self.claimed = False

    @property
    def abandoned(self) -> bool:
        """The asker was cancelled (read from any thread)."""
        return self.reply is not None and self.reply.abandoned


class Life:
    """One thread's life (for the hosts of this package only).

    `abandoned` is written by the Trio thread and read by the actor thread.

    `inbox` holds the envelopes forwarded to this life (appended on the Trio thread, taken by the actor
    thread); `wake` tells the thread there is something in it and `halt` asks it to end once it has
    handled what it was sent. Both are set by the host that runs the life, on the Trio thread."""

    __slots__ = ("abandoned", "crash", "halt", "inbox", "port", "ready", "stopped", "wake", "wake_pending")

    def __init__(self, port: TrioPort) -> None:
        self.port = port
        self.ready = trio.Event()
        self.stopped = trio.Event()
        self.crash: BaseException | None = None
        self.abandoned = False
        self.inbox: collections.deque[Envelope] = collections.deque()
        self.wake: Callable[[], None] = _nothing
        self.wake_pending = False
        self.halt: Callable[[], None] = _nothing

    def deliver(self, envelopes: Sequence[Envelope]) -> None:
        """Put messages in the inbox and wake the thread unless a wake-up is pending already (Trio thread).

        The thread clears `wake_pending` before it drains the inbox, so a message added after its last look
        always finds the flag clear and sends a wake-up of its own: none is left behind, and a burst of
        messages costs the thread one wake-up, not one each."""
        self.inbox.extend(envelopes)
        if not self.wake_pending:
            self.wake_pending = True
            self.wake()

    def report(self, callback: Callable[..., object], *args: object) -> None:
        """Run `callback(*args)` on the Trio thread; called from the actor thread."""
        self.port.call_soon(callback, *args)


def _nothing() -> None:
    """A life not launched yet has nobody to wake."""


class _Host(pykka.ThreadingActor):
    """The pykka actor that runs one life of a `ThreadActorRef` in its thread."""

    use_daemon_thread = True

    def __init__(self, ref: ThreadActorRef[Any, Any], life: Life, factory: Callable[[], ThreadActor[Any, Any]]) -> None:
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
            self._die([], error)
            return
        self._instance = instance
        self._life.report(self._life.ready.set)

    def on_receive(self, message: Any) -> Any:
        """A wake-up: handle everything in the life's inbox, batch after batch, until it is empty."""
        self._life.wake_pending = False
        while self._handle_next():
            pass
        return None

    def _handle_next(self) -> bool:
        """Handle one batch from the inbox; False once there is nothing (more) to handle in this life."""
        instance = self._instance
        if self._dead or self._life.abandoned or instance is None:
            return False
        batch, skipped = self._take(instance)
        if not batch:
            if skipped:
                self._life.report(self._ref._complete_all, skipped, ())
            return bool(skipped)
        try:
            if instance.max_batch > 1:
                results = list(instance.receive_batch([envelope.message for envelope in batch]))
                if len(results) != len(batch):
                    raise RuntimeError(f"receive_batch gave {len(results)} outcomes for {len(batch)} messages")
            else:
                results = [outcome.Value(instance.receive(batch[0].message))]
        except BaseException as error:
            if skipped:
                self._life.report(self._ref._complete_all, skipped, ())
            self._die(batch, error)
            return False
        self._life.report(self._ref._complete_all, skipped + batch, results, instance.after_batch())
        return True

    def _take(self, instance: ThreadActor[Any, Any]) -> tuple[list[Envelope], list[Envelope]]:
        """Claim up to `max_batch` envelopes from the life's inbox: (to handle, skipped). What is queued is
        taken at once; then, when the instance asks (`batch_fill`), more as they come, for a bounded time."""
        batch: list[Envelope] = []
        skipped: list[Envelope] = []
        self._claim_queued(instance, batch, skipped)
        if not batch or len(batch) >= instance.max_batch:
            return batch, skipped
        fill = instance.batch_fill(len(batch))
        if fill is None:
            return batch, skipped
        size = min(fill.size, instance.max_batch)
        deadline = time.monotonic() + fill.seconds
        while len(batch) < size and not self._life.abandoned:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            time.sleep(min(FILL_POLL_SECONDS, remaining))
            self._claim_queued(instance, batch, skipped)
        return batch, skipped

    def _claim_queued(self, instance: ThreadActor[Any, Any], batch: list[Envelope], skipped: list[Envelope]) -> None:
        """Claim what is in the inbox now, until `batch` holds `max_batch` envelopes."""
        inbox = self._life.inbox
        while len(batch) < instance.max_batch:
            try:
                envelope = inbox.popleft()
            except IndexError:
                break
            if not self._ref._claim(envelope):
                continue
            if instance.skips_abandoned and envelope.abandoned:
                skipped.append(envelope)
            else:
                batch.append(envelope)

    def on_stop(self) -> None:
        instance, self._instance = self._instance, None
        if instance is not None and not self._dead:
            try:
                instance.on_stop()
            except BaseException as error:
                log.warning("thread actor %s: on_stop failed: %r", self._ref.name, error)
        self._life.report(self._life.stopped.set)

    def _die(self, batch: list[Envelope], error: BaseException) -> None:
        self._dead = True
        self._life.report(self._ref._crashed, self._life, batch, error)
        _stop_host(self.actor_ref)


class BridgedRef(Generic[M, R, B]):
    """The address of an actor living in a thread: its name and bounded mailbox, valid across restarts.

    `B` is the behaviour a life runs; subclasses say how a life's thread is launched (`_launch`)."""

    def __init__(
        self, name: str, capacity: int = DEFAULT_MAILBOX_CAPACITY, *, stack_size: int = THREAD_STACK_SIZE
    ) -> None:
        if capacity < 1:
            raise ValueError("a mailbox holds at least one message")
        self.name = name
        self.capacity = capacity
        self.stack_size = stack_size
        self._pending: dict[int, Envelope] = {}
        self._next_seq = 0
        self._claim_lock = threading.Lock()
        self._forward_to: Life | None = None
        self._life: Life | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, pending={self.pending}, capacity={self.capacity})"

    @property
    def pending(self) -> int:
        """Messages accepted and not yet completed (queued or in flight)."""
        return len(self._pending)

    @property
    def serving(self) -> bool:
        """Whether a life is being served now."""
        return self._life is not None

    @property
    def closed(self) -> bool:
        """Whether the address was closed (`stop`): new messages are refused."""
        return self._closed

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
        if life is not None:
            life.halt()

    def child_spec(
        self,
        factory: Callable[[], B],
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
        factory: Callable[[], B],
        *,
        started: Callable[[], None] | None = None,
        on_stop_requested: Callable[[Callable[[], None]], None] | None = None,
    ) -> None:
        """Start a thread, hand it every pending message, and wait until it stops.

        Raises `ActorCrashedError` when the behaviour raised (the asker got the original error).
        """
        if self._life is not None:
            raise RuntimeError(f"thread actor {self.name!r} is already served")
        life = Life(TrioPort())
        self._life = life
        try:
            _start_with_stack_size(self.stack_size, lambda: self._launch(life, factory))
            await _first_of(life.ready, life.stopped)
            if life.crash is not None:
                raise ActorCrashedError(self.name, life.crash) from life.crash
            if not self._closed:
                self._forward_to = life
            life.deliver(list(self._pending.values()))
            if self._closed:
                life.halt()
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

    def _launch(self, life: Life, factory: Callable[[], B]) -> None:
        """Start the thread of `life` and set its `wake` and `halt` (Trio thread)."""
        raise NotImplementedError

    def _post(self, message: M, reply: Reply[R] | None) -> None:
        if self._closed:
            raise ActorStoppedError(self.name)
        if len(self._pending) >= self.capacity:
            raise MailboxFull(self.name, self.capacity)
        envelope = Envelope(self._next_seq, message, reply)
        self._next_seq += 1
        self._pending[envelope.seq] = envelope
        target = self._forward_to
        if target is not None:
            target.deliver((envelope,))

    def _claim(self, envelope: Envelope) -> bool:
        """Called in an actor thread: True for the one thread that may handle `envelope`."""
        with self._claim_lock:
            if envelope.claimed:
                return False
            envelope.claimed = True
            return True

    def _unclaim(self, envelope: Envelope) -> None:
        """Called in an actor thread: give back a message it claimed and did not begin (a crashed loop life)."""
        with self._claim_lock:
            envelope.claimed = False

    def _complete_all(
        self,
        envelopes: Sequence[Envelope],
        results: Sequence[outcome.Outcome[Any]],
        then: Callable[[], object] | None = None,
    ) -> None:
        """Trio thread: the envelopes are done; the first `len(envelopes) - len(results)` were skipped. `then`
        (the behaviour's `after_batch`) runs once they are answered."""
        skipped = len(envelopes) - len(results)
        for index, envelope in enumerate(envelopes):
            self._pending.pop(envelope.seq, None)
            if index >= skipped and envelope.reply is not None:
                envelope.reply.settle(results[index - skipped])
        if then is not None:
            then()

    def _crashed(self, life: Life, batch: Sequence[Envelope], error: BaseException) -> None:
        for envelope in batch:
            self._pending.pop(envelope.seq, None)
            if envelope.reply is not None:
                envelope.reply.fail(error)
        if life is self._life:
            life.crash = error
            self._forward_to = None
        life.ready.set()


class ThreadActorRef(BridgedRef[M, R, ThreadActor[M, R]]):
    """The address of a thread actor: its name and its bounded mailbox, valid across restarts::

    writer = ThreadActorRef[Append, int]("ledger-writer")
    await supervisor.start_child(writer.child_spec(SqliteWriter))
    position = await writer.ask(Append(event))
    """

    def _launch(self, life: Life, factory: Callable[[], ThreadActor[M, R]]) -> None:
        host = _Host.start(self, life, factory)
        life.wake = lambda: _wake_host(host)
        life.halt = lambda: _stop_host(host)


def _wake_host(host: pykka.ActorRef[Any]) -> None:
    """Tell a life's thread its inbox has a message; a dead life leaves it pending for the next one."""
    with contextlib.suppress(pykka.ActorDeadError):
        host.tell(_WAKE)


def _stop_host(host: pykka.ActorRef[Any]) -> None:
    """Ask a life's thread to stop after the messages already in its inbox."""
    with contextlib.suppress(pykka.ActorDeadError):
        host.stop(block=False)


def _start_with_stack_size(size: int, start: Callable[[], None]) -> None:
    """Start a thread with a small stack; the setting is process-wide, so restore it at once."""
    with STACK_SIZE_LOCK:
        previous = threading.stack_size(size)
        try:
            start()
        finally:
            threading.stack_size(previous)


async def _first_of(*events: trio.Event) -> None:
    async with trio.open_nursery() as nursery:
        for event in events:

            async def wait(event: trio.Event = event) -> None:
                await event.wait()
                nursery.cancel_scope.cancel()

            nursery.start_soon(wait)
