"""Task runs in progress, one dataclass per kind of task: a tagged union whose tag (`KIND`) is the kind's name.

A task run's id (its activation id) grows for the run's whole life, so an id names one task run forever. Each
class holds the fields every task run has (`TaskRunBase`) and only its own kind's; a phase is a `Literal` of
the phases its kind goes through, "new" until its body moves it. Task runs are plain data the decider changes
in place on its own copy of a run's state; `state_codec` writes them in the form stored before they were typed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar, get_args

WaitPhase = Literal["new", "waiting"]
CallPhase = Literal["new", "waiting"]
ListenPhase = Literal["new", "listening"]
TryPhase = Literal["new", "trying", "delay", "catching"]
"""A try runs its `try` list (trying), waits out a retry delay (delay) or runs its `catch.do` list (catching)."""


@dataclass(kw_only=True)
class TaskRunBase:
    """What every task run holds. `cause` is the task run whose entry caused this one's first entry (None: the
    input); `run` is 0 until the task begins (a task kept across a yield has not); `branch` is the index of the
    fork branch it runs, when its parent is a fork; `scope` holds the loop and catch names visible inside it."""

    KIND: ClassVar[str]
    PHASES: ClassVar[tuple[str, ...]] = ("new",)

    id: int
    reference: str
    name: str
    run: int
    parent: int | None
    cause: int | None
    started_in: str = ""
    """The input that started this task run: `cause` counts only in that input (later, the input is the cause)."""
    raw_input: Any = None
    input: Any = None
    started_at: int = 0
    scope: dict[str, Any] = field(default_factory=dict)
    branch: int | None = None
    timeout_timer: str | None = None

    def held_values(self) -> Iterator[Any]:
        """The data values the task run holds (spec 13 counts each distinct one once)."""
        yield self.raw_input
        yield self.input
        yield from self.scope.values()


@dataclass(kw_only=True)
class ListHolderRun(TaskRunBase):
    """A task run that runs one list of tasks at a time: `list_pointer`, `index` of the running child, `data`
    the list's current data."""

    list_pointer: str | None = None
    index: int = 0
    data: Any = None

    def held_values(self) -> Iterator[Any]:
        yield from super().held_values()
        yield self.data


@dataclass(kw_only=True)
class RootRun(ListHolderRun):
    """The run itself (reference `/`), holding the document's `do` list."""

    KIND = "root"


@dataclass(kw_only=True)
class DoRun(ListHolderRun):
    KIND = "do"


@dataclass(kw_only=True)
class ForRun(ListHolderRun):
    """A loop: `items` to iterate over, `iteration` the one running; `data` carries over between iterations."""

    KIND = "for"
    items: list[Any] | None = None
    iteration: int = 0

    def held_values(self) -> Iterator[Any]:
        yield from super().held_values()
        yield self.items


@dataclass(kw_only=True)
class TryRun(ListHolderRun):
    """A try: its attempts (`attempt` retries so far, from `first_attempt_at`), the child whose failure the next
    attempt follows (`failed_child`), the retry delay's timer and the attempt's duration timer."""

    KIND = "try"
    PHASES = get_args(TryPhase)
    phase: TryPhase = "new"
    attempt: int = 0
    first_attempt_at: int = 0
    failed_child: int | None = None
    timer: str | None = None
    attempt_timer: str | None = None


@dataclass(kw_only=True)
class ForkRun(TaskRunBase):
    """A fork: branch outputs by branch index, competing branches' failures `(at, branch, error)`, and whether a
    branch asked to end the run (`then: end`)."""

    KIND = "fork"
    results: dict[int, Any] = field(default_factory=dict)
    failures: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)
    end_requested: bool = False

    def held_values(self) -> Iterator[Any]:
        yield from super().held_values()
        yield from self.results.values()
        yield from (failure[2] for failure in self.failures)


@dataclass(kw_only=True)
class SetRun(TaskRunBase):
    KIND = "set"


@dataclass(kw_only=True)
class SwitchRun(TaskRunBase):
    KIND = "switch"


@dataclass(kw_only=True)
class RaiseRun(TaskRunBase):
    KIND = "raise"


@dataclass(kw_only=True)
class EmitRun(TaskRunBase):
    KIND = "emit"


@dataclass(kw_only=True)
class WaitRun(TaskRunBase):
    KIND = "wait"
    PHASES = get_args(WaitPhase)
    phase: WaitPhase = "new"
    waited_in: str = ""
    """The input in which this task run last recorded `waiting`."""
    timer: str | None = None


@dataclass(kw_only=True)
class CallRun(TaskRunBase):
    """A call of another run: the call's key while it waits for the answer, and the timer bounding the wait."""

    KIND = "call"
    PHASES = get_args(CallPhase)
    phase: CallPhase = "new"
    waited_in: str = ""
    timer: str | None = None
    call_key: str | None = None


@dataclass(kw_only=True)
class ListenRun(TaskRunBase):
    """A listen: the events taken so far by filter index, and the listener armed for playbook events."""

    KIND = "listen"
    PHASES = get_args(ListenPhase)
    phase: ListenPhase = "new"
    waited_in: str = ""
    taken: dict[int, dict[str, Any]] = field(default_factory=dict)
    listener: str | None = None

    def held_values(self) -> Iterator[Any]:
        yield from super().held_values()
        yield from self.taken.values()


ListHolder = RootRun | DoRun | ForRun | TryRun
WaitingRun = WaitRun | CallRun | ListenRun
"""The task runs that record `waiting`."""
TaskRun = ListHolder | ForkRun | SetRun | SwitchRun | RaiseRun | EmitRun | WaitingRun
"""A task run of any kind."""

TASK_RUN_KINDS: Mapping[str, type[TaskRun]] = {kind.KIND: kind for kind in get_args(TaskRun)}
"""Each kind of task run (every member of `TaskRun`) by its tag."""

TASK_KEYS: tuple[tuple[str, type[TaskRun]], ...] = (
    ("call", CallRun),
    ("emit", EmitRun),
    ("for", ForRun),
    ("fork", ForkRun),
    ("listen", ListenRun),
    ("raise", RaiseRun),
    ("set", SetRun),
    ("switch", SwitchRun),
    ("try", TryRun),
    ("wait", WaitRun),
)
"""The kind of a task's run by the key that names it in the document, the first that fits; a task with none of
them is a `do`."""


def task_run_kind(definition: Mapping[str, Any]) -> type[TaskRun]:
    """The kind of task run a task's definition starts."""
    return next((kind for key, kind in TASK_KEYS if key in definition), DoRun)


Kind = TypeVar("Kind", bound=TaskRunBase)


def expect(task: TaskRunBase, kind: type[Kind]) -> Kind:
    """`task` as the kind the caller's message is for: a message for another kind is an engine fault."""
    if not isinstance(task, kind):
        raise TypeError(f"the task run {task.reference} is a {task.KIND} task run, not a {kind.__name__}")
    return task
