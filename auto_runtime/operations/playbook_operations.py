"""The playbook operations of the seeds' "Playbooks" table."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from auto_runtime.auth.caller import Permission
from auto_runtime.operations.fields import NotOnlySpace, OrLeftOut, PlaybookId, trimmed
from auto_runtime.operations.operation import Hints, Operation, OperationContext
from auto_runtime.operations.services import services_of
from auto_runtime.problems import forbidden

NAME_RULE = "The name of the playbook, 1 to 100 characters"
DESCRIPTION_RULE = "What the playbook is for, at most 2,000 characters"
NAME_LIMIT = 100
DESCRIPTION_LIMIT = 2000


class PlaybookOutput(BaseModel):
    id: str
    name: str
    description: str
    status: Literal["active", "retired"]
    created_at: str
    created_by: str
    updated_at: str
    retired_at: str | SkipJsonSchema[None] = None


class PlaybookListOutput(BaseModel):
    playbooks: list[PlaybookOutput]


class CreatePlaybookInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    playbook: PlaybookId
    name: NotOnlySpace = Field(description=NAME_RULE)
    description: OrLeftOut[str] = Field(default=None, description=DESCRIPTION_RULE)


class ListPlaybooksInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    include_retired: bool = Field(default=False, description="Whether to list retired playbooks too")


class PlaybookInPath(BaseModel):
    model_config = ConfigDict(extra="forbid")
    playbook: PlaybookId


class UpdatePlaybookInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    playbook: PlaybookId
    name: NotOnlySpace = Field(description=NAME_RULE)
    description: str = Field(description=DESCRIPTION_RULE)


def _check_playbook_listed(context: OperationContext, playbook: str) -> None:
    if not context.caller.may_access_playbook(playbook):
        raise forbidden(f"This key may not access the playbook {playbook}.")


async def create_playbook(context: OperationContext, data: CreatePlaybookInput) -> dict[str, Any]:
    if not context.caller.may_access_playbook(data.playbook):
        raise forbidden(f"This key may create only the playbooks on its list, and {data.playbook} is not one.")
    name = trimmed(data.name, "name", least=1, most=NAME_LIMIT, label=NAME_RULE)
    description = trimmed(
        data.description or "", "description", least=0, most=DESCRIPTION_LIMIT, label=DESCRIPTION_RULE
    )
    registry = services_of(context.services).playbooks
    return await registry.create(context.org, data.playbook, name, description, context.caller.id)


async def list_playbooks(context: OperationContext, data: ListPlaybooksInput) -> dict[str, Any]:
    registry = services_of(context.services).playbooks
    playbooks = await registry.listed(context.org, data.include_retired, context.caller.playbooks)
    return {"playbooks": playbooks}


async def get_playbook(context: OperationContext, data: PlaybookInPath) -> dict[str, Any]:
    _check_playbook_listed(context, data.playbook)
    return await services_of(context.services).playbooks.get(context.org, data.playbook)


async def update_playbook(context: OperationContext, data: UpdatePlaybookInput) -> dict[str, Any]:
    _check_playbook_listed(context, data.playbook)
    name = trimmed(data.name, "name", least=1, most=NAME_LIMIT, label=NAME_RULE)
    description = trimmed(data.description, "description", least=0, most=DESCRIPTION_LIMIT, label=DESCRIPTION_RULE)
    registry = services_of(context.services).playbooks
    return await registry.update(context.org, data.playbook, name, description, context.caller.id)


async def retire_playbook(context: OperationContext, data: PlaybookInPath) -> dict[str, Any]:
    _check_playbook_listed(context, data.playbook)
    return await services_of(context.services).playbooks.retire(context.org, data.playbook, context.caller.id)


ORG_WRITE = frozenset({Permission.ORG_WRITE})

PLAYBOOK_OPERATIONS = (
    Operation(
        name="create_playbook",
        title="Create a playbook",
        description=(
            "Creates a playbook in the org: a named place that keeps functions, workflows, their runs and "
            "events. Give it an id of 3 to 48 lowercase letters, digits and hyphens, and a name. An id is never "
            "reused, even after the playbook is retired, so choose it with care. Use list_playbooks first to "
            "see whether the playbook the person means already exists."
        ),
        scope="org",
        permissions=ORG_WRITE,
        method="POST",
        route="/playbooks",
        input_model=CreatePlaybookInput,
        output_model=PlaybookOutput,
        handler=create_playbook,
        hints=Hints(read_only=False, destructive=False, idempotent=False, open_world=False),
        tag="playbooks",
        reasons=frozenset({"conflict", "forbidden", "invalid_input"}),
        success_status=201,
    ),
    Operation(
        name="list_playbooks",
        title="List playbooks",
        description=(
            "Lists the playbooks of the org that this caller may access, with their ids, names and status. "
            "Retired playbooks are left out unless include_retired is true. Use it to find the id a playbook "
            "tool needs."
        ),
        scope="org",
        permissions=frozenset({Permission.ORG_READ, Permission.PLAYBOOK_READ}),
        method="GET",
        route="/playbooks",
        input_model=ListPlaybooksInput,
        output_model=PlaybookListOutput,
        handler=list_playbooks,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="playbooks",
    ),
    Operation(
        name="get_playbook",
        title="Read a playbook",
        description="Reads one playbook of the org: its id, name, description, status and when it changed.",
        scope="org",
        permissions=frozenset({Permission.ORG_READ}),
        method="GET",
        route="/playbooks/{playbook}",
        input_model=PlaybookInPath,
        output_model=PlaybookOutput,
        handler=get_playbook,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="playbooks",
        reasons=frozenset({"not_found", "forbidden"}),
        has_tool=False,
    ),
    Operation(
        name="update_playbook",
        title="Rename or describe a playbook",
        description=(
            "Changes a playbook's name and description. Give both, even when only one changes; an update that "
            "changes nothing records nothing. A retired playbook cannot change."
        ),
        scope="org",
        permissions=ORG_WRITE,
        method="PUT",
        route="/playbooks/{playbook}",
        input_model=UpdatePlaybookInput,
        output_model=PlaybookOutput,
        handler=update_playbook,
        hints=Hints(read_only=False, destructive=False, idempotent=True, open_world=False),
        tag="playbooks",
        reasons=frozenset({"not_found", "conflict", "forbidden", "invalid_input"}),
    ),
    Operation(
        name="retire_playbook",
        title="Retire a playbook",
        description=(
            "Retires a playbook for good: it stays readable, with its definitions, runs and history, but nothing "
            "in it can change or run again, and its id is never reused. This cannot be undone, so confirm with "
            "the person first. Retiring a retired playbook changes nothing."
        ),
        scope="org",
        permissions=ORG_WRITE,
        method="POST",
        route="/playbooks/{playbook}/retire",
        input_model=PlaybookInPath,
        output_model=PlaybookOutput,
        handler=retire_playbook,
        hints=Hints(read_only=False, destructive=True, idempotent=True, open_world=False),
        tag="playbooks",
        reasons=frozenset({"not_found", "conflict", "forbidden"}),
    ),
)
