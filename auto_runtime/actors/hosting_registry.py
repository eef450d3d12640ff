"""A registry whose actors supervise child registries of their own (a playbook's actor and its runs' actors).

Each key of a `HostingRegistry` has, besides its mailbox, a children object (`HostedChildren`: a few child
registries made with `queues_while_stopped`), made when the key enters the map and dropped when it leaves. The
children run inside the key's residency: started before the key's first life, stopped after its last.

Concurrency rules (on top of `Registry`'s)
- Senders reach a child through `children_of(key)`, which spawns the key when it has no live actor, in the same
  synchronous step as the send that follows it; a child registry that is not running yet (the key's actor is
  starting, or restarting) keeps the message queued for its next run.
- A key whose children hold live actors (or queued messages) is busy: it is not passivated for idleness nor
  evicted for room, and a life that ended on a stop request is followed by another one. Only a key with no
  queued message and no busy child leaves the map; it leaves in the same step as that check, and only then
  are its children (holding nothing) stopped, so no message reaches children that are going away.
- A graceful stop of the registry (`request_stop`) stops the children gracefully after the key's life: each
  child's in-flight messages finish first.
- A child registry that fails (its restart intensity exceeded: `RegistryFailedError`) escalates to its key:
  the key's current life is cancelled (its message in flight is answered `ActorStoppedError`), the other
  children are cancelled with it (their queued asks answered `ActorStoppedError`), and, within the
  `escalations` intensity counted for that key alone, the key restarts at once: a new instance (which
  rebuilds its state in `on_start`) and fresh child registries with fresh windows. Past that intensity the
  key gives up: its queued messages are refused and it leaves the map, and its next message starts it afresh.
  Escalations never count against the registry's own intensity, so one key's failing children cannot make the
  registry (and so its supervisor and the tree above) fail; crashes of the key's own lives still do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import Any, Generic, Protocol, TypeVar

import trio

from auto_runtime.actors.errors import ActorStoppedError
from auto_runtime.actors.registry import Registry, RegistryFailedError
from auto_runtime.actors.trio_actor import Actor, ActorRef
from auto_runtime.supervision.child_spec import DEFAULT_SHUTDOWN_SECONDS, ChildSpec, Restart
from auto_runtime.supervision.intensity import RestartIntensity, RestartWindow
from auto_runtime.supervision.supervisor import Strategy

log = logging.getLogger("auto_runtime.supervision.registry")

K = TypeVar("K", bound=Hashable)
M = TypeVar("M")
R = TypeVar("R")


class HostedChildren(Protocol):
    """The child registries one key's actor hosts (each made with `queues_while_stopped`)."""

    @property
    def registries(self) -> Sequence[Registry[Any, Any, Any]]: ...


C = TypeVar("C", bound=HostedChildren)


