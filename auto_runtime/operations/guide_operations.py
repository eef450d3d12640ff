"""`get_guide`: one guide's Markdown, the same text over HTTP, as an MCP tool and as a `guide://` resource."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from auto_runtime.guides import Guide
from auto_runtime.operations.operation import Hints, Operation, OperationContext
from auto_runtime.problems import InputIssue, invalid_input


def guide_operation(guides: Mapping[str, Guide]) -> Operation:
    """`get_guide`, whose input names one of `guides` (an enum of their names in its schema)."""
    names = tuple(guides)

    def known(name: str) -> str:
        if name not in guides:
            raise ValueError(f"expected one of {', '.join(names)}")
        return name

    class GuideInput(BaseModel):
        model_config = ConfigDict(extra="forbid")
        guide: Annotated[str, AfterValidator(known)] = Field(
            description="The name of the guide to read", json_schema_extra={"enum": list(names)}
        )

    async def read_guide(context: OperationContext, data: Any) -> str:
        name: str = data.guide
        guide = guides.get(name)
        if guide is None:
            raise invalid_input([InputIssue(f"guide: expected one of {', '.join(names)}.", "/guide")])
        return guide.text

    return Operation(
        name="get_guide",
        title="Read a guide",
        description=(
            "Reads one guide of this runtime as Markdown: what the product's words mean, the complete format "
            "of each definition type with examples and bounds, or a recipe for a common task. Read the format "
            "guide of a type before writing or changing a definition of it. Guides change only with a new "
            "release, so one read per conversation is enough."
        ),
        scope="global",
        permissions=frozenset(),
        method="GET",
        route="/guides/{guide}",
        input_model=GuideInput,
        output_model=None,
        handler=read_guide,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="guides",
        output_media_type="text/markdown",
        path_enums={"guide": names},
    )
