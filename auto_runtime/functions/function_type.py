"""The interface each definition type plugs in through: check and describe a document, and run it.

The generic layer (`auto_runtime.playbooks`) owns names, versions, retirement, run ids, the ledger facts and
every limit the seeds set for all types; a type owns its document format and what a run of it does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from auto_runtime.ledger import PlaybookScope
from auto_runtime.problems import InputIssue, Rejection, invalid_input

DefinitionType = Literal["reasoning", "interaction", "computation", "recall", "prediction", "workflow"]
DEFINITION_TYPES: tuple[DefinitionType, ...] = (
    "reasoning",
    "interaction",
    "computation",
    "recall",
    "prediction",
    "workflow",
)


@dataclass(frozen=True)
class Use:
    """One definition another one uses, for the **Used by** line of the used one's overview."""

    type: str
    name: str
    how: str


@dataclass(frozen=True)
class CheckedDocument:
    """What a type reads from a document it accepts.

    `overview` is the Markdown the runtime writes when it saves the version, without the **Used by** part
    (read fresh on each return). `state` is whatever the type keeps to run the version, as JSON.
    """

    media_type: str
    description: str | None
    input_schema: Mapping[str, Any] | None
    output_schema: Mapping[str, Any] | None
    shape: str | None
    overview: str
    uses: tuple[Use, ...] = ()
    warnings: tuple[Mapping[str, Any], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


async def _record_nothing(fact_type: str, data: Mapping[str, Any]) -> None:
    """The `record` of a request made outside the run service: facts go nowhere."""


RecordFact = Callable[[str, Mapping[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class RunRequest:
    """One attempt at a run of a definition's latest active version.

    `record(type, data)` appends a fact of the run to its stream as it happens (a reasoning run's tool calls),
    between `run_started` and the ending. A type whose saved document has `calls_tools: true` in
    `CheckedDocument.extra` gets `calls_tools` on its runs' `run_started`, for the `tools_called` retry rule.
    """

    org: str
    playbook: str
    run_id: str
    definition_type: str
    name: str
    version: int
    source: str
    input: Any
    started_at: datetime
    caller_id: str
    record: RecordFact = _record_nothing
    document: Any = None
    """The version's parsed document (`FunctionType.parse` of `source`, kept by the playbook's actor:
    `playbooks.definition_documents`), or its `Rejection` when it no longer parses; None for a request made
    outside the run service, which the type parses itself."""


@dataclass(frozen=True)
class Succeeded:
    output: Any
    record: Mapping[str, Any]
    output_shape: str | None = None


@dataclass(frozen=True)
class Rejected:
    rejection: Rejection
    record: Mapping[str, Any] | None = None


RunEnding = Succeeded | Rejected


class FunctionType(Protocol):
    """A definition type: `check` refuses a document with `invalid_input` (issues under `/source`) or
    `unavailable`; `parse` reads a saved source into what its runs need (a source saved before a rule it
    breaks held answers a `conflict`, kind `unworkable`, returned rather than raised); `run` carries out one
    attempt and says how it ended. A type keeps no parsed documents of its own: the playbook actors do."""

    name: str

    async def check(self, source: str) -> CheckedDocument: ...

    async def parse(self, source: str) -> Any | Rejection: ...

    async def run(self, request: RunRequest) -> RunEnding: ...


@runtime_checkable
class ChecksInPlaybook(Protocol):
    """A type some of whose save-time rules read the playbook (a prediction function's dataset and trainer):
    the registry calls `check_in` in place of `check` for a save."""

    async def check_in(self, scope: PlaybookScope, source: str) -> CheckedDocument: ...


class TypeNotAvailable:
    """A type whose runtime support has not landed: every document is refused, and nothing runs."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _refusal(self) -> Rejection:
        return invalid_input(
            [
                InputIssue(
                    f"source: {self.name} definitions are not available on this server yet, so it saves none.",
                    "/source",
                )
            ]
        )

    async def check(self, source: str) -> CheckedDocument:
        raise self._refusal()

    async def parse(self, source: str) -> Any | Rejection:
        return self._refusal()

    async def run(self, request: RunRequest) -> RunEnding:
        raise self._refusal()
