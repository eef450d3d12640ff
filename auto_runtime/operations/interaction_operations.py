"""The inbox of a playbook: `list_interactions` and `answer_interaction` (seeds, "Interaction functions")."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from auto_runtime.interaction_host.interaction_runtime import InteractionRuntime
from auto_runtime.operations.definition_operations import PLAYBOOK_READ, PLAYBOOK_WRITE, DefinitionTypeField
from auto_runtime.operations.fields import ID_PATTERN, OrLeftOut
from auto_runtime.operations.operation import Hints, Operation, OperationContext
from auto_runtime.operations.run_operations import CURSOR_DESCRIPTION, LIMIT_DESCRIPTION, RunId
from auto_runtime.operations.services import services_of
from auto_runtime.problems import InputIssue, invalid_input, unavailable

MAX_CLAIMED_BYTES = 256

Standing = Literal["in_inbox", "to_deliver", "delivering", "delivered", "retrying", "undelivered", "cancelling"]


class ListInteractionsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    to: OrLeftOut[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        default=None, description="Keep only the requests to one party"
    )
    type: OrLeftOut[DefinitionTypeField] = Field(default=None, description="Keep only those from one type of function")
    function: OrLeftOut[Annotated[str, Field(pattern=ID_PATTERN)]] = Field(
        default=None, description="Keep only those from functions of one name"
    )
    limit: int = Field(default=20, ge=1, le=100, description=LIMIT_DESCRIPTION)
    cursor: OrLeftOut[str] = Field(default=None, description=CURSOR_DESCRIPTION)


class InteractionOutput(BaseModel):
    run_id: str
    type: str
    function: str
    version: int
    to: str
    delivery: dict[str, Any] | None
    message: str
    takes_answer: bool
    answer_schema: dict[str, Any] | None
    requested_at: str
    expires_at: str
    attempts: int
    conversation: str | None
    answerer: str | None
    reply_refusals: int
    standing: Standing


class InteractionListOutput(BaseModel):
    interactions: list[InteractionOutput]
    has_more: bool
    next_cursor: str | None


class AnswerInteractionInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: RunId = Field(description="The id of the run whose request is answered")
    answer: Any = Field(description="The answer, matching the request's answer_schema; at most 64 KiB as JSON")
    claimed_for: OrLeftOut[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        default=None, description="Whom you answer for, in at most 256 bytes; never checked"
    )


class AnswerOutput(BaseModel):
    run_id: str
    answer_id: str
    answer: Any
    claimed_for: str | None = None
    answered_by: str
    reply: dict[str, Any] | None = None
    answered_at: str


def _interactions(context: OperationContext) -> InteractionRuntime:
    interactions = services_of(context.services).interactions
    if interactions is None:
        raise unavailable("This server keeps no requests.", retry_after=5)
    return interactions


async def list_interactions(context: OperationContext, data: ListInteractionsInput) -> dict[str, Any]:
    return await _interactions(context).list_open(
        context.scope,
        to=data.to,
        definition_type=data.type,
        function=data.function,
        limit=data.limit,
        cursor=data.cursor,
    )


async def answer_interaction(context: OperationContext, data: AnswerInteractionInput) -> dict[str, Any]:
    claimed = data.claimed_for
    if claimed is not None and len(claimed.encode("utf-8")) > MAX_CLAIMED_BYTES:
        raise invalid_input([InputIssue(f"claimed_for: expected at most {MAX_CLAIMED_BYTES} bytes.", "/claimed_for")])
    return await _interactions(context).answer(context.scope, data.run_id, data.answer, claimed, context.caller.id)


INTERACTION_OPERATIONS = (
    Operation(
        name="list_interactions",
        title="List open requests",
        description=(
            "Lists the playbook's open requests, newest first, a page at a time: what interaction functions asked a "
            "party (and prediction builds), with the party, the message, the answer schema and where each stands. "
            "Keep one party's with to, or one function's with type and function. answer_interaction answers one."
        ),
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="GET",
        route="/interactions",
        input_model=ListInteractionsInput,
        output_model=InteractionListOutput,
        handler=list_interactions,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="runs",
        reasons=frozenset({"invalid_input"}),
    ),
    Operation(
        name="answer_interaction",
        title="Answer a request",
        description=(
            "Answers the open request of a run with an answer matching its answer_schema; the run takes it within "
            "about a second and succeeds with it as its output. Sending the same answer again answers the same "
            "fact; a different one is refused, so an answer cannot be taken back. Give claimed_for to say whom you "
            "answer for."
        ),
        scope="playbook",
        permissions=PLAYBOOK_WRITE,
        method="POST",
        route="/runs/{run_id}/answer",
        input_model=AnswerInteractionInput,
        output_model=AnswerOutput,
        handler=answer_interaction,
        hints=Hints(read_only=False, destructive=True, idempotent=True, open_world=False),
        tag="runs",
        reasons=frozenset({"not_found", "conflict", "invalid_input", "unavailable"}),
    ),
)
