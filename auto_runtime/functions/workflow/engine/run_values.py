"""The run's input and output against the document's schemas (README settled point 9).

The input is checked when a run starts: a mismatch is `invalid_input` with pointers under `/input` and no run
starts (the host refuses it before the first input). The output is checked when the run ends: a mismatch
ends it `conflict`, kind `unworkable`, in the computation type's words.
"""

from __future__ import annotations

from typing import Any

from auto_runtime.functions.shapes import SHAPES
from auto_runtime.problems import InputIssue
from auto_runtime.schema_issues import check_against_schema

SCHEMA_REFUSES = "The output does not match the output schema: "


def input_issues(document: dict[str, Any], run_input: Any) -> list[InputIssue]:
    """Every issue of a run's input against `input.schema.document`; empty when it fits or there is none."""
    shaping = document.get("input")
    schema = shaping.get("schema") if isinstance(shaping, dict) else None
    written = schema.get("document") if isinstance(schema, dict) else None
    if not isinstance(written, dict):
        return []
    return check_against_schema(written, run_input, "/input", "The input")


def output_mismatch(document: dict[str, Any], output: Any) -> str | None:
    """Why the output does not fit `output.schema` or `output.shape` (its schema and rules), else None."""
    shaping = document.get("output")
    if not isinstance(shaping, dict):
        return None
    shape = shaping.get("shape") if isinstance(shaping.get("shape"), str) else None
    schema: Any = None
    if isinstance(shaping.get("schema"), dict):
        schema = shaping["schema"].get("document")
    elif shape in SHAPES:
        schema = SHAPES[shape].schema
    if isinstance(schema, dict):
        issues = check_against_schema(schema, output, "", "The output")
        if issues:
            return SCHEMA_REFUSES + " ".join(issue.detail for issue in issues[:3])
    if shape in SHAPES and isinstance(output, dict):
        failed = SHAPES[shape].rules(output)
        if failed is not None:
            words, pointer = failed
            return f"The output does not keep the rules of the {shape} shape: {words} at {pointer}"
    return None
