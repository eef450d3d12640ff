"""`GET /v1/status` (issue 33; not in the seeds): which partitions this server holds and which servers share the
work, for operators. HTTP only (no MCP tool); any caller holding `playbook:read`, whatever its org, or local mode.

The answer is this server's last look at the lease rows (made at most a sweep ago, at each renewal): it reads
nothing, so it stays as cheap as `/health`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from auto_runtime.auth.caller import Permission
from auto_runtime.operations.operation import Hints, Operation, OperationContext
from auto_runtime.operations.services import services_of


class StatusInput(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServerShareOutput(BaseModel):
    server: str = Field(description="A server renewing its lease on the ledger (alive)")
    partitions: int = Field(description="How many partitions it held at this server's last look")


class StatusOutput(BaseModel):
    server: str = Field(description="This server's id")
    partitions: list[int] = Field(description="The partitions this server holds, in order")
    servers: list[ServerShareOutput] = Field(description="The servers alive, this one among them, by id")


async def read_status(context: OperationContext, data: StatusInput) -> dict[str, Any]:
    partitions = services_of(context.services).workflows.loop.partitions
    return {
        "server": partitions.server_id,
        "partitions": sorted(partitions.held()),
        "servers": [{"server": share.server, "partitions": share.partitions} for share in partitions.servers],
    }


STATUS_OPERATIONS = (
    Operation(
        name="read_status",
        title="Read the server's status",
        description=(
            "This server's id, the partitions of the work it holds, and the servers sharing the ledger with how "
            "many partitions each holds."
        ),
        scope="global",
        permissions=frozenset({Permission.PLAYBOOK_READ}),
        method="GET",
        route="/status",
        input_model=StatusInput,
        output_model=StatusOutput,
        handler=read_status,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="status",
        has_tool=False,
    ),
)
