"""`get_playbook_analytics`: what a playbook's runs did over a window of days (seeds, "Analytics"). HTTP only."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from auto_runtime.operations.definition_operations import PLAYBOOK_READ, DefinitionTypeField
from auto_runtime.operations.fields import OrLeftOut
from auto_runtime.operations.operation import Hints, Operation, OperationContext
from auto_runtime.operations.services import services_of
from auto_runtime.playbooks.analytics import WINDOW_DAYS

DAY_DESCRIPTION = "as YYYY-MM-DD, a day that exists in the calendar"


class AnalyticsInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    days: OrLeftOut[int] = Field(
        default=None,
        description="The last days, ending today (UTC): 7, 14 or 30; 7 when nothing is given",
    )
    from_: OrLeftOut[str] = Field(
        default=None,
        alias="from",
        description=f"The first day of the window, {DAY_DESCRIPTION}; give it with to, and not with days",
        examples=["2026-09-01"],
        json_schema_extra={"format": "date"},
    )
    to: OrLeftOut[str] = Field(
        default=None,
        description=(
            f"The last day of the window, {DAY_DESCRIPTION}, not before from and not after today (UTC); "
            "at most 366 days from from"
        ),
        examples=["2026-09-30"],
        json_schema_extra={"format": "date"},
    )
    type: OrLeftOut[DefinitionTypeField] = Field(default=None, description="Keep the runs of one type")
    name: OrLeftOut[str] = Field(default=None, description="Keep the runs of definitions of one name")


class RunCounts(BaseModel):
    total: int
    succeeded: int
    failed: int
    rejected: int


class TokenCounts(BaseModel):
    input: int
    output: int
    cached: int


class Durations(BaseModel):
    p50: int
    p95: int


class DayAnalytics(BaseModel):
    day: str
    runs: RunCounts
    tokens: TokenCounts
    duration_ms: Durations | None


class FunctionRuns(BaseModel):
    type: str
    name: str
    runs: int


class AnalyticsOutput(BaseModel):
    days: int
    runs: RunCounts
    tokens: TokenCounts
    duration_ms: Durations | None
    by_day: list[DayAnalytics]
    by_function: list[FunctionRuns]


async def get_playbook_analytics(context: OperationContext, data: AnalyticsInput) -> dict[str, Any]:
    return await services_of(context.services).analytics.analytics(
        context.scope,
        days=data.days,
        first=data.from_,
        last=data.to,
        definition_type=data.type,
        name=data.name,
    )


ANALYTICS_OPERATIONS = (
    Operation(
        name="get_playbook_analytics",
        title="Read the playbook's analytics",
        description=(
            "Returns what the playbook's runs did over a window of days in UTC: the runs that ended by how they "
            "ended, the tokens their models used, the median and 95th percentile of their durations, the same "
            "for each day of the window, and the runs of each definition. The window is the last 7, 14 or 30 "
            "days, or the days from and to name; type and name keep the runs of one definition."
        ),
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="GET",
        route="/analytics",
        input_model=AnalyticsInput,
        output_model=AnalyticsOutput,
        handler=get_playbook_analytics,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="analytics",
        reasons=frozenset({"invalid_input"}),
        has_tool=False,
        openapi_keywords={"days": {"enum": list(WINDOW_DAYS)}},
    ),
)
