"""The interaction type as the generic layer sees it: documents checked at save; a call run within its request.

A document is parsed on a worker thread, at save and when a run finds it in no cache, as reasoning documents are.
A function with `call` runs here, within its request (`run_call`); a request (`to`) is started, kept and ended by
the interaction runtime (`interaction_host`), which `RunService` hands it to: its saved document says
`finishes_in_request: false` and a call's `true`.
"""

from __future__ import annotations

import trio

from auto_runtime.functions.documents import reparsed, source_refusal
from auto_runtime.functions.function_type import CheckedDocument, Rejected, RunEnding, RunRequest
from auto_runtime.functions.interaction.call_run import run_call
from auto_runtime.functions.interaction.document import MEDIA_TYPE, InteractionDocument, issue_lines, parse_document
from auto_runtime.functions.interaction.overview import interaction_overview
from auto_runtime.problems import Rejection
from auto_runtime.tools import ToolServers


def refusal(source: str) -> Rejection | InteractionDocument:
    parsed = parse_document(source)
    return parsed if not isinstance(parsed, list) else source_refusal(issue_lines(parsed))


class InteractionType:
    name = "interaction"

    def __init__(self, tools: ToolServers | None) -> None:
        self.tools = tools

    async def check(self, source: str) -> CheckedDocument:
        document = await trio.to_thread.run_sync(refusal, source)
        if isinstance(document, Rejection):
            raise document
        extra: dict[str, object] = {
            "finishes_in_request": document.call is not None,
            "longest_run_ms": document.longest_run_ms,
        }
        if document.call is not None:
            extra["calls_tools"] = True
        return CheckedDocument(
            media_type=MEDIA_TYPE,
            description=document.description,
            input_schema=document.input_schema,
            output_schema=document.output_schema,
            shape=None,
            overview=interaction_overview(document),
            extra=extra,
        )

    async def parse(self, source: str) -> InteractionDocument | Rejection:
        return await reparsed(refusal, source)

    async def run(self, request: RunRequest) -> RunEnding:
        """A call's run. A request's run never comes here: the interaction runtime starts it."""
        document = request.document if request.document is not None else await self.parse(request.source)
        if isinstance(document, Rejection):
            return Rejected(document)
        if document.call is None:
            raise RuntimeError("a request of an interaction function is started by the interaction runtime")
        return await run_call(document, request, self.tools)
