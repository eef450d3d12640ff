"""The workflow type as the generic layer sees it: documents checked at save.

A workflow's runs finish after their request, so `RunService` hands them to the workflow runtime
(`auto_runtime.workflow_host.workflow_runtime`, through its `WaitingRuns` interface), never to `run`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from auto_runtime.functions.documents import on_a_checker
from auto_runtime.functions.function_type import CheckedDocument, RunEnding, RunRequest, Use
from auto_runtime.functions.workflow.check import check_workflow
from auto_runtime.functions.workflow.document import WorkflowDocument, check_document
from auto_runtime.functions.workflow.overview import workflow_overview
from auto_runtime.problems import Rejection, conflict
from auto_runtime.sandbox import Checkers, SandboxEngine

MEDIA_TYPE = "application/yaml"


class WorkflowType:
    """Checks workflow documents on the save-time checkers."""

    name = "workflow"

    def __init__(
        self, engine: SandboxEngine, checkers: Checkers[Any], max_duration: timedelta = timedelta(days=30)
    ) -> None:
        self.engine = engine
        self.checkers = checkers
        self.max_duration_ms = int(max_duration.total_seconds() * 1000)

    async def check(self, source: str) -> CheckedDocument:
        checked = await on_a_checker(
            check_workflow(self.checkers, self.engine, source, self.max_duration_ms), "the workflow"
        )
        extra: dict[str, Any] = {}
        if checked.triggers:
            extra["triggers"] = [trigger.as_json() for trigger in checked.triggers]
        return CheckedDocument(
            media_type=MEDIA_TYPE,
            description=checked.description,
            input_schema=checked.input_schema,
            output_schema=checked.output_schema,
            shape=checked.shape,
            overview=workflow_overview(checked),
            uses=tuple(
                Use(call.type, call.name, f"calls it in its step `{call.reference.rsplit('/', 1)[1]}`")
                for call in checked.calls
            ),
            extra=extra,
        )

    async def parse(self, source: str) -> dict[str, Any] | Rejection:
        """The document of a saved version as the engine runs it (checked when it was saved; parsed again here,
        once per version while the playbook's actor keeps it)."""
        checked = check_document(source, self.max_duration_ms)
        if not isinstance(checked, WorkflowDocument):
            return conflict(
                "The saved document of this workflow no longer passes the checks of this server (such as a schema "
                "that names an address outside itself); update it.",
                kind="unworkable",
            )
        return checked.value

    async def run(self, request: RunRequest) -> RunEnding:
        raise TypeError("a workflow run is started by the workflow runtime, not within a request")
