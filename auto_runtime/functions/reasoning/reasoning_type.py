"""The reasoning type as the generic layer sees it: documents parsed at save, runs that call a model.

A document is parsed on a worker thread, at save and when a run finds it in no cache (the playbook actors' one
cache, `playbooks.definition_documents`, keeps what `parse` answers): a 64 KiB document with
its front matter, schemas and template takes up to a few hundred milliseconds of Python, which the event loop
must not spend (every part of the parse is bounded, so it ends well within the check's 2 seconds)."""

from __future__ import annotations

import trio

from auto_runtime.functions.documents import reparsed, source_refusal
from auto_runtime.functions.function_type import CheckedDocument, Rejected, RunEnding, RunRequest
from auto_runtime.functions.reasoning.document import MEDIA_TYPE, ReasoningDocument, issue_lines, parse_document
from auto_runtime.functions.reasoning.overview import reasoning_overview
from auto_runtime.functions.reasoning.run import RunPlaces, run_reasoning
from auto_runtime.models import ModelDirectory
from auto_runtime.problems import Rejection
from auto_runtime.tools import ToolServers


def refusal(source: str) -> Rejection | ReasoningDocument:
    parsed = parse_document(source)
    return parsed if not isinstance(parsed, list) else source_refusal(issue_lines(parsed))


class ReasoningType:
    name = "reasoning"

    def __init__(self, models: ModelDirectory, tools: ToolServers | None, max_input_tokens: int) -> None:
        self.places = RunPlaces(models=models, tools=tools, max_input_tokens=max_input_tokens)

    async def check(self, source: str) -> CheckedDocument:
        document = await trio.to_thread.run_sync(refusal, source)
        if isinstance(document, Rejection):
            raise document
        return CheckedDocument(
            media_type=MEDIA_TYPE,
            description=document.description,
            input_schema=document.input_schema,
            output_schema=document.output_schema,
            shape=document.shape,
            overview=reasoning_overview(document),
            warnings=document.warnings,
            extra={"calls_tools": True} if document.tools else {},
        )

    async def parse(self, source: str) -> ReasoningDocument | Rejection:
        return await reparsed(refusal, source)

    async def run(self, request: RunRequest) -> RunEnding:
        document = request.document if request.document is not None else await self.parse(request.source)
        if isinstance(document, Rejection):
            return Rejected(document)
        return await run_reasoning(document, request, self.places)
