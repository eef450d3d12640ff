"""The definition operations, one set for every type (`/definitions/{type}`), as the seeds' tables list them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from auto_runtime.auth.caller import Permission
from auto_runtime.functions.function_type import DEFINITION_TYPES
from auto_runtime.functions.prediction.standing import standing as prediction_standing
from auto_runtime.functions.recall.standing import view_standing
from auto_runtime.operations.fields import ID_PATTERN
from auto_runtime.operations.operation import Hints, Operation, OperationContext
from auto_runtime.operations.services import services_of

DefinitionTypeField = Literal["reasoning", "interaction", "computation", "recall", "prediction", "workflow"]
TYPE_DESCRIPTION = "The type of the definition"
NAME_DESCRIPTION = "The name of the definition: 3 to 48 lowercase letters, digits and hyphens, beginning with a letter"
SOURCE_DESCRIPTION = "The definition's document, in the format its type's guide gives; at most 65,536 UTF-8 bytes"
PLAYBOOK_READ = frozenset({Permission.PLAYBOOK_READ})
PLAYBOOK_WRITE = frozenset({Permission.PLAYBOOK_WRITE})
TYPE_ENUM = {"type": DEFINITION_TYPES}


class DefinitionOutput(BaseModel):
    type: str
    name: str
    version: int
    status: Literal["active", "retired"]
    media_type: str
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    details: dict[str, Any] | None = None
    triggers: list[dict[str, Any]] | None = None
    triggers_since: str | None = None
    created_at: str
    created_by: str
    updated_at: str
    retired_at: str | None = None
    source: str | None = None
    overview: str | None = None
    standing: dict[str, Any] | None = None


class DefinitionListOutput(BaseModel):
    definitions: list[DefinitionOutput]


class CreateDefinitionInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: DefinitionTypeField = Field(description=TYPE_DESCRIPTION)
    name: str = Field(pattern=ID_PATTERN, description=NAME_DESCRIPTION)
    source: str = Field(description=SOURCE_DESCRIPTION)


class ListDefinitionsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: DefinitionTypeField = Field(description=TYPE_DESCRIPTION)
    include_retired: bool = Field(default=False, description="Whether to list retired definitions too")


class DefinitionInPath(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: DefinitionTypeField = Field(description=TYPE_DESCRIPTION)
    name: str = Field(pattern=ID_PATTERN, description=NAME_DESCRIPTION)


class UpdateDefinitionInput(DefinitionInPath):
    source: str = Field(description=SOURCE_DESCRIPTION)


async def create_definition(context: OperationContext, data: CreateDefinitionInput) -> dict[str, Any]:
    registry = services_of(context.services).definitions
    scope = context.scope
    saved = await registry.create(scope, data.type, data.name, data.source, context.caller.id)
    return await registry.shown(scope, saved, with_overview=True)


async def list_definitions(context: OperationContext, data: ListDefinitionsInput) -> dict[str, Any]:
    registry = services_of(context.services).definitions
    scope = context.scope
    versions = await registry.listed(scope, data.type, data.include_retired)
    return {"definitions": [await registry.shown(scope, v, with_overview=False) for v in versions]}


async def get_definition(context: OperationContext, data: DefinitionInPath) -> dict[str, Any]:
    services = services_of(context.services)
    registry = services.definitions
    scope = context.scope
    latest = await registry.latest(scope, data.type, data.name)
    shown = await registry.shown(scope, latest, with_overview=True)
    if latest.type == "recall" and latest.status == "active":
        shown["standing"] = await view_standing(registry.ledger, scope, latest.name, latest.version)
    if latest.type == "prediction" and services.prediction_builds is not None:
        shown["standing"] = await prediction_standing(services.prediction_builds, scope, latest.name, latest.source)
    return shown


async def update_definition(context: OperationContext, data: UpdateDefinitionInput) -> dict[str, Any]:
    registry = services_of(context.services).definitions
    scope = context.scope
    saved = await registry.update(scope, data.type, data.name, data.source, context.caller.id)
    return await registry.shown(scope, saved, with_overview=True)


async def retire_definition(context: OperationContext, data: DefinitionInPath) -> dict[str, Any]:
    registry = services_of(context.services).definitions
    scope = context.scope
    retired = await registry.retire(scope, data.type, data.name, context.caller.id)
    return await registry.shown(scope, retired, with_overview=True)


DEFINITION_OPERATIONS = (
    Operation(
        name="create_definition",
        title="Create a definition",
        description=(
            "Saves a new function or workflow in the playbook: a reasoning, interaction, computation, recall, "
            "prediction or workflow definition, from a document in its type's format (read it with get_guide "
            "first). The document is checked when saved, and every problem is refused with its line. A name "
            "is unique within its type and never reused, even after retirement. Use update_definition to "
            "change one that exists."
        ),
        scope="playbook",
        permissions=PLAYBOOK_WRITE,
        method="POST",
        route="/definitions/{type}",
        input_model=CreateDefinitionInput,
        output_model=DefinitionOutput,
        handler=create_definition,
        hints=Hints(read_only=False, destructive=False, idempotent=False, open_world=False),
        tag="definitions",
        reasons=frozenset({"conflict", "invalid_input", "unavailable"}),
        success_status=201,
        path_enums=TYPE_ENUM,
    ),
    Operation(
        name="list_definitions",
        title="List definitions",
        description=(
            "Lists the definitions of one type in the playbook with their versions, descriptions and schemas, "
            "without their documents. Retired ones are left out unless include_retired is true. Use "
            "get_definition to read one whole."
        ),
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="GET",
        route="/definitions/{type}",
        input_model=ListDefinitionsInput,
        output_model=DefinitionListOutput,
        handler=list_definitions,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="definitions",
        path_enums=TYPE_ENUM,
    ),
    Operation(
        name="get_definition",
        title="Read a definition",
        description=(
            "Reads one definition whole: its latest version's document, schemas and an overview in plain "
            "words that ends with what in the playbook uses it. Read it before changing a definition, and "
            "show the person its overview rather than its document. list_definitions finds the names of a type."
        ),
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="GET",
        route="/definitions/{type}/{name}",
        input_model=DefinitionInPath,
        output_model=DefinitionOutput,
        handler=get_definition,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="definitions",
        reasons=frozenset({"not_found"}),
        path_enums=TYPE_ENUM,
    ),
    Operation(
        name="update_definition",
        title="Change a definition",
        description=(
            "Saves a new version of a definition from a changed document, checked as create_definition checks "
            "it. Runs use the latest version from then on. The same document again records nothing. A retired "
            "definition cannot change."
        ),
        scope="playbook",
        permissions=PLAYBOOK_WRITE,
        method="PUT",
        route="/definitions/{type}/{name}",
        input_model=UpdateDefinitionInput,
        output_model=DefinitionOutput,
        handler=update_definition,
        hints=Hints(read_only=False, destructive=False, idempotent=True, open_world=False),
        tag="definitions",
        reasons=frozenset({"not_found", "conflict", "invalid_input", "unavailable"}),
        path_enums=TYPE_ENUM,
    ),
    Operation(
        name="retire_definition",
        title="Retire a definition",
        description=(
            "Retires a definition for good: it stays readable with its runs, but cannot change or run again, "
            "and its name is never reused. This cannot be undone, so confirm with the person first. To change what a "
            "definition does instead, use update_definition."
        ),
        scope="playbook",
        permissions=PLAYBOOK_WRITE,
        method="POST",
        route="/definitions/{type}/{name}/retire",
        input_model=DefinitionInPath,
        output_model=DefinitionOutput,
        handler=retire_definition,
        hints=Hints(read_only=False, destructive=True, idempotent=True, open_world=False),
        tag="definitions",
        reasons=frozenset({"not_found", "conflict"}),
        path_enums=TYPE_ENUM,
    ),
)
