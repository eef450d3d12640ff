"""A registry of keyed Trio actors of one kind, with passivation (idle timeout and a bounded live set).

Concurrency rules
- The registry is the single owner of the key → live actor map. Every change to the map (spawn on a
  message, removal after passivation) is synchronous code on the Trio thread with no checkpoint in
  between the check and the change, so spawn and stop are serialised and a sender never sees a
  half-removed actor.
- A key's address (its `ActorRef` and mailbox) lives exactly as long as its entry in the map. Senders
  hold a `KeyedRef` (registry + key), which always resolves through the map: a message for a key with
  no live actor spawns one, in the same synchronous step that enqueues the message.
- Passivation is a stop request to an idle actor, made when it has been idle for `idle_timeout`
  (checked every quarter of it) or when the live set is above `max_live` (least recently used idle
  actors first). The actor (nothing in flight) runs `on_stop` and only then, with its mailbox empty,
  leaves the map. A message that arrived in the meantime is still in the same mailbox: the actor
  refuses to passivate (or, after `on_stop`, starts a new instance on the same mailbox). So no
  message is lost or delivered twice in that race.
- A handler that raises answers its asker with the error, is logged, and the key continues with a new
  instance on the same mailbox (or passivates when nothing is queued). A failing `on_start` answers
  every queued ask with its error and drops the key's queued tells.
- `max_live` is a soft bound: only idle actors are evicted, so a burst of busy actors can exceed it
  until they become idle.
- Restart intensity (OTP's, for all the keys of the registry together, like a `simple_one_for_one`
  supervisor's): every crashed life and every failed start counts as one restart. With `intensity` set, a
  restart past it makes the registry fail: every live actor is cancelled (queued asks answered with
  `ActorStoppedError`) and `run` raises `RegistryFailedError`, for its supervisor to restart it (a new run
  starts with a fresh window) or to escalate. Without `intensity`, the registry never escalates.
- A registry made with `queues_while_stopped` (a child registry that a parent actor's lives host, see
  `HostingRegistry`) takes messages while it is not running: their keys wait, with their mailboxes, for its
  next `run`, which spawns them first. Only a registry that is running and closing (stopping or failing)
  refuses a message.
- `stats` may be shared by several registries (the run actors of every playbook): `spawns` and `restarts`
  then count for all of them together.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

import trio

from auto_runtime.actors.errors import ActorCrashedError, ActorStoppedError
from auto_runtime.actors.trio_actor import (
    DEFAULT_ASK_TIMEOUT,
    DEFAULT_MAILBOX_CAPACITY,
    Actor,
    ActorRef,
    LifeEnd,
)
from auto_runtime.metrics import registry_made, restarted
from auto_runtime.supervision.child_spec import DEFAULT_SHUTDOWN_SECONDS, ChildContext, ChildSpec, Restart
from auto_runtime.supervision.intensity import RestartIntensity, RestartWindow

log = logging.getLogger("auto_runtime.supervision.registry")

K = TypeVar("K", bound=Hashable)
M = TypeVar("M")
R = TypeVar("R")


class RegistryFailedError(Exception):
    """A registry's actors crashed or failed to start more often than its restart intensity allows."""

    def __init__(self, registry: str, key: object, error: BaseException) -> None:
        super().__init__(f"registry {registry!r} exceeded its restart intensity; last: actor {key!r} after {error!r}")
        self.registry = registry
        self.key = key
        self.error = error


@dataclass
class RegistryStats:
    """Counters of one registry, or of several that share them."""

    spawns: int = 0
    """Lives started so far (first spawns, re-spawns after passivation, restarts after a crash)."""
    restarts: int = 0
    """Lives that crashed or failed to start so far (each one counts against the intensity)."""


