"""One run of a reasoning function, in the order of reasoning-format §6.

Input, defaults and schema; the prompt rendered; the model admitted without calling anything; tools opened
when the document names them; the model called (or the tool loop run); the answer checked; the record built
and fitted in the 1 MiB. Every ending of §8 is a `Succeeded` or a `Rejected` (with a record once a model call
answered).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from auto_runtime.functions.function_type import Rejected, RunEnding, RunRequest, Succeeded
from auto_runtime.functions.reasoning.answer import AnswerIssues, checked_output
from auto_runtime.functions.reasoning.document import ReasoningDocument
from auto_runtime.functions.reasoning.endings import NO_ANSWER, after_tools, invalid_answer
from auto_runtime.functions.reasoning.json_schemas import is_draft7
from auto_runtime.functions.reasoning.record import CallTally, fit_prompt, success_record
from auto_runtime.functions.reasoning.template import RenderProblem, render
from auto_runtime.functions.reasoning.tool_loop import LoopEnded, ToolLoop
from auto_runtime.models import (
    CallSettings,
    JsonOutput,
    ModelCallFailure,
    ModelDirectory,
    ModelNotOffered,
    ModelRequest,
    ProviderOptionRefused,
    ResolvedModel,
    UserTurn,
    failure_rejection,
    not_offered_rejection,
    option_rejection,
)
from auto_runtime.problems import InputIssue, Rejection, invalid_input
from auto_runtime.schema_issues import check_off_the_loop
from auto_runtime.tools import ToolNotOffered, ToolServerFailed, ToolServers, WantedTool


@dataclass(frozen=True)
class RunPlaces:
    """What a run reaches outside itself."""

    models: ModelDirectory
    tools: ToolServers | None
    max_input_tokens: int
    clock: Callable[[], float] = time.monotonic


def call_settings(document: ReasoningDocument) -> CallSettings:
    config = document.config
    return CallSettings(
        max_output_tokens=config.max_output_tokens,
        temperature=config.temperature,
        top_p=config.top_p,
        seed=config.seed,
        stop_sequences=config.stop_sequences,
        reasoning=config.reasoning,  # type: ignore[arg-type]
    )


async def _input_of(document: ReasoningDocument, value: Any) -> dict[str, Any] | Rejection:
    if not isinstance(value, dict):
        return invalid_input([InputIssue("The input: expected an object.", "/input")])
    merged = {**document.input_default, **value}
    if document.input_schema is not None:
        schema = document.input_schema
        issues = await check_off_the_loop(schema, merged, "/input", draft7=is_draft7(schema))
        if issues:
            return invalid_input(issues)
    return merged


def _admit(document: ReasoningDocument, models: ModelDirectory) -> ResolvedModel | Rejection:
    try:
        model = models.resolve(document.model)
        models.check_provider_options(document.provider_options)
    except ModelNotOffered as refusal:
        return not_offered_rejection(refusal)
    except ProviderOptionRefused as refusal:
        return option_rejection(refusal)
    return model


async def run_reasoning(document: ReasoningDocument, request: RunRequest, places: RunPlaces) -> RunEnding:
    value = await _input_of(document, request.input)
    if isinstance(value, Rejection):
        return Rejected(value)
    started = request.started_at.astimezone(UTC)
    now_text = started.strftime("%Y-%m-%dT%H:%M:%S.") + f"{started.microsecond // 1000:03d}Z"
    try:
        rendered = render(document.template, value, started.strftime("%Y-%m-%d"), now_text)
    except RenderProblem as problem:
        return Rejected(invalid_input([InputIssue(f"Line {problem.line}: {problem.words}", problem.pointer)]))
    model = _admit(document, places.models)
    if isinstance(model, Rejection):
        return Rejected(model)
    offered = []
    if document.tools:
        if places.tools is None:
            return Rejected(
                Rejection(
                    "unavailable",
                    "This server has no tool servers, so the tools the function names are not offered.",
                    kind="tool_not_offered",
                    because="tool_server_not_configured",
                )
            )
        try:
            offered = await places.tools.offered(
                request.org, request.playbook, [WantedTool(t.server, t.tool) for t in document.tools]
            )
        except ToolNotOffered as refusal:
            return Rejected(Rejection("unavailable", refusal.detail, kind="tool_not_offered", because=refusal.because))
        except ToolServerFailed as failure:
            return Rejected(
                Rejection(
                    "unavailable",
                    failure.detail,
                    kind="tool_server_failed",
                    because=failure.because,
                    retry_after=failure.retry_after,
                )
            )
    model_request = ModelRequest(
        turns=(UserTurn(rendered.message),),
        instructions=rendered.instructions,
        output=JsonOutput(document.output_schema or {}) if document.output_format == "json" else None,
        settings=call_settings(document),
        provider_options=document.provider_options,
    )
    tally = CallTally()
    loop = ToolLoop(
        document=document,
        request=request,
        places_models=places.models,
        tools=places.tools,
        offered=offered,
        model=model,
        tally=tally,
        clock=places.clock,
        max_input_tokens=places.max_input_tokens,
    )
    try:
        answer = await loop.run(model_request)
    except LoopEnded as ended:
        return Rejected(ended.rejection, tally.usage_record(places.clock()))
    except ModelCallFailure as failure:
        if failure.usage is not None:
            tally.add_usage(failure.usage, places.clock())
        return Rejected(failure_rejection(failure), tally.usage_record(places.clock()))
    now = places.clock()
    if document.output_format == "json" and answer.finish_reason == "length":
        return Rejected(
            Rejection(
                "conflict",
                "The model's JSON answer was cut at config.max_output_tokens before it ended; raise "
                "config.max_output_tokens.",
                kind="unworkable",
            ),
            tally.usage_record(now),
        )
    output = await checked_output(document, answer.text)
    if isinstance(output, AnswerIssues):
        if loop.called:
            rejection = after_tools(NO_ANSWER, "The model's answer did not fit the output.", loop.called)
        else:
            rejection = invalid_answer(output.issues)
        return Rejected(rejection, tally.usage_record(now))
    record = success_record(
        model=model,
        settings=document.config.as_record(),
        output_format=document.output_format,
        tally=tally,
        now=now,
        extra_warnings=loop.warnings,
    )
    fitted = fit_prompt(output, record, rendered.instructions, rendered.message)
    if fitted is None:
        return Rejected(
            Rejection(
                "conflict",
                "The model's answer leaves too little room for the run's record in 1 MiB; lower "
                "config.max_output_tokens.",
                kind="unworkable",
            ),
            tally.usage_record(now),
        )
    return Succeeded(output=output, record=fitted, output_shape=document.shape)
