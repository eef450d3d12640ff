"""Templates of an interaction document and its typed arguments (interaction-format §1.3).

A `with` block is kept as written, each string in it replaced by an `ArgumentText`: a string that is exactly one
output tag yields its value of any JSON type, any other string renders as text. `render_arguments` fills the
block in; it raises `RenderProblem` for what the input causes and `StructureAmongText` for what the definition
causes (an object or array among text), which the run answers `conflict`, `unworkable`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auto_runtime.functions.reasoning.template import (
    Template,
    TemplateProblem,
    evaluate_output,
    is_one_output,
    parse_template,
    render_text,
)

SECRET_MARK = "${"
NO_SECRET = "Expected no ${ in a template, which never holds a secret"
MAX_ARGUMENTS_BYTES = 16 * 1024

TO_NAMES = frozenset({"input", "today", "now"})
DELIVER_NAMES = TO_NAMES | {"to", "message", "run_id", "function", "expires_at", "answer_schema"}
CONVERSATION_NAMES = frozenset({"to", "sent"})
REPLIES_NAMES = frozenset({"to", "sent", "conversation", "since"})
TELL_NAMES = frozenset({"to", "sent", "message"})


@dataclass(frozen=True)
class ArgumentText:
    """One string of a `with` block: a template, `alone` when it is one output tag (sent as its value)."""

    template: Template
    alone: bool
    reads_input: bool


def reads_input(template: Template) -> bool:
    return "input" in template.bound.analyze(include_partials=False).variables


def compile_text(
    text: str, line: int, names: frozenset[str], closed_fields: frozenset[str] | None
) -> ArgumentText | list[TemplateProblem]:
    """One template of the front matter, read with the names its place allows."""
    if SECRET_MARK in text:
        return [TemplateProblem(line, NO_SECRET)]
    parsed = parse_template(text, line, closed_fields, names=names, prompt=False)
    if isinstance(parsed, list):
        return parsed
    return ArgumentText(parsed, is_one_output(parsed), reads_input(parsed))


def render_argument_text(argument: ArgumentText, values: Mapping[str, Any]) -> Any:
    if argument.alone:
        return evaluate_output(argument.template, values)
    return render_text(argument.template, values)


def render_arguments(written: Any, values: Mapping[str, Any]) -> Any:
    """The arguments a `with` block gives with `values`: structures as written, strings rendered."""
    if isinstance(written, ArgumentText):
        return render_argument_text(written, values)
    if isinstance(written, dict):
        return {key: render_arguments(item, values) for key, item in written.items()}
    if isinstance(written, list):
        return [render_arguments(item, values) for item in written]
    return written


def arguments_read_input(written: Any) -> bool:
    if isinstance(written, ArgumentText):
        return written.reads_input
    if isinstance(written, dict):
        return any(arguments_read_input(item) for item in written.values())
    if isinstance(written, list):
        return any(arguments_read_input(item) for item in written)
    return False


class ArgumentsUnreadable(ValueError):
    """A recorded `with` block whose templates no longer compile (a request recorded by another release)."""


def compile_arguments(written: Any, names: frozenset[str]) -> Any:
    """A `with` block as written (recorded in a request), typed again for rendering; `ArgumentsUnreadable` when
    one of its templates does not compile."""
    if isinstance(written, str):
        compiled = compile_text(written, 1, names, None)
        if isinstance(compiled, list):
            raise ArgumentsUnreadable("; ".join(problem.words for problem in compiled))
        return compiled
    if isinstance(written, dict):
        return {key: compile_arguments(item, names) for key, item in written.items()}
    if isinstance(written, list):
        return [compile_arguments(item, names) for item in written]
    return written


def recorded_arguments(written: Any, names: frozenset[str], values: Mapping[str, Any]) -> Any:
    """A recorded `with` block typed again and rendered with `values` (run it on a worker thread: the templates
    are the user's); raises `ArgumentsUnreadable`, `RenderProblem` or `StructureAmongText`."""
    return render_arguments(compile_arguments(written, names), values)
