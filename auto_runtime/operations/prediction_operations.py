"""The operations of prediction functions served over HTTP only (seeds, "Prediction functions"):
`upload_dataset`, `read_build_brief`, `read_build_rows`, `upload_candidate` and `activate_version`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final, Literal

import trio
from pydantic import BaseModel, ConfigDict, Field

from auto_runtime.auth.caller import Permission
from auto_runtime.functions.prediction.datasets import MAX_DATASET_BYTES
from auto_runtime.operations.fields import ID_PATTERN
from auto_runtime.operations.operation import Hints, Operation, OperationContext, RawResult
from auto_runtime.operations.run_operations import RunId
from auto_runtime.operations.services import services_of
from auto_runtime.problems import unavailable

PLAYBOOK_WRITE = frozenset({Permission.PLAYBOOK_WRITE})
PLAYBOOK_READ = frozenset({Permission.PLAYBOOK_READ})
ROWS_CHUNK: Final = 64 * 1024


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


class BuildRunInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: RunId = Field(description="The run id of the build")


async def read_build_brief(context: OperationContext, data: BuildRunInput) -> RawResult:
    builds = services_of(context.services).builds()
    await builds.waiting(context.scope, data.run_id)
    brief = await builds.brief(context.scope, data.run_id)
    if brief is None:
        raise unavailable("The build's brief is not readable at the moment; send the same request again.")
    return RawResult("text/markdown; charset=utf-8", brief)


async def _file_chunks(path: Path) -> AsyncIterator[bytes]:
    async with await trio.open_file(path, "rb") as file:
        while chunk := await file.read(ROWS_CHUNK):
            yield chunk


async def read_build_rows(context: OperationContext, data: BuildRunInput) -> RawResult:
    services = services_of(context.services)
    state = await services.builds().waiting(context.scope, data.run_id)
    assert state.assembled is not None and services.prediction_cache is not None
    digest = str(state.assembled["rows_sha256"])
    scope = context.scope
    path = await services.prediction_cache.ensure(
        "rows", digest, lambda: services.definitions.ledger.content.get(scope.key, digest)
    )
    if path is None:
        raise unavailable("The build's rows are not readable at the moment; send the same request again.")
    return RawResult("text/csv; charset=utf-8", _file_chunks(path))


BUILD_READS: tuple[Operation, ...] = (
    Operation(
        name="read_build_brief",
        title="Read a build's brief",
        description=(
            "Reads the brief of a prediction function's build that waits for its candidates, as Markdown: the "
            "forecast, the signature a candidate must have, the rows, the bar to beat and how to hand candidates "
            "over. Served over HTTP only."
        ),
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="GET",
        route="/runs/{run_id}/build/brief",
        input_model=BuildRunInput,
        output_model=None,
        handler=read_build_brief,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="runs",
        reasons=frozenset({"not_found", "conflict", "unavailable"}),
        has_tool=False,
        output_media_type="text/markdown",
    ),
    Operation(
        name="read_build_rows",
        title="Read a build's training rows",
        description=(
            "Streams the training rows of a prediction function's build that waits for its candidates, as CSV: "
            "series, origin, the history, the features and a target per horizon. Served over HTTP only."
        ),
        scope="playbook",
        permissions=PLAYBOOK_READ,
        method="GET",
        route="/runs/{run_id}/build/rows",
        input_model=BuildRunInput,
        output_model=None,
        handler=read_build_rows,
        hints=Hints(read_only=True, destructive=False, idempotent=True, open_world=False),
        tag="runs",
        reasons=frozenset({"not_found", "conflict", "unavailable"}),
        has_tool=False,
        output_media_type="text/csv",
    ),
)
PREDICTION_OPERATIONS = PREDICTION_OPERATIONS + BUILD_READS


class CandidateOutput(BaseModel):
    candidate: str
    bytes: int
    opset: int


async def upload_candidate(context: OperationContext, data: BuildRunInput) -> dict[str, Any]:
    assert context.body is not None
    candidates = services_of(context.services).candidates()
    return await candidates.upload(context.scope, data.run_id, context.body, context.caller.id)


PREDICTION_OPERATIONS = (
    *PREDICTION_OPERATIONS,
    Operation(
        name="upload_candidate",
        title="Upload a candidate model to a build",
        description=(
            "Uploads an ONNX model as a candidate of a prediction function's build that waits for its answer: "
            "application/octet-stream with its Content-Length, at most 64 MiB. It is checked (opset 13 or later, "
            "the signature the brief gives, a trial run on two rows) and answers { candidate, bytes, opset }, "
            "candidate being the SHA-256 to name in the answer. Served over HTTP only."
        ),
        scope="playbook",
        permissions=PLAYBOOK_WRITE,
        method="POST",
        route="/runs/{run_id}/build/candidates",
        input_model=BuildRunInput,
        output_model=CandidateOutput,
        handler=upload_candidate,
        hints=Hints(read_only=False, destructive=False, idempotent=True, open_world=False),
        tag="runs",
        reasons=frozenset({"not_found", "conflict", "invalid_input", "content_too_large", "unavailable"}),
        has_tool=False,
        body_media_types=("application/octet-stream",),
        max_body=67_108_864,
    ),
)


class ActivateVersionInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=ID_PATTERN, description="The name of the prediction function")
    version: int = Field(ge=1, description="The model version to activate, as the function's builds numbered it")


class ActivationOutput(BaseModel):
    function: str
    version: int
    rule: Literal["by_hand"]
    activated_at: str


async def activate_version(context: OperationContext, data: ActivateVersionInput) -> dict[str, Any]:
    activation = services_of(context.services).activation()
    return await activation.activate(context.scope, data.name, data.version, context.caller.id)


PREDICTION_OPERATIONS = (
    *PREDICTION_OPERATIONS,
    Operation(
        name="activate_version",
        title="Activate a prediction function's version",
        description=(
            "Activates a model version a prediction function built, by hand, in any state, as long as it was built "
            "for the function's current contract; the version active before is replaced. Served over HTTP only."
        ),
        scope="playbook",
        permissions=PLAYBOOK_WRITE,
        method="POST",
        route="/definitions/prediction/{name}/activate",
        input_model=ActivateVersionInput,
        output_model=ActivationOutput,
        handler=activate_version,
        hints=Hints(read_only=False, destructive=False, idempotent=False, open_world=False),
        tag="definitions",
        reasons=frozenset({"not_found", "conflict", "invalid_input"}),
        has_tool=False,
    ),
)
