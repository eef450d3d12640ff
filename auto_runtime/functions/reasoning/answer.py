"""Checking the model's final answer against the document's output (reasoning-format §2 and §8)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from auto_runtime.functions.reasoning.document import ReasoningDocument
from auto_runtime.functions.reasoning.json_schemas import is_draft7
from auto_runtime.functions.shapes import SHAPES
from auto_runtime.json_limits import depth_of
from auto_runtime.schema_issues import check_off_the_loop

MAX_ANSWER_DEPTH = 128
MAX_ISSUES = 20


@dataclass(frozen=True)
class AnswerIssues:
    """Why a JSON answer does not fit: each distinct issue once, at most 20, then how many more."""

    issues: tuple[str, ...]


async def checked_output(document: ReasoningDocument, text: str | None) -> Any | AnswerIssues:
    """The run's output from the answer's text: the text itself, or the parsed and validated JSON."""
    if document.output_format == "text":
        return text or ""
    try:
        value = json.loads(text or "")
    except ValueError:
        return AnswerIssues(("The answer is not JSON.",))
    if depth_of(value) > MAX_ANSWER_DEPTH:
        return AnswerIssues((f"The answer nests deeper than {MAX_ANSWER_DEPTH} levels.",))
    schema = document.output_schema or {}
    sentences: list[str] = []
    for issue in await check_off_the_loop(schema, value, "/output", "The answer", draft7=is_draft7(schema)):
        if issue.detail not in sentences:
            sentences.append(issue.detail)
    if not sentences and document.shape is not None:
        problem = SHAPES[document.shape].rules(value)
        if problem is not None:
            sentences.append(f"The answer at {problem[1] or '/'}: {problem[0]}.")
    if sentences:
        shown = sentences[:MAX_ISSUES]
        if len(sentences) > MAX_ISSUES:
            shown.append(f"{len(sentences) - MAX_ISSUES} more issues are not shown.")
        return AnswerIssues(tuple(shown))
    return value
