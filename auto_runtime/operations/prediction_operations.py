"""The operations of prediction functions served over HTTP only (seeds, "Prediction functions"): for now
`upload_dataset`, `PUT /datasets/{sha256}`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from auto_runtime.auth.caller import Permission
from auto_runtime.functions.prediction.datasets import MAX_DATASET_BYTES
from auto_runtime.operations.operation import Hints, Operation, OperationContext
from auto_runtime.operations.services import services_of

PLAYBOOK_WRITE = frozenset({Permission.PLAYBOOK_WRITE})


class UploadDatasetInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sha256: str = Field(
        pattern="^[0-9a-f]{64}$", description="The SHA-256 of the body, 64 lowercase hex digits: the dataset's name"
    )


class DatasetColumn(BaseModel):
    name: str
    kind: Literal["period", "series", "number"]


class DatasetOutput(BaseModel):
    dataset: str
    bytes: int
    rows: int
    series: int
    columns: list[DatasetColumn]
    period: Literal["hour", "day", "week", "month", "quarter", "year"]
    first_period: str
    last_period: str


async def upload_dataset(context: OperationContext, data: UploadDatasetInput) -> dict[str, Any]:
    assert context.body is not None
    return await services_of(context.services).datasets().upload(context.scope, data.sha256, context.body)


PREDICTION_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        name="upload_dataset",
        title="Upload a dataset",
        description=(
            "Uploads a CSV dataset for prediction functions, named by the SHA-256 of its bytes: text/csv with its "
            "Content-Length, at most 64 MiB. It answers the dataset's summary: rows, series, columns, period and "
            "the first and last period. The same bytes again answer the same summary. Served over HTTP only."
        ),
        scope="playbook",
        permissions=PLAYBOOK_WRITE,
        method="PUT",
        route="/datasets/{sha256}",
        input_model=UploadDatasetInput,
        output_model=DatasetOutput,
        handler=upload_dataset,
        hints=Hints(read_only=False, destructive=False, idempotent=True, open_world=False),
        tag="definitions",
        reasons=frozenset({"invalid_input", "content_too_large", "unavailable"}),
        has_tool=False,
        body_media_types=("text/csv",),
        max_body=MAX_DATASET_BYTES,
    ),
)