class HostingRegistry(Registry[K, M, R], Generic[K, M, R, C]):
    """Keyed actors that host child registries (see the module's rules). `children(key)` makes a key's
    children when it enters the map; `escalations` bounds the child failures one key restarts after."""

    def __init__(
        self,
        name: str,
        factory: Callable[[K], Actor[M, R]],
        children: Callable[[K], C],
        *,
        escalations: RestartIntensity,
        children_names: Sequence[str] = (),
        **options: Any,
    ) -> None:
        super().__init__(name, factory, **options)
        self.children_factory = children
        self.children_names = tuple(children_names)
        self.escalations = escalations
        self._children: dict[K, C] = {}
        self._hosting: dict[K, _Hosting] = {}
        self._windows: dict[K, RestartWindow] = {}
        self.escalated = 0
        """Lives ended because a child registry failed (each one restarted the key or made it give up)."""
        self.gave_up = 0
        """Keys that gave up after more escalations than `escalations` allows."""

    def child_spec(
        self, *, restart: Restart = Restart.PERMANENT, shutdown: float = DEFAULT_SHUTDOWN_SECONDS
    ) -> ChildSpec:
        """The registry as a supervised child; its tree shows the child registries each key's actor supervises
        (`one_for_all`: a failing one restarts the key's actor and all of them)."""
        spec = super().child_spec(restart=restart, shutdown=shutdown)
        children = [{"name": name, "restart": Restart.PERMANENT.value} for name in self.children_names]
        return replace(spec, subtree=lambda: {"strategy": Strategy.ONE_FOR_ALL.value, "children": children})

    def children_of(self, key: K) -> C:
        """The key's children, spawning its actor when none is live (send in the same step). They are made on
        the key's first message for them, and run from then until the key leaves the map, so a playbook that
        only takes commands hosts no child task."""
        self._address(key)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = self.children_factory(key)
            hosting = self._hosting.get(key)
            if hosting is not None:
                for registry in children.registries:
                    hosting.start(registry)
        return children

    def live_children(self) -> list[C]:
        """The children of every key in the map."""
        return list(self._children.values())

    def hosted(self, key: K) -> C | None:
        """The key's children while it is in the map (spawns nothing)."""
        return self._children.get(key)

    def _removed(self, key: K) -> None:
        children = self._children.pop(key, None)
        self._windows.pop(key, None)
        if children is not None:
            for registry in children.registries:
                registry.refuse_queued()  # a message queued while they restarted, now that none will run

    def _busy(self, key: K) -> bool:
        children = self._children.get(key)
        return children is not None and any(registry.live_count for registry in children.registries)

    async def _keep_alive(self, key: K, address: ActorRef[M, R]) -> None:
        try:
            while await self._host_once(key, address):
                pass
        finally:
            if self._live.get(key) is address:
                self._remove(key, address)

    async def _host_once(self, key: K, address: ActorRef[M, R]) -> bool:
        """One run of the key's children with the key's lives inside it; True when the key restarts after a
        child failed."""
        removed = True
        """Whether the key left the map in the body (a failed start, or a passivation); a body cancelled by a
        failing child leaves it in."""
        async with trio.open_nursery() as nursery:
            hosting = self._hosting[key] = _Hosting(nursery)
            children = self._children.get(key)
            for registry in children.registries if children is not None else ():
                await nursery.start(_host_child, registry, hosting.failures, nursery.cancel_scope)
            removed = False
            try:
                if not await self._serve_lives(key, address):
                    removed = True
                    nursery.cancel_scope.cancel()
                elif not self._closing:
                    self._remove(key, address)
                    removed = True
                    hosting.stop_children(self._children_stopping(key, children))
                else:
                    hosting.stop_children(self._children_stopping(key, children))
            finally:
                if self._hosting.get(key) is hosting:
                    del self._hosting[key]
        if removed:
            return False
        if hosting.failures and not self._closing:
            return self._escalate(key, address, hosting.failures[0])
        self._remove(key, address)
        return False

    def _children_stopping(self, key: K, before: C | None) -> Sequence[Registry[Any, Any, Any]]:
        """The key's child registries to stop (made before this hosting, or during it)."""
        children = self._children.get(key, before)
        return children.registries if children is not None else ()

    def _escalate(self, key: K, address: ActorRef[M, R], failure: RegistryFailedError) -> bool:
        self.escalated += 1
        window = self._windows.setdefault(key, RestartWindow(self.escalations))
        if window.admit(trio.current_time()):
            log.warning("registry %s: restarting actor %r after its child %s failed", self.name, key, failure.registry)
            return True
        self.gave_up += 1
        log.error(
            "registry %s: actor %r gave up after its children failed too often (last: %s)", self.name, key, failure
        )
        address.refuse_pending(ActorStoppedError(address.name, "gave up after its runs failed too often"))
        self._remove(key, address)
        return False


class _Hosting:
    """One run of a key's children: the nursery they run in and the failures they escalated."""

    __slots__ = ("failures", "nursery")

    def __init__(self, nursery: trio.Nursery) -> None:
        self.nursery = nursery
        self.failures: list[RegistryFailedError] = []

    def start(self, registry: Registry[Any, Any, Any]) -> None:
        """Run a child made during this hosting (it queues what it is sent until it runs)."""
        self.nursery.start_soon(_host_child, registry, self.failures, self.nursery.cancel_scope)

    def stop_children(self, registries: Sequence[Registry[Any, Any, Any]]) -> None:
        """Stop the children gracefully (one that has not begun to run stops as soon as it has)."""
        for registry in registries:
            registry.request_stop()


async def _host_child(
    registry: Registry[Any, Any, Any],
    failures: list[RegistryFailedError],
    host: trio.CancelScope,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    try:
        await registry.run(task_status=task_status)
    except RegistryFailedError as failure:
        failures.append(failure)
        host.cancel()
