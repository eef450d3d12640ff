"""`WorkflowType.check`: what a saved workflow shows, the sandbox's compile pass, and the 2-second rule."""

from __future__ import annotations

from typing import Any

import pytest

from auto_runtime.functions.function_type import Use
from auto_runtime.functions.workflow.check import CHECK_TIMED_OUT, _compile_issue, expressions_program
from auto_runtime.functions.workflow.document import WorkflowDocument, check_document
from auto_runtime.functions.workflow.workflow_type import WorkflowType
from auto_runtime.problems import InputIssue, Rejection
from auto_runtime.sandbox.checker import Checkers
from auto_runtime.sandbox.engine import SandboxEngine
from tests.functions.workflow.test_engine_examples import DIGEST, EXPENSE

SCHEMA_DOCUMENT = """\
document:
  dsl: '1.0.3'
  namespace: finance
  name: totals
  version: '1.0.0'
  title: Totals
  summary: Adds the lines of an invoice.
input:
  schema:
    document: { type: object, properties: { lines: { type: array } }, required: [lines] }
output:
  schema:
    document: { type: object, properties: { total: { type: integer } } }
do:
  - total: { set: '${ {"total": sum(data["lines"])} }' }
"""


async def _check(engine: SandboxEngine, source: str, seconds: float = 2.0) -> Any:
    checkers: Checkers[Any] = Checkers(seconds=seconds)
    try:
        return await WorkflowType(engine, checkers).check(source)
    except Rejection as rejection:
        return rejection
    finally:
        checkers.close()


async def test_a_saved_workflow_shows_its_description_schemas_and_overview(engine: SandboxEngine) -> None:
    checked = await _check(engine, SCHEMA_DOCUMENT)
    assert checked.media_type == "application/yaml"
    assert checked.description == "Adds the lines of an invoice."
    assert checked.input_schema == {
        "type": "object",
        "properties": {"lines": {"type": "array"}},
        "required": ["lines"],
    }
    assert checked.output_schema == {"type": "object", "properties": {"total": {"type": "integer"}}}
    assert checked.shape is None
    assert checked.extra == {}
    assert "- `total` sets the data" in checked.overview


async def test_calls_are_uses_and_schedules_are_triggers(engine: SandboxEngine) -> None:
    checked = await _check(engine, EXPENSE)
    assert checked.uses == (
        Use("reasoning", "classify-expense", "calls it in its step `classify`"),
        Use("interaction", "approve-expense", "calls it in its step `ask-manager`"),
    )
    assert checked.description is None
    digest = await _check(engine, DIGEST)
    assert [t["kind"] for t in digest.extra["triggers"]] == ["event", "cron"]
    assert "- `regions` repeats its steps for each item" in digest.overview
    assert "  - `read` calls the recall function `region-balances`" in digest.overview


async def test_the_title_describes_a_document_without_summary(engine: SandboxEngine) -> None:
    checked = await _check(engine, SCHEMA_DOCUMENT.replace("  summary: Adds the lines of an invoice.\n", ""))
    assert checked.description == "Totals"


async def test_a_shape_gives_the_output_schema(engine: SandboxEngine) -> None:
    source = SCHEMA_DOCUMENT.replace(
        "output:\n  schema:\n    document: { type: object, properties: { total: { type: integer } } }\n",
        "output: { shape: series }\n",
    )
    checked = await _check(engine, source)
    assert checked.shape == "series"
    assert checked.output_schema is not None and checked.output_schema["title"] == "series"


async def test_a_refused_document_is_invalid_input_at_source(engine: SandboxEngine) -> None:
    refused = await _check(engine, SCHEMA_DOCUMENT.replace("sum(data", "sum($data"))
    assert isinstance(refused, Rejection) and refused.reason == "invalid_input"
    assert refused.errors == (
        InputIssue(
            "Line 15, column 19: at /do/0/total/set: Variables are plain Python names: write data, not $data", "/source"
        ),
    )


async def test_a_check_past_its_time_is_one_entry_without_a_line(engine: SandboxEngine) -> None:
    refused = await _check(engine, SCHEMA_DOCUMENT, seconds=0.0)
    assert isinstance(refused, Rejection) and refused.reason == "invalid_input"
    assert refused.errors == (InputIssue(CHECK_TIMED_OUT, "/source"),)


def test_the_compile_pass_maps_its_line_back_to_the_expression() -> None:
    source = (
        "document: { dsl: '1.0.3', namespace: a, name: b, version: '1.0.0' }\n"
        "do:\n  - a:\n      set:\n        x: '${ 1 }'\n        y: |-\n          ${ data\n          + 2 }\n"
    )
    document = check_document(source, 10**10)
    assert isinstance(document, WorkflowDocument)
    program, starts = expressions_program(document.expressions)
    assert program.split("\n")[starts[1] - 1 : starts[1] + 1] == ["data", "+ 2"]
    issue = _compile_issue(document, starts[1] + 1, "invalid syntax", starts)
    assert issue.detail() == (
        "Line 6, column 12: at /do/0/a/set/y: The sandbox's Python cannot read this expression: invalid syntax "
        "(line 2 of the expression)"
    )


@pytest.mark.parametrize("expression", ["1 +", "[*data]"])
def test_the_sandbox_compiles_every_expression_of_a_good_document(engine: SandboxEngine, expression: str) -> None:
    from auto_runtime.sandbox.checker import compile_pass
    from auto_runtime.sandbox.interruption import RunControl

    program = "def _expression_0():\n    return (\n" + expression + "\n)\n"
    problem = compile_pass(engine, program, 1, RunControl(10**9))
    assert problem is not None and problem[0] in (3, 4)
