"""Trio actors: a behaviour (`Actor`) served by a Trio task from a bounded mailbox owned by its address.

Concurrency rules
- The mailbox (a bounded `trio` memory channel) belongs to the `ActorRef`, not to the instance, so a
  restart keeps every sender's ref working and keeps the messages queued for the next instance.
- At most one task serves a ref at a time; it handles one message at a time, in arrival order.
- `tell` and `ask` never block on a full mailbox: they raise `MailboxFull`. They are synchronous up to
  the enqueue, so two sends from one task arrive in order.
- A handler that raises ends the life (`ActorCrashedError`, for the supervisor); the asker of that
  message gets the original error. A life cancelled mid-message answers that asker with
  `ActorStoppedError`; the message is not retried.
- A stop request (supervisor stop, passivation) takes effect between messages: the current message
  finishes, `on_stop` runs, queued messages stay in the mailbox.
- `stop(drain=True)` closes the address: new sends raise `ActorStoppedError`, queued messages are still
  handled, then the life ends for good. `stop(drain=False)` also answers queued asks with
  `ActorStoppedError` and drops queued tells.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import trio

from auto_runtime.actors.errors import ActorCrashedError, ActorStoppedError, MailboxFull
from auto_runtime.actors.reply import Reply
from auto_runtime.metrics import mailbox_posted, mailbox_refused
from auto_runtime.supervision.child_spec import DEFAULT_SHUTDOWN_SECONDS, ChildContext, ChildSpec, Restart

M = TypeVar("M")
R = TypeVar("R")

DEFAULT_MAILBOX_CAPACITY = 100
DEFAULT_ASK_TIMEOUT = 30.0


class Actor(abc.ABC, Generic[M, R]):
    """The behaviour of a Trio actor. One instance serves one life of its address.

    A restarted or re-spawned actor is a new instance: it rebuilds its state in `on_start` (later: from
    the ledger) and never replays side effects. `on_stop` runs when a life ends gracefully (stop
    request, passivation, closed address); not after a crash or a cancellation.
    """

    async def on_start(self) -> None:
        """Prepare the instance before its first message (an error here fails the life)."""

    @abc.abstractmethod
    async def receive(self, message: M) -> R:
        """Handle one message; the return value is the reply to an `ask`."""

    async def on_stop(self) -> None:
        """Release what the instance holds after a graceful end."""


class LifeEnd(enum.Enum):
    """Why one life of an actor ended without crashing."""

    STOP_REQUESTED = "stop requested"
    CLOSED = "address closed"


class Envelope(Generic[M, R]):
    __slots__ = ("message", "reply")

    def __init__(self, message: M, reply: Reply[R] | None) -> None:
        self.message = message
        self.reply = reply


_WAKE: Envelope[Any, Any] = Envelope(None, None)
"""Handed to a parked serving loop to make it re-check its stop flags."""


class ActorRef(Generic[M, R]):
    """The address of a Trio actor: its name and its bounded mailbox.

    Create the ref first, hand it to senders, and let a supervisor (or the registry) serve it::

        counter = ActorRef[Increment, int]("counter")
        await supervisor.start_child(counter.child_spec(Counter))
        total = await counter.ask(Increment(2))
    """

    __slots__ = (
        "_closed",
        "_in_flight",
        "_receive",
        "_send",
        "_serving",
        "_stop_requested",
        "_waiting",
        "capacity",
        "idle_since",
        "name",
    )

    def __init__(self, name: str, capacity: int = DEFAULT_MAILBOX_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("a mailbox holds at least one message")
        self.name = name
        self.capacity = capacity
        self._send, self._receive = trio.open_memory_channel[Envelope[M, R]](capacity)
        self._closed = False
        self._serving = False
        self._stop_requested = False
        self._in_flight = False
        self._waiting = False
        self.idle_since = 0.0

    def __repr__(self) -> str:
        return f"ActorRef({self.name!r}, pending={self.pending}, capacity={self.capacity})"

    @property
    def pending(self) -> int:
        """Messages waiting in the mailbox (not counting the one being handled)."""
        return self._receive.statistics().current_buffer_used

    @property
    def in_flight(self) -> bool:
        """True while a message is being handled."""
        return self._in_flight

    @property
    def idle(self) -> bool:
        """Served, nothing in flight, nothing queued: the serving task is waiting for a message."""
        return self._waiting and not self._in_flight

    @property
    def closed(self) -> bool:
        return self._closed

    def tell(self, message: M) -> None:
        """Enqueue a message without waiting; raises `MailboxFull` or `ActorStoppedError`."""
        self._post(Envelope(message, None))

    async def ask(self, message: M, *, timeout: float | None = DEFAULT_ASK_TIMEOUT) -> R:
        """Enqueue a message and wait for the reply (or the handler's error).

        Raises `MailboxFull` at once when the mailbox is full, `AskTimeoutError` after `timeout` seconds
        (None waits forever); a message that timed out may still be handled later.
        """
        reply: Reply[R] = Reply()
        self._post(Envelope(message, reply))
        return await reply.wait(self.name, timeout)

    def stop(self, *, drain: bool = True) -> None:
        """Close the address for good (see the module rules for `drain`)."""
        self._closed = True
        if not drain:
            self.refuse_pending(ActorStoppedError(self.name, "stopped before handling the message"))
        self._wake()

    def child_spec(
        self,
        factory: Callable[[], Actor[M, R]],
        *,
        restart: Restart = Restart.PERMANENT,
        shutdown: float = DEFAULT_SHUTDOWN_SECONDS,
    ) -> ChildSpec:
        """A child spec that serves this address with instances from `factory`, one per life.

        A life ends gracefully on a stop request (queued messages wait for the next life) or for good
        when the address is closed (the supervisor then forgets the child).
        """

        async def serve_as_child(ctx: ChildContext) -> None:
            self.clear_stop_request()
            ctx.on_stop_requested(self.request_stop)
            end = await self.serve_life(factory(), started=ctx.started)
            if end is LifeEnd.CLOSED:
                ctx.finish()

        return ChildSpec(name=self.name, start=serve_as_child, restart=restart, shutdown=shutdown)

    async def run(self, factory: Callable[[], Actor[M, R]]) -> LifeEnd:
        """Serve one life without a supervisor (for tests and simple owners); a crash raises."""
        self.clear_stop_request()
        return await self.serve_life(factory())

    def request_stop(self) -> None:
        """End the current life after the message in flight; queued messages stay."""
        self._stop_requested = True
        self._wake()

    def clear_stop_request(self) -> None:
        """Forget an earlier stop request (a host does this before serving a new life)."""
        self._stop_requested = False

    async def serve_life(
        self,
        instance: Actor[M, R],
        *,
        started: Callable[[], None] | None = None,
        on_idle: Callable[[], None] | None = None,
    ) -> LifeEnd:
        """Start `instance`, serve messages until a stop request or a closed address.

        Raises `ActorCrashedError` when a handler raises, and `RuntimeError` if another task already
        serves this address. `on_idle` runs each time the mailbox is empty and the actor starts waiting
        (and `idle_since` is then kept up to date).
        """
        if self._serving:
            raise RuntimeError(f"actor {self.name!r} is already served by another task")
        self._serving = True
        try:
            await instance.on_start()
            if started is not None:
                started()
            end = await self.serve_messages(instance, on_idle)
            await instance.on_stop()
            return end
        finally:
            self._serving = False

    async def serve_messages(self, instance: Actor[M, R], on_idle: Callable[[], None] | None = None) -> LifeEnd:
        """The message loop of `serve_life` without `on_start`/`on_stop` (for hosts like the registry).

        Waiting costs no cancel scope: a stop request wakes a parked loop by handing it `_WAKE`
        directly (never through the buffer, so it takes no mailbox slot).
        """
        receive = self._receive
        while True:
            if self._stop_requested:
                return LifeEnd.STOP_REQUESTED
            if self.pending == 0:
                if self._closed:
                    return LifeEnd.CLOSED
                if on_idle is not None:
                    self.idle_since = trio.current_time()
                    on_idle()
                self._waiting = True
                try:
                    envelope = await receive.receive()
                finally:
                    self._waiting = False
                if envelope is _WAKE:
                    continue
            else:
                envelope = await receive.receive()
            await self._handle(instance, envelope)

    async def _handle(self, instance: Actor[M, R], envelope: Envelope[M, R]) -> None:
        reply = envelope.reply
        self._in_flight = True
        try:
            result = await instance.receive(envelope.message)
        except Exception as error:
            if reply is not None:
                reply.fail(error)
            raise ActorCrashedError(self.name, error) from error
        except BaseException:
            if reply is not None:
                reply.fail(ActorStoppedError(self.name, "stopped while handling the message"))
            raise
        finally:
            self._in_flight = False
        if reply is not None:
            reply.succeed(result)

    def _post(self, envelope: Envelope[M, R]) -> None:
        if self._closed:
            raise ActorStoppedError(self.name)
        try:
            self._send.send_nowait(envelope)
        except trio.WouldBlock:
            mailbox_refused(self.name)
            raise MailboxFull(self.name, self.capacity) from None
        mailbox_posted(self)

    def _wake(self) -> None:
        if self._receive.statistics().tasks_waiting_receive:
            self._send.send_nowait(_WAKE)

    def refuse_pending(self, error: BaseException) -> int:
        """Take every queued message out; answer asks with `error`. Returns how many were taken."""
        refused = 0
        while True:
            try:
                envelope = self._receive.receive_nowait()
            except trio.WouldBlock:
                return refused
            if envelope is _WAKE:
                continue
            refused += 1
            if envelope.reply is not None:
                envelope.reply.fail(error)
