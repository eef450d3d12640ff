"""Running definitions and reading runs: `run_definition`, `get_run`, `list_runs`, `cancel_run`,
`send_run_event`, `get_run_history`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from auto_runtime.operations.definition_operations import (
    NAME_DESCRIPTION,
    PLAYBOOK_READ,
    PLAYBOOK_WRITE,
    TYPE_DESCRIPTION,
    TYPE_ENUM,
    DefinitionTypeField,
)
from auto_runtime.operations.fields import ID_PATTERN, OrLeftOut
from auto_runtime.operations.operation import Hints, Operation, OperationContext, ResponseLink
from auto_runtime.operations.services import services_of
from auto_runtime.runs.ids import RUN_ID_PATTERN, canonical_run_id

RunId = Annotated[str, AfterValidator(canonical_run_id)]
"""A run id as a request gives it, kept in its canonical lower-case form (`runs.ids`)."""
LIMIT_DESCRIPTION = "How many items a page holds, 1 to 100"
CURSOR_DESCRIPTION = "The next_cursor of the page before, to read the next page"


class RunOutput(BaseModel):
    run_id: str
    type: str
    name: str
    definition_version: int
    status: Literal["started", "succeeded", "rejected", "failed"]
    started_at: str
    started_by: str
    ended_at: str | None = None
    input: Any = None
    output: Any = None
    output_shape: str | None = None
    rejection: dict[str, Any] | None = None
    record: dict[str, Any] | None = None


class RunListOutput(BaseModel):
    runs: list[RunOutput]
    has_more: bool
    next_cursor: str | None


EVENT_RECORD_ID = (
    "The event's own id in the playbook, the one get_event takes. For an event_published event it is not the "
    "published CloudEvent's id (publish_event's answer), which data.event_id shows."
)
"""What an event's `id` is: the record's, never the id of a CloudEvent it records."""
READ_ONE_EVENT = ResponseLink(
    operation="get_event",
    parameters={
        "org": "$request.path.org",
        "playbook": "$request.path.playbook",
        "event_id": "$response.body#/events/0/id",
    },
    description="Reads the first event of the page in full: any event's id goes in the path as it is.",
)
"""The link from a page of events to `get_event`: an event's `id`, the record's (seeds, "Reading one event")."""


class EventOutput(BaseModel):
    id: str = Field(description=EVENT_RECORD_ID)
    type: str
    summary: str
    data: Any
    metadata: dict[str, Any]


class EventListOutput(BaseModel):
    events: list[EventOutput]
    has_more: bool
    next_cursor: str | None


class RunDefinitionInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: DefinitionTypeField = Field(description=TYPE_DESCRIPTION)
    name: str = Field(pattern=ID_PATTERN, description=NAME_DESCRIPTION)
    input: Any = Field(
        default=None, description="The run's input, any JSON value its definition takes; {} when left out"
    )
    run_id: OrLeftOut[Annotated[str, Field(pattern=RUN_ID_PATTERN), AfterValidator(canonical_run_id)]] = Field(
        default=None, description="A UUID to retry under, or to read the run by later"
    )


class RunInPath(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: RunId = Field(description="The id of the run")


class ListRunsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: OrLeftOut[DefinitionTypeField] = Field(default=None, description="Keep the runs of one type")
    name: OrLeftOut[str] = Field(default=None, description="Keep the runs of definitions of one name")
    status: OrLeftOut[Literal["started", "succeeded", "rejected", "failed"]] = Field(
        default=None, description="Keep the runs in one status"
    )
    limit: int = Field(default=20, ge=1, le=100, description=LIMIT_DESCRIPTION)
    cursor: OrLeftOut[str] = Field(default=None, description=CURSOR_DESCRIPTION)


class CancelRunInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: RunId = Field(description="The id of the run")
    reason: OrLeftOut[Annotated[str, Field(min_length=1, max_length=1024, pattern=r"^[^\x00-\x1f\x7f]*$")]] = Field(
        default=None, description="Why the run is cancelled; the run keeps it as the detail of its ending"
    )


class SentEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: str = Field(min_length=1, max_length=256, description="The event's type, such as com.acme.approved")
    id: OrLeftOut[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        default=None, description="The event's id; the run takes an id once, so a request can be sent again"
    )
    source: OrLeftOut[Annotated[str, Field(min_length=1, max_length=1024)]] = Field(
        default=None, description="A URI reference naming where it comes from; /callers/<your caller id> when left out"
    )
    subject: OrLeftOut[Annotated[str, Field(min_length=1, max_length=1024)]] = Field(
        default=None, description="What the event is about"
    )
    data: Any = Field(default=None, description="Any JSON value, nesting at most 510 levels deep")


class SendRunEventInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: RunId = Field(description="The id of the workflow run")
    event: SentEvent = Field(description="The event: type, and optional id, source, subject and data")


class SentEventOutput(BaseModel):
    run_id: str
    event: dict[str, Any]


class RunHistoryInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: RunId = Field(description="The id of the run")
    order: Literal["asc", "desc"] = Field(default="asc", description="Oldest first (asc) or newest first (desc)")
    limit: int = Field(default=20, ge=1, le=100, description=LIMIT_DESCRIPTION)
    cursor: OrLeftOut[str] = Field(default=None, description=CURSOR_DESCRIPTION)


async def run_definition(context: OperationContext, data: RunDefinitionInput) -> dict[str, Any]:
    runs = services_of(context.services).runs
    value = {} if data.input is None and "input" not in data.model_fields_set else data.input
    return await runs.run_definition(context.scope, data.type, data.name, value, data.run_id, context.caller.id)


async def get_run(context: OperationContext, data: RunInPath) -> dict[str, Any]:
    return await services_of(context.services).runs.get_run(context.scope, data.run_id)


async def list_runs(context: OperationContext, data: ListRunsInput) -> dict[str, Any]:
    return await services_of(context.services).runs.list_runs(
        context.scope,
        definition_type=data.type,
        name=data.name,
        status=data.status,
        limit=data.limit,
        cursor=data.cursor,
    )


async def cancel_run(context: OperationContext, data: CancelRunInput) -> dict[str, Any]:
    return await services_of(context.services).runs.cancel_run(
        context.scope, data.run_id, data.reason, context.caller.id
    )


async def send_run_event(context: OperationContext, data: SendRunEventInput) -> dict[str, Any]:
    event = data.event.model_dump(exclude_unset=True)
    return await services_of(context.services).workflows.send_event(
        context.scope, data.run_id, event, context.caller.id
    )


async def get_run_history(context: OperationContext, data: RunHistoryInput) -> dict[str, Any]:
    return await services_of(context.services).events.run_history(
        context.scope, data.run_id, order=data.order, limit=data.limit, cursor=data.cursor
    )


RUN_OPERATIONS = (
    Operation(
        name="run_definition",
        title="Run a definition",
        description=(
            "Runs the latest active version of a function or workflow with an input, and answers the run. Most "
            "runs finish within the call; a workflow, an interaction function that asks a person and a "
            "prediction build answer status started, and get_run shows when they end. Give a run_id (a UUID) "
            "to retry safely: a run id never runs its definition twice with a final result."
        ),
        scope="playbook",
        permissions=PLAYBOOK_WRITE,
        method="POST",
        route="/definitions/{type}/{name}/run",
        input_model=RunDefinitionInput,
        output_model=RunOutput,
        handler=run_definition,
        hints=Hints(read_only=False, destructive=False, idempotent=False, open_world=True),
        tag="runs",
        reasons=frozenset({"not_found", "conflict", "invalid_input", "unavailable", "cancelled", "unanswered"}),
        path_enums=TYPE_ENUM,
    ),
    Operation(
        name="get_run",
        title="Read a run",
        description=(
            "Reads one run: its status, input, output or rejection, and its detailed record. Use it to see "
            "whether a run that answered started has ended. list_runs finds the ids of a playbook's runs."
        ),
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="GET",
        route="/runs/{run_id}",
        input_model=RunInPath,
        output_model=RunOutput,
        handler=get_run,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="runs",
        reasons=frozenset({"not_found"}),
    ),
    Operation(
        name="list_runs",
        title="List runs",
        description=(
            "Lists the playbook's runs, newest first, a page at a time, without their outputs and records. "
            "Keep one definition's runs with type and name, or one status with status. Use get_run to read "
            "one run whole."
        ),
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="GET",
        route="/runs",
        input_model=ListRunsInput,
        output_model=RunListOutput,
        handler=list_runs,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="runs",
        reasons=frozenset({"invalid_input"}),
    ),
    Operation(
        name="cancel_run",
        title="Cancel a run",
        description=(
            "Asks a run that waits to stop: a workflow run still started, an interaction function's request, or a "
            "prediction build. It answers the run as it stands, still started; get_run shows it end, rejected as "
            "cancelled. Runs that finish within the request that started them cannot be cancelled. This cannot "
            "be undone, so confirm with the person first."
        ),
        scope="playbook",
        permissions=PLAYBOOK_WRITE,
        method="POST",
        route="/runs/{run_id}/cancel",
        input_model=CancelRunInput,
        output_model=RunOutput,
        handler=cancel_run,
        hints=Hints(read_only=False, destructive=True, idempotent=True, open_world=False),
        tag="runs",
        reasons=frozenset({"not_found", "conflict", "invalid_input", "unavailable"}),
    ),
    Operation(
        name="send_run_event",
        title="Send an event to a run",
        description=(
            "Delivers an event to a workflow run that is still started, for its listen tasks; an event no listen "
            "takes waits in the run's inbox. Give the event an id to send it again safely: a run takes an id once. "
            "It answers the delivered event with its id, source and time filled in."
        ),
        scope="playbook",
        permissions=PLAYBOOK_WRITE,
        method="POST",
        route="/runs/{run_id}/events",
        input_model=SendRunEventInput,
        output_model=SentEventOutput,
        handler=send_run_event,
        hints=Hints(read_only=False, destructive=False, idempotent=False, open_world=False),
        tag="runs",
        reasons=frozenset({"not_found", "invalid_input", "unavailable"}),
    ),
    Operation(
        name="get_run_history",
        title="Read a run's history",
        description="Reads the events one run recorded, oldest first unless order is desc, a page at a time.",
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="GET",
        route="/runs/{run_id}/history",
        input_model=RunHistoryInput,
        output_model=EventListOutput,
        handler=get_run_history,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="runs",
        reasons=frozenset({"not_found", "invalid_input"}),
        has_tool=False,
        links={"get_event": READ_ONE_EVENT},
    ),
)
