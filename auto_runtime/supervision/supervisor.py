"""A Trio supervisor: runs children (tasks, actors, thread actors, OS processes), restarts them by strategy.

Concurrency rules
- Every child runs in its own task inside the supervisor's nursery, in its own cancel scope, behind a
  wrapper that catches the child's `Exception`. A failing child therefore never cancels its siblings;
  only the supervisor decides who is stopped and restarted.
- Children report their end on an unbounded channel (at most one report per child life). One control
  loop reads the reports; it and `start_child` / `terminate_child` mutate the child table under one
  lock, so restarts, dynamic starts and stops are serialised.
- A supervisor that exceeds its restart intensity stops all its children (reverse start order) and
  raises `SupervisorFailedError` from `run()`; its parent (a supervising `Supervisor` or the nursery that
  runs the root) decides what happens next.
"""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import trio

from auto_runtime.metrics import restarted
from auto_runtime.supervision.backoff import Backoff
from auto_runtime.supervision.child_spec import ChildContext, ChildSpec, Restart
from auto_runtime.supervision.intensity import RestartIntensity, RestartWindow

log = logging.getLogger("auto_runtime.supervision.supervisor")


class Strategy(enum.Enum):
    """Which children a supervisor restarts when one of them ends and must be restarted."""

    ONE_FOR_ONE = "one_for_one"
    """Only the child that ended."""
    ONE_FOR_ALL = "one_for_all"
    """Every child: the others are stopped in reverse start order, then all start in order."""
    REST_FOR_ONE = "rest_for_one"
    """The child that ended and every child started after it."""


class SupervisorFailedError(Exception):
    """A supervisor gave up: its children failed more often than its restart intensity allows."""

    def __init__(self, supervisor: str, child: str, error: BaseException | None) -> None:
        reason = f"{error!r}" if error is not None else "a normal exit"
        super().__init__(
            f"supervisor {supervisor!r} exceeded its restart intensity; last: child {child!r} after {reason}"
        )
        self.supervisor = supervisor
        self.child = child
        self.error = error


class SupervisorNotRunningError(RuntimeError):
    """`start_child` or `terminate_child` on a supervisor that is not running or is stopping."""


class _ChildLife:
    """One life of a child: started once, ends once."""

    __slots__ = ("ctx", "done", "error", "scope", "spec", "started_at", "stopping")

    def __init__(self, spec: ChildSpec) -> None:
        self.spec = spec
        self.scope = trio.CancelScope()
        self.done = trio.Event()
        self.error: Exception | None = None
        self.stopping = False
        self.started_at = 0.0
        self.ctx: ChildContext | None = None