class Registry(Generic[K, M, R]):
    """Keyed actors of one kind: spawned on their first message, passivated when idle.

    `factory(key)` builds a fresh instance for each life of a key. Run the registry as a supervised
    child (`child_spec`) or directly in a nursery (`await nursery.start(registry.run)`).
    `idle_timeout` (seconds, `math.inf` to never passivate for idleness) and `max_live` (soft bound)
    drive passivation; `capacity` bounds each key's mailbox.
    """

    def __init__(
        self,
        name: str,
        factory: Callable[[K], Actor[M, R]],
        *,
        max_live: int = 1024,
        idle_timeout: float = 60.0,
        capacity: int = DEFAULT_MAILBOX_CAPACITY,
        intensity: RestartIntensity | None = None,
        queues_while_stopped: bool = False,
        stats: RegistryStats | None = None,
    ) -> None:
        if max_live < 1:
            raise ValueError("max_live must be >= 1")
        if idle_timeout <= 0:
            raise ValueError("idle_timeout must be > 0 seconds (math.inf disables idle passivation)")
        self.name = name
        self.factory = factory
        self.max_live = max_live
        self.idle_timeout = idle_timeout
        self.capacity = capacity
        self.intensity = intensity
        self.queues_while_stopped = queues_while_stopped
        self.stats = stats if stats is not None else RegistryStats()
        self._restarts = RestartWindow(intensity) if intensity is not None else None
        self._failure: RegistryFailedError | None = None
        self._live: OrderedDict[K, ActorRef[M, R]] = OrderedDict()
        self._passivating: set[K] = set()
        self._nursery: trio.Nursery | None = None
        self._closing = False
        self._stop_before_run = False
        self._trim_wanted: trio.Event | None = None
        registry_made(self)

    @property
    def spawns(self) -> int:
        """Lives started so far (see `RegistryStats`)."""
        return self.stats.spawns

    @property
    def restarts(self) -> int:
        """Lives that crashed or failed to start so far (see `RegistryStats`)."""
        return self.stats.restarts

    @property
    def running(self) -> bool:
        return self._nursery is not None and not self._closing

    @property
    def live_count(self) -> int:
        """Keys with a live actor (including those passivating right now)."""
        return len(self._live)

    def is_live(self, key: K) -> bool:
        return key in self._live

    def ref(self, key: K) -> KeyedRef[K, M, R]:
        """A handle for senders; valid across passivation and re-spawn."""
        return KeyedRef(self, key)

    def tell(self, key: K, message: M) -> None:
        """Send without waiting; spawns the key's actor when none is live. Raises `MailboxFull`."""
        self._address(key).tell(message)

    async def ask(self, key: K, message: M, *, timeout: float | None = DEFAULT_ASK_TIMEOUT) -> R:
        """Send and wait for the reply; spawns the key's actor when none is live."""
        return await self._address(key).ask(message, timeout=timeout)

    def passivate(self, key: K) -> None:
        """Ask the key's actor to passivate now (it refuses while messages are queued)."""
        address = self._live.get(key)
        if address is not None:
            self._passivating.add(key)
            address.request_stop()

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[Registry[K, M, R]]:
        """Host the actors for the block's length, outside a supervisor (tests, benchmarks, simple owners); the
        block's end cancels every live actor, as a nursery's end would."""
        async with trio.open_nursery() as nursery:
            await nursery.start(self.run)
            try:
                yield self
            finally:
                nursery.cancel_scope.cancel()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host the actors until cancelled or stopped through `child_spec`'s stop request."""
        await self._run(task_status.started, None)

    def child_spec(
        self, *, restart: Restart = Restart.PERMANENT, shutdown: float = DEFAULT_SHUTDOWN_SECONDS
    ) -> ChildSpec:
        """The registry as a supervised child; a graceful stop passivates every live actor."""

        async def run_as_child(ctx: ChildContext) -> None:
            await self._run(ctx.started, ctx)

        return ChildSpec(name=self.name, start=run_as_child, restart=restart, shutdown=shutdown)

    def refuse_queued(self) -> None:
        """Answer the asks a registry that is not running keeps for its next run (`queues_while_stopped`) with
        `ActorStoppedError`, for an owner that will not run it again."""
        if self._nursery is not None:
            return
        for key, address in list(self._live.items()):
            address.stop(drain=False)
            self._removed(key)
        self._live.clear()

    def request_stop(self) -> None:
        """Stop accepting messages and passivate every live actor; `run` returns when they are gone. Made
        before `run` began (a child registry started a moment ago), it takes effect as soon as `run` has."""
        if self._nursery is None:
            self._stop_before_run = True
        self._closing = True
        for address in list(self._live.values()):
            address.request_stop()
        if self._trim_wanted is not None:
            self._trim_wanted.set()

    async def _run(self, started: Callable[[], None], ctx: ChildContext | None) -> None:
        if self._nursery is not None:
            raise RuntimeError(f"registry {self.name!r} is already running")
        self._closing = False
        self._failure = None
        self._stop_before_run, stop_before_run = False, self._stop_before_run
        if self._restarts is not None:
            self._restarts.clear()
        self._trim_wanted = trio.Event()
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                if ctx is not None:
                    ctx.on_stop_requested(self.request_stop)
                if not math.isinf(self.idle_timeout):
                    nursery.start_soon(self._passivate_idle_forever)
                for key, address in list(self._live.items()):
                    nursery.start_soon(self._keep_alive, key, address)
                started()
                if stop_before_run:
                    self.request_stop()
                await self._trim_forever()
                nursery.cancel_scope.cancel()
            if self._failure is not None:
                raise self._failure
        finally:
            self._nursery = None
            self._closing = True
            for key, address in list(self._live.items()):
                address.stop(drain=False)
                self._removed(key)
            self._live.clear()
            self._passivating.clear()
            self._trim_wanted = None

    def _address(self, key: K) -> ActorRef[M, R]:
        address = self._live.get(key)
        if address is not None:
            self._live.move_to_end(key)
            return address
        waits_for_run = self._nursery is None and self.queues_while_stopped
        if not waits_for_run and (self._nursery is None or self._closing):
            raise ActorStoppedError(f"{self.name}[{key!r}]", f"cannot start: registry {self.name!r} stopped")
        address = ActorRef[M, R](f"{self.name}[{key!r}]", self.capacity)
        self._live[key] = address
        self._spawned(key)
        if self._nursery is not None:
            self._nursery.start_soon(self._keep_alive, key, address)
            self._want_trim()
        return address

    def _spawned(self, key: K) -> None:
        """A key entered the map (a hosting registry makes its children here)."""

    def _removed(self, key: K) -> None:
        """A key left the map."""

    def _busy(self, key: K) -> bool:
        """Whether the key holds work besides its mailbox (a hosting registry's children): it does not passivate."""
        return False

    def _want_trim(self) -> None:
        if self._trim_wanted is not None and len(self._live) - len(self._passivating) > self.max_live:
            self._trim_wanted.set()

    async def _trim_forever(self) -> None:
        while True:
            assert self._trim_wanted is not None
            await self._trim_wanted.wait()
            if self._failure is not None:
                return
            if self._closing:
                if not self._live:
                    return
                self._trim_wanted = trio.Event()
                continue
            self._trim_wanted = trio.Event()
            self._evict_least_recently_used()

    async def _passivate_idle_forever(self) -> None:
        """Every quarter of `idle_timeout`, passivate the actors idle for at least `idle_timeout`."""
        interval = max(self.idle_timeout / 4, 0.0001)
        while True:
            await trio.sleep(interval)
            horizon = trio.current_time() - self.idle_timeout
            for key, address in self._live.items():
                if (
                    address.idle
                    and address.idle_since <= horizon
                    and key not in self._passivating
                    and not self._busy(key)
                ):
                    self._passivating.add(key)
                    address.request_stop()

    def _evict_least_recently_used(self) -> None:
        excess = len(self._live) - len(self._passivating) - self.max_live
        if excess <= 0:
            return
        for key, address in self._live.items():
            if key not in self._passivating and address.idle and not self._busy(key):
                self._passivating.add(key)
                address.request_stop()
                excess -= 1
                if excess == 0:
                    return

    async def _keep_alive(self, key: K, address: ActorRef[M, R]) -> None:
        """Serve `key` until it passivates with an empty mailbox; never raises except on cancellation.

        The loop of `_serve_lives`, written out here so that a live actor costs one coroutine frame less."""
        try:
            while True:
                self.stats.spawns += 1
                try:
                    instance = self.factory(key)
                except Exception as error:
                    self._fail_start(key, address, error)
                    return
                end = await self._serve_one_life(key, address, instance)
                if end is None:
                    return
                if (address.pending or self._busy(key)) and not self._closing:
                    continue
                self._remove(key, address)
                return
        finally:
            if self._live.get(key) is address:
                self._remove(key, address)

    async def _serve_lives(self, key: K, address: ActorRef[M, R]) -> bool:
        """Lives of `key`, one after another, until one ends with nothing queued and nothing busy: True then
        (the caller removes the key in the same step, with no checkpoint in between), False when the key has
        left the map already (a failed start)."""
        while True:
            self.stats.spawns += 1
            try:
                instance = self.factory(key)
            except Exception as error:
                self._fail_start(key, address, error)
                return False
            end = await self._serve_one_life(key, address, instance)
            if end is None:
                return False
            if (address.pending or self._busy(key)) and not self._closing:
                continue
            return True

    async def _serve_one_life(self, key: K, address: ActorRef[M, R], instance: Actor[M, R]) -> LifeEnd | None:
        """One life of `key`; None when the key must leave the map at once (failed start)."""
        if not self._closing:
            address.clear_stop_request()
        try:
            await instance.on_start()
        except Exception as error:
            self._fail_start(key, address, error)
            return None
        try:
            end = await self._serve_until_passivated(key, address, instance)
        except ActorCrashedError as crash:
            log.warning(
                "registry %s: restarting actor %r after error %r (next life on its next message)",
                self.name,
                key,
                crash.error,
            )
            self._passivating.discard(key)
            self._count_restart(key, crash.error)
            return LifeEnd.STOP_REQUESTED
        try:
            await instance.on_stop()
        except Exception as error:
            log.warning("registry %s: actor %r failed in on_stop: %r", self.name, key, error)
        self._passivating.discard(key)
        return end

    async def _serve_until_passivated(self, key: K, address: ActorRef[M, R], instance: Actor[M, R]) -> LifeEnd:
        while True:
            end = await address.serve_messages(instance, self._want_trim)
            if (address.pending or self._busy(key)) and not self._closing:
                address.clear_stop_request()
                self._passivating.discard(key)
                continue
            return end

    def _fail_start(self, key: K, address: ActorRef[M, R], error: Exception) -> None:
        log.warning("registry %s: actor %r failed to start: %r", self.name, key, error)
        address.refuse_pending(error)
        self._remove(key, address)
        self._count_restart(key, error)

    def _count_restart(self, key: K, error: BaseException) -> None:
        """One more restart; past the intensity the registry fails (see the module's rules)."""
        self.stats.restarts += 1
        restarted(self.name)
        if self._restarts is None or self._failure is not None or self._restarts.admit(trio.current_time()):
            return
        log.error("registry %s: restart intensity exceeded (last: actor %r after %r)", self.name, key, error)
        self._failure = RegistryFailedError(self.name, key, error)
        self._closing = True
        if self._trim_wanted is not None:
            self._trim_wanted.set()

    def _remove(self, key: K, address: ActorRef[M, R]) -> None:
        if self._live.get(key) is address:
            del self._live[key]
            self._removed(key)
        self._passivating.discard(key)
        address.stop(drain=False)
        if self._closing and not self._live and self._trim_wanted is not None:
            self._trim_wanted.set()


class KeyedRef(Generic[K, M, R]):
    """A sender's handle on one key of a registry; stays valid across passivation and re-spawn."""

    __slots__ = ("key", "registry")

    def __init__(self, registry: Registry[K, M, R], key: K) -> None:
        self.registry = registry
        self.key = key

    def __repr__(self) -> str:
        return f"KeyedRef({self.registry.name!r}, {self.key!r})"

    def tell(self, message: M) -> None:
        self.registry.tell(self.key, message)

    async def ask(self, message: M, *, timeout: float | None = DEFAULT_ASK_TIMEOUT) -> R:
        return await self.registry.ask(self.key, message, timeout=timeout)
