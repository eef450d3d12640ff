"""What a sandbox run can end in. Every outcome but `Returned` carries no output.

`work` is the fuel the entry function spent from its call to its return (or to where it was stopped);
it is `None` when the run never reached the entry function, or was stopped by time or cancellation,
which do not depend on the program alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from auto_runtime.sandbox.json_values import JsonValue


@dataclass(frozen=True)
class Returned:
    """The entry function returned a value the writer wrote as JSON within the bound."""

    output: JsonValue
    output_json: str
    output_bytes: int
    work: int


@dataclass(frozen=True)
class Raised:
    """The program raised. `line` is the document line of the innermost program frame; `text` is cut."""

    line: int | None
    type_name: str
    text: str
    work: int | None


@dataclass(frozen=True)
class OutOfMemory:
    """The program raised `MemoryError` that it did not catch: the heap is full."""

    line: int | None
    work: int | None


@dataclass(frozen=True)
class OutOfWork:
    """The entry function used up its fuel and was stopped."""

    work: int


@dataclass(frozen=True)
class PastDeadline:
    """The run passed its wall-clock deadline and was interrupted."""


@dataclass(frozen=True)
class Cancelled:
    """The caller cancelled the run, which was interrupted."""


@dataclass(frozen=True)
class OutputNotJson:
    """The returned value holds something JSON cannot carry: `what` (the spec's W) at `pointer`."""

    what: str
    pointer: str
    work: int


@dataclass(frozen=True)
class OutputTooDeep:
    """The returned value nests deeper than the bound, first at `pointer`."""

    pointer: str
    work: int


@dataclass(frozen=True)
class OutputTooLarge:
    """The returned value's JSON passed the output bound."""

    work: int


@dataclass(frozen=True)
class OutputOutOfMemory:
    """The heap ran out while the runtime's writer wrote the output."""

    work: int


@dataclass(frozen=True)
class Broken:
    """Anything else: a trap other than work or time, a bridge call out of order, a prelude failure."""

    reason: str
    stderr: str


SandboxOutcome = (
    Returned
    | Raised
    | OutOfMemory
    | OutOfWork
    | PastDeadline
    | Cancelled
    | OutputNotJson
    | OutputTooDeep
    | OutputTooLarge
    | OutputOutOfMemory
    | Broken
)


def ends_worker(outcome: SandboxOutcome) -> bool:
    """Whether the worker that ran this outcome must end: time, memory, cancellation or a breakage."""
    return isinstance(outcome, OutOfWork | PastDeadline | Cancelled | OutOfMemory | OutputOutOfMemory | Broken)