class Supervisor:
    """Supervises an ordered list of children; runs as a Trio task (`run`) or as a child (`child_spec`).

    Usage as the server's root::

        root = Supervisor("root", [ledger_writer_spec])
        async with trio.open_nursery() as nursery:
            await nursery.start(root.run)        # returns once the initial children have started
            await root.start_child(another_spec)  # later code attaches children dynamically
            ...
            await root.stop()                      # children stop in reverse start order
    """

    def __init__(
        self,
        name: str,
        children: Sequence[ChildSpec] = (),
        *,
        strategy: Strategy = Strategy.ONE_FOR_ONE,
        intensity: RestartIntensity | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self.name = name
        self.strategy = strategy
        self.intensity = intensity if intensity is not None else RestartIntensity()
        self.backoff = backoff if backoff is not None else Backoff()
        self._specs: list[ChildSpec] = []
        for spec in children:
            self._check_new_name(spec.name)
            self._specs.append(spec)
        self._lives: dict[str, _ChildLife] = {}
        self._consecutive_failures: dict[str, int] = {}
        self._lock = trio.Lock()
        self._nursery: trio.Nursery | None = None
        self._exits: trio.MemorySendChannel[_ChildLife] | None = None
        self._control_scope: trio.CancelScope | None = None
        self._stop_requested = False
        self._ended: trio.Event | None = None

    @property
    def running(self) -> bool:
        return self._nursery is not None

    @property
    def children(self) -> list[str]:
        """Names of the children that are running now, in start order."""
        return [spec.name for spec in self._specs if spec.name in self._lives]

    @property
    def specs(self) -> list[ChildSpec]:
        """Every child the supervisor keeps (running or waiting for a restart), in start order."""
        return list(self._specs)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the children in order, supervise them until `stop()`, then stop them in reverse order.

        Raises `SupervisorFailedError` when the restart intensity is exceeded (after stopping every child).
        """
        await self._run(_once(task_status.started))

    def child_spec(self, *, restart: Restart = Restart.PERMANENT, shutdown: float = math.inf) -> ChildSpec:
        """This supervisor as a child of another one; a restart re-runs it with its current specs."""
        return ChildSpec(
            name=self.name, start=self._run_as_child, restart=restart, shutdown=shutdown, subtree=self.tree
        )

    def tree(self) -> dict[str, Any]:
        """This supervisor and the children it keeps, in start order, nested supervisors with theirs::

        {"name": "root", "strategy": "one_for_one", "children": [{"name": "http", "restart": "transient"}, ...]}
        """
        children: list[dict[str, Any]] = []
        for spec in self._specs:
            child: dict[str, Any] = {"name": spec.name, "restart": spec.restart.value}
            if spec.subtree is not None:
                child |= {key: value for key, value in spec.subtree().items() if key != "name"}
            children.append(child)
        return {"name": self.name, "strategy": self.strategy.value, "children": children}

    async def start_child(self, spec: ChildSpec) -> None:
        """Add a child after the others and start it; returns once it has reported started."""
        async with self._lock:
            if self._nursery is None or self._stop_requested:
                raise SupervisorNotRunningError(f"supervisor {self.name!r} is not running")
            self._check_new_name(spec.name)
            self._specs.append(spec)
            await self._start(spec)

    async def terminate_child(self, name: str) -> None:
        """Stop a child (within its shutdown timeout) and forget it."""
        async with self._lock:
            if self._nursery is None:
                raise SupervisorNotRunningError(f"supervisor {self.name!r} is not running")
            life = self._lives.get(name)
            if life is not None:
                await self._stop_life(life)
            self._forget(name)

    def request_stop(self) -> None:
        """Ask the supervisor to stop without waiting (safe to call from one of its own children)."""
        self._stop_requested = True
        if self._control_scope is not None:
            self._control_scope.cancel()

    async def stop(self) -> None:
        """Stop every child in reverse start order, each within its shutdown timeout; wait for the end."""
        self.request_stop()
        if self._ended is not None:
            await self._ended.wait()

    async def _run_as_child(self, ctx: ChildContext) -> None:
        ctx.on_stop_requested(self.request_stop)
        await self._run(ctx.started)

    async def _run(self, report_started: Callable[[], None]) -> None:
        if self._nursery is not None:
            raise RuntimeError(f"supervisor {self.name!r} is already running")
        self._stop_requested = False
        self._ended = trio.Event()
        self._lives.clear()
        window = RestartWindow(self.intensity)
        send, receive = trio.open_memory_channel[_ChildLife](math.inf)
        failure: SupervisorFailedError | None = None
        try:
            async with trio.open_nursery() as nursery:
                self._nursery, self._exits = nursery, send
                with trio.CancelScope() as control:
                    self._control_scope = control
                    if self._stop_requested:
                        control.cancel()
                    async with self._lock:
                        for spec in list(self._specs):
                            await self._start(spec)
                    report_started()
                    failure = await self._supervise(receive, window)
                report_started()
                async with self._lock:
                    self._stop_requested = True
                    await self._stop_all()
                nursery.cancel_scope.cancel()
        finally:
            self._nursery = None
            self._exits = None
            self._control_scope = None
            self._lives.clear()
            self._ended.set()
        if failure is not None:
            raise failure

    async def _supervise(
        self, exits: trio.MemoryReceiveChannel[_ChildLife], window: RestartWindow
    ) -> SupervisorFailedError | None:
        async for life in exits:
            async with self._lock:
                failure = await self._on_child_end(life, window)
            if failure is not None:
                return failure
        return None

    async def _on_child_end(self, life: _ChildLife, window: RestartWindow) -> SupervisorFailedError | None:
        name = life.spec.name
        if life.stopping or self._lives.get(name) is not life:
            return None
        del self._lives[name]
        failed = life.error is not None
        assert life.ctx is not None
        if life.ctx.finished or not life.spec.restart.restarts_after(failed):
            log.info("supervisor %s: child %s ended (%s); not restarted", self.name, name, _reason(life))
            self._forget(name)
            return None
        now = trio.current_time()
        if not window.admit(now):
            log.error(
                "supervisor %s: child %s ended (%s); restart intensity %d in %gs exceeded, giving up",
                self.name,
                name,
                _reason(life),
                self.intensity.max_restarts,
                self.intensity.period,
            )
            return SupervisorFailedError(self.name, name, life.error)
        failures = self._consecutive_failures.get(name, 0)
        if now - life.started_at >= self.backoff.reset_after:
            failures = 0
        failures += 1
        self._consecutive_failures[name] = failures
        delay = self.backoff.delay(failures)
        restarted(self.name)
        log.warning(
            "supervisor %s: restarting child %s after %s (%s, back-off %gs)",
            self.name,
            name,
            _reason(life),
            self.strategy.value,
            delay,
        )
        group = self._restart_group(name)
        for spec in reversed(group):
            sibling = self._lives.get(spec.name)
            if sibling is not None:
                log.warning(
                    "supervisor %s: restarting child %s because child %s ended (%s)",
                    self.name,
                    spec.name,
                    name,
                    self.strategy.value,
                )
                await self._stop_life(sibling)
                if spec.restart is Restart.TEMPORARY:
                    self._forget(spec.name)
        await trio.sleep(delay)
        for spec in group:
            if spec.name not in self._lives and any(kept is spec for kept in self._specs):
                await self._start(spec)
        return None

    def _restart_group(self, name: str) -> list[ChildSpec]:
        index = next(i for i, spec in enumerate(self._specs) if spec.name == name)
        if self.strategy is Strategy.ONE_FOR_ONE:
            return [self._specs[index]]
        if self.strategy is Strategy.ONE_FOR_ALL:
            return list(self._specs)
        return self._specs[index:]

    async def _start(self, spec: ChildSpec) -> None:
        assert self._nursery is not None
        life = _ChildLife(spec)
        self._lives[spec.name] = life
        await self._nursery.start(self._child_task, life)

    async def _child_task(self, life: _ChildLife, task_status: trio.TaskStatus[None]) -> None:
        exits = self._exits
        assert exits is not None
        life.ctx = ChildContext(life.spec.name, task_status.started)
        life.started_at = trio.current_time()
        try:
            with life.scope:
                try:
                    await life.spec.start(life.ctx)
                except Exception as error:
                    life.error = error
        finally:
            life.ctx.started()
            life.done.set()
        exits.send_nowait(life)

    async def _stop_life(self, life: _ChildLife) -> None:
        """Stop one child: graceful request, wait up to its shutdown timeout, then cancel it."""
        life.stopping = True
        assert life.ctx is not None
        graceful = life.ctx.wants_graceful_stop and life.spec.shutdown > 0
        life.ctx.request_stop()
        if graceful and not life.done.is_set():
            with trio.move_on_after(life.spec.shutdown):
                await life.done.wait()
            if not life.done.is_set():
                log.warning(
                    "supervisor %s: child %s did not stop within %gs; cancelling it",
                    self.name,
                    life.spec.name,
                    life.spec.shutdown,
                )
        life.scope.cancel()
        await life.done.wait()
        if self._lives.get(life.spec.name) is life:
            del self._lives[life.spec.name]

    async def _stop_all(self) -> None:
        for spec in reversed(list(self._specs)):
            life = self._lives.get(spec.name)
            if life is not None:
                await self._stop_life(life)
                if spec.restart is Restart.TEMPORARY:
                    self._forget(spec.name)

    def _forget(self, name: str) -> None:
        self._specs = [spec for spec in self._specs if spec.name != name]
        self._consecutive_failures.pop(name, None)

    def _check_new_name(self, name: str) -> None:
        if any(spec.name == name for spec in self._specs):
            raise ValueError(f"supervisor {self.name!r} already has a child named {name!r}")


def describe_tree(tree: dict[str, Any]) -> str:
    """A `Supervisor.tree` on one line: `root (one_for_one) [ledger permanent, playbooks permanent one_for_one []]`."""

    def child(node: dict[str, Any]) -> str:
        text = f"{node['name']} {node['restart']}"
        if "strategy" in node:
            text += f" {node['strategy']} [{', '.join(child(c) for c in node['children'])}]"
        return text

    return f"{tree['name']} ({tree['strategy']}) [{', '.join(child(c) for c in tree['children'])}]"


def _once(callback: Callable[[], None]) -> Callable[[], None]:
    called = False

    def call_once() -> None:
        nonlocal called
        if not called:
            called = True
            callback()

    return call_once


def _reason(life: _ChildLife) -> str:
    return f"error {life.error!r}" if life.error is not None else "normal exit"
