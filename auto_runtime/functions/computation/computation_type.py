"""The computation type as the generic layer sees it: documents checked on a checker, runs on the sandbox pool."""

from __future__ import annotations

from typing import Any

from auto_runtime.functions.computation.check import check_document
from auto_runtime.functions.computation.document import ComputationDocument, as_saved, parse_document
from auto_runtime.functions.computation.run import Succeeded as ComputationSucceeded
from auto_runtime.functions.computation.run import describe, run_computation
from auto_runtime.functions.documents import object_schema, on_a_checker
from auto_runtime.functions.function_type import CheckedDocument, Rejected, RunEnding, RunRequest, Succeeded
from auto_runtime.functions.overview import schema_table
from auto_runtime.problems import Rejection
from auto_runtime.sandbox import Checkers, SandboxEngine, SandboxPool
from auto_runtime.sandbox.fair_queue import JobOwner


class SandboxBroke(RuntimeError):
    """The sandbox itself failed on a run: the run ends `failed`, with an incident reference."""


def computation_overview(document: ComputationDocument) -> str:
    shape = f"It answers the `{document.shape}` output shape.\n\n" if document.shape else ""
    return (
        f"{document.description or 'A computation function.'}\n\n"
        "## What it needs\n\n"
        f"{schema_table(object_schema(document.input_schema))}\n"
        "## What it produces\n\n"
        f"{shape}{schema_table(object_schema(document.output_schema))}\n"
        "## What it does\n\n"
        "It runs a Python program in the sandbox: the same input always gives the same output, and nothing "
        "outside the playbook is touched, so running it again is always safe.\n"
    )


class ComputationType:
    """Checks on the two checkers of their own; runs on the pool of `COMPUTATION_WORKERS` workers."""

    name = "computation"

    def __init__(self, engine: SandboxEngine, pool: SandboxPool, checkers: Checkers[Any]) -> None:
        self.engine = engine
        self.pool = pool
        self.checkers = checkers

    async def check(self, source: str) -> CheckedDocument:
        checked = await on_a_checker(check_document(self.checkers, self.engine, source), "the program")
        described = describe(checked)
        return CheckedDocument(
            media_type=described["media_type"],
            description=checked.description,
            input_schema=object_schema(checked.input_schema),
            output_schema=object_schema(checked.output_schema),
            shape=checked.shape,
            overview=computation_overview(checked),
        )

    async def parse(self, source: str) -> ComputationDocument | Rejection:
        """The parsed document; one saved before a rule it breaks held (a schema naming an address, YAML
        aliases) ends its runs `conflict`, `unworkable`, in the words reasoning functions use."""
        return as_saved(parse_document(source))

    async def run(self, request: RunRequest) -> RunEnding:
        document = request.document if request.document is not None else await self.parse(request.source)
        if isinstance(document, Rejection):
            return Rejected(document)
        started_at_ms = int(request.started_at.timestamp() * 1000)
        result = await run_computation(
            self.pool,
            document,
            request.input,
            started_at_ms=started_at_ms,
            owner=JobOwner(request.org, request.playbook),
        )
        if isinstance(result, ComputationSucceeded):
            return Succeeded(output=result.output, record=result.record, output_shape=document.shape)
        if result.reason == "internal":
            raise SandboxBroke(result.detail)
        return Rejected(result)
