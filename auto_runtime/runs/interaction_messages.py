"""The messages that change a request's run (an interaction function's, or another type's request delivered
through a tool): its start, an answer, its ending when a due entry comes, a delivery attempt's start, end or
loss, and a reply read in its conversation.

Each is decided by the interaction type (`functions.interaction.decisions`, `delivery_decisions`) in the run's
actor. `StartInteractionRun` is written by `InteractionRuntime.start` through the writer `RunService` hands it in
the run's actor (never asked); the others are asked through `Runs` and handled by the table the interaction
runtime fills when it is built. `at` is the sender's clock when it sent the message: the time due work is armed
at and an ending is judged by.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from auto_runtime.ledger import DueEntry, LeaseFence
from auto_runtime.problems import Rejection
from auto_runtime.runs.messages import RunMessage

if TYPE_CHECKING:
    from auto_runtime.functions.function_type import RunEnding


@dataclass(frozen=True)
class StartInteractionRun(RunMessage[Rejection | None]):
    """Record a request's `run_started` and what its start came to (`first`): the request to keep open (the
    `interaction_requested` data, its expiry and first delivery attempt armed), or the ending at once (a
    rejection, a notification's output). Answered with the rejection the start raises, else None; a run started
    meanwhile by another writer makes it stale (nothing appended)."""

    started: Mapping[str, Any]
    """`run_started`'s data before `waits`: the input and its digest."""
    metadata: Mapping[str, Any]
    """The run's metadata, which every record of the start carries."""
    first: Mapping[str, Any] | RunEnding
    at: datetime


@dataclass(frozen=True)
class AnsweredElsewhere:
    """The run is of a type that answers its requests itself (`InteractionRuntime.answer_for`)."""

    definition_type: str


@dataclass(frozen=True)
class AnswerRequest(RunMessage[dict[str, Any] | AnsweredElsewhere]):
    """`answer_interaction`: record `request_answered` and arm `interaction:settle`; answered with the answer as
    the contract shows it (the one recorded before when it is the same answer)."""

    answer: Any
    claimed_for: str | None
    caller_id: str
    at: datetime


@dataclass(frozen=True)
class EndRequest(RunMessage[bool]):
    """An `interaction:settle`, `interaction:expire` or `interaction:cancel` entry came due: end the run with its
    answer, its cancellation or its expiry, marking the entry fired in the same append. Whether it ended the run
    (when not, the entry is marked fired alone)."""

    entry: DueEntry
    fence: LeaseFence
    at: datetime


@dataclass(frozen=True)
class StartDelivery(RunMessage[str | None]):
    """Attempt `number` came due (`entry`): record `delivery_started` with `started` (the call may go out) or,
    when its arguments could not be made, `delivery_refused` with `refusal` (`because`, `detail`). Answered with
    the `delivery_started` record's id, or None when no call goes out (the entry is then marked fired, unless
    this attempt was refused, whose append marks it)."""

    entry: DueEntry
    number: int
    fence: LeaseFence
    at: datetime
    started: Mapping[str, Any] | None = None
    refusal: tuple[str, str] | None = None


@dataclass(frozen=True)
class DeliveryOutcome:
    """How an attempt's call ended: its `failure` (`because`, `detail`, a server's `retry_after_ms`), or None
    when the tool answered; what it answered (`result_text`, None without an answer), its JSON-RPC id, and the
    document the answer held (`has_document`)."""

    failure: Mapping[str, Any] | None
    result_text: str | None = None
    jsonrpc_id: Any = None
    has_document: bool = False
    document: Any = None


@dataclass(frozen=True)
class EndDelivery(RunMessage[bool]):
    """Attempt `number`'s call ended: record `delivery_succeeded`, `delivery_failed` (and the next attempt) or,
    for a notification, its ending; nothing when the run ended or the attempt was ended already. Whether it
    recorded."""

    number: int
    started_id: str
    outcome: DeliveryOutcome
    duration_ms: int
    fence: LeaseFence
    at: datetime


@dataclass(frozen=True)
class LoseDelivery(RunMessage[bool]):
    """Attempt `number` was still unfinished a minute after it started (its `interaction:lost:<n>` `entry`):
    `delivery_failed`, `because: "lost"`, and the next attempt. Whether it recorded (when not, the entry is
    marked fired alone)."""

    entry: DueEntry
    number: int
    fence: LeaseFence
    at: datetime


@dataclass(frozen=True)
class Telling:
    """What a refused reply tells its answerer (§5.4): the refusal's `because` and `issues`, the `reply_refused`
    record's id, the request and where its delivery landed (`sent`)."""

    because: str
    issues: Sequence[Mapping[str, str]]
    refused_id: str
    request: Mapping[str, Any]
    sent: Mapping[str, Any] | None


@dataclass(frozen=True)
class ReplyJudged:
    """A reply's judgement: `taken` (`request_answered`), `refused` (`reply_refused`, with what to tell when it
    tells), or `nothing` recorded."""

    outcome: Literal["taken", "refused", "nothing"]
    telling: Telling | None = None


@dataclass(frozen=True)
class JudgeReply(RunMessage[ReplyJudged]):
    """A reply read in the request's conversation (`reply`: its `id`, `sender` and `text`), by the reading `tool`
    of `server`; `ambiguous` when it named no request among several kept (§5.2)."""

    reply: Mapping[str, Any]
    server: str
    tool: str
    at: datetime
    ambiguous: bool = False
