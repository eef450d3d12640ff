"""`list_models` (seeds' "Models"; mcp.md §12): the model references this server offers a function."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from auto_runtime.auth.caller import Permission
from auto_runtime.operations.fields import OrLeftOut
from auto_runtime.operations.operation import Hints, Operation, OperationContext
from auto_runtime.operations.services import services_of

PROVIDER_PATTERN = "^[a-z][a-z0-9-]{0,31}$"


class ListModelsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provider: OrLeftOut[Annotated[str, Field(pattern=PROVIDER_PATTERN)]] = Field(
        default=None,
        description=(
            "Only the models of one provider prefix or gateway name: 1 to 32 lowercase letters, digits or "
            "hyphens, starting with a letter"
        ),
        examples=["anthropic"],
    )


class ModelEntryOutput(BaseModel):
    id: str = Field(description="What a definition puts in model: provider/model id, or an alias")
    object: Literal["model"]
    created: int = Field(description="The provider's release time in seconds since 1970; 0 when unknown")
    owned_by: str = Field(description="The prefix of the provider that runs the model")
    name: str | SkipJsonSchema[None] = None
    context_window: int | SkipJsonSchema[None] = None
    max_tokens: int | SkipJsonSchema[None] = None
    resolved_to: str | SkipJsonSchema[None] = Field(default=None, description="Aliases only: what it resolves to")
    pattern: bool | SkipJsonSchema[None] = Field(
        default=None, description="true for an id ending in *, which a definition completes with a model id"
    )


class ModelListOutput(BaseModel):
    object: Literal["list"]
    data: list[ModelEntryOutput]
    catalog_status: Literal["complete", "partial"]
    listed_at: str


async def list_models(context: OperationContext, data: ListModelsInput) -> dict[str, Any]:
    models = services_of(context.services).models
    if models is None:
        raise RuntimeError("the runtime's services were composed without the model directory")
    return (await models.list_models(data.provider)).as_json()


MODEL_OPERATIONS = (
    Operation(
        name="list_models",
        title="List models",
        description=(
            "Lists the model references a reasoning function may name in its model field on this server, "
            "such as anthropic/claude-sonnet-4-5 or an alias the operator set up. An id ending in * is a "
            "prefix: write any model id of that provider in place of the *. catalog_status partial means a "
            "provider's list could not be read just now. Give provider to list one provider's models only."
        ),
        scope="org",
        permissions=frozenset({Permission.ORG_READ}),
        method="GET",
        route="/models",
        input_model=ListModelsInput,
        output_model=ModelListOutput,
        handler=list_models,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=True),
        tag="models",
    ),
)
