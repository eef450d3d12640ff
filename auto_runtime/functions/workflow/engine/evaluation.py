"""The engine's view of expressions: places to evaluate, and the evaluator it is given for one input.

The engine core never runs an expression itself: it hands each place (one condition, one shaping
expression, or every expression of one template, in order) to an `Evaluator`, so the core stays pure. A
real evaluator serves one input with one sandbox instance (spec 4.5); `Failed` is an expression that raised
(`expression` 400) or passed a bound of the sandbox (`runtime` 500).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from auto_runtime.functions.workflow.expressions import condition_expression, wrapped_expression

EXPRESSION_FAILED = "An expression failed"
PASSED_A_BOUND = "An expression passed a bound of the sandbox"


@dataclass(frozen=True)
class Place:
    """Expressions evaluated together with the same variables; `condition` asks for truth values."""

    expressions: tuple[str, ...]
    variables: Mapping[str, Any]
    condition: bool = False


@dataclass(frozen=True)
class Failed:
    """The first expression of a place that raised or passed a bound: `short` is `expression` or `runtime`."""

    short: str
    status: int
    title: str
    detail: str


class Evaluator(Protocol):
    """Evaluates the places of one input, in the order asked; answers each expression's JSON value.

    `wants_yield` says the input passed its soft bounds (500,000,000 units of work or 4 MiB of values read):
    the engine then yields between tasks, continuing in a new input with a fresh instance.
    """

    def evaluate(self, place: Place) -> list[Any] | Failed: ...

    def wants_yield(self) -> bool: ...


def template_expressions(value: Any) -> list[str]:
    """The expressions of a template, in the order its values are written."""
    found: list[str] = []
    text = wrapped_expression(value)
    if text is not None:
        found.append(text)
    elif isinstance(value, dict):
        for item in value.values():
            found.extend(template_expressions(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(template_expressions(item))
    return found


def fill_template(value: Any, answers: list[Any]) -> Any:
    """The template with its expressions replaced, in order, by `answers` (consumed from the front)."""
    if wrapped_expression(value) is not None:
        return answers.pop(0)
    if isinstance(value, dict):
        return {key: fill_template(item, answers) for key, item in value.items()}
    if isinstance(value, list):
        return [fill_template(item, answers) for item in value]
    return value


def evaluate_template(evaluator: Evaluator, value: Any, variables: Mapping[str, Any]) -> Any | Failed:
    expressions = template_expressions(value)
    if not expressions:
        return value
    answers = evaluator.evaluate(Place(tuple(expressions), variables))
    if isinstance(answers, Failed):
        return answers
    return fill_template(value, list(answers))


def evaluate_shaping(evaluator: Evaluator, value: Any, variables: Mapping[str, Any]) -> Any | Failed:
    """`input.from`, `output.as`, `export.as`: a string is an expression with or without `${ }`."""
    if isinstance(value, str):
        answers = evaluator.evaluate(Place((condition_expression(value),), variables))
        return answers if isinstance(answers, Failed) else answers[0]
    return evaluate_template(evaluator, value, variables)


def evaluate_condition(evaluator: Evaluator, value: str, variables: Mapping[str, Any]) -> bool | Failed:
    answers = evaluator.evaluate(Place((condition_expression(value),), variables, condition=True))
    return answers if isinstance(answers, Failed) else bool(answers[0])
