"""Sentences for input that does not fit its JSON Schema, in the words of the schema.

The seeds: "A sentence names the field, then its `description` and `examples`, then the rule it broke."
A nested field is named by its path (`address, then city`), an item by its place (`lines, then item 2`), a
missing field at the field that holds it (`The input: expected the field month`). Each issue carries the
JSON pointer of the field, under a base pointer such as `/input`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import trio
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from auto_runtime.json_pointers import pointer_of
from auto_runtime.problems import InputIssue, Rejection, conflict, cut_text
from auto_runtime.user_schemas import TooManySteps, UnusableSchema, checked_errors
from auto_runtime.user_schemas import validator_for as user_validator_for

MAX_ISSUES = 100
JSON_TYPE_WORDS: Mapping[str, str] = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "object": "an object",
    "array": "a list",
    "boolean": "true or false",
    "null": "null",
}


def name_of(path: Sequence[str | int], root_name: str) -> str:
    if not path:
        return root_name
    return ", then ".join(f"item {part + 1}" if isinstance(part, int) else str(part) for part in path)


def _or_list(words: Sequence[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " or " + words[-1]


def _described(name: str, schema: Any) -> str:
    text = name
    if isinstance(schema, Mapping):
        description = schema.get("description")
        if isinstance(description, str) and description.strip():
            text += ", " + description.strip().rstrip(".")
        examples = schema.get("examples")
        if isinstance(examples, list) and examples:
            text += ", such as " + _or_list([json.dumps(e, ensure_ascii=False) for e in examples[:3]])
    return text


def _plural(count: Any, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def rule_of(error: ValidationError) -> str:
    """The rule an error broke, as the words after the colon."""
    v = error.validator
    value = error.validator_value
    if v == "type":
        types = value if isinstance(value, list) else [value]
        return "expected " + _or_list([JSON_TYPE_WORDS.get(str(t), str(t)) for t in types])
    if v == "minLength":
        return "expected at least " + _plural(value, "character")
    if v == "maxLength":
        return "expected at most " + _plural(value, "character")
    if v == "minimum":
        return f"expected at least {value}"
    if v == "maximum":
        return f"expected at most {value}"
    if v == "exclusiveMinimum":
        return f"expected more than {value}"
    if v == "exclusiveMaximum":
        return f"expected less than {value}"
    if v == "minItems":
        return "expected at least " + _plural(value, "item")
    if v == "maxItems":
        return "expected at most " + _plural(value, "item")
    if v == "minProperties":
        return "expected at least " + _plural(value, "field")
    if v == "maxProperties":
        return "expected at most " + _plural(value, "field")
    if v == "uniqueItems":
        return "expected items that are all different"
    if v == "multipleOf":
        return f"expected a multiple of {value}"
    if v == "enum" and isinstance(value, list):
        return "expected one of " + _or_list([json.dumps(x, ensure_ascii=False) for x in value])
    if v == "const":
        return "expected " + json.dumps(value, ensure_ascii=False)
    if v == "pattern":
        return f"expected text matching the pattern {value}"
    if v == "format":
        return f"expected a {value}"
    if v in ("anyOf", "oneOf"):
        return "expected a value of one of the allowed forms"
    if v == "not":
        return "expected a value the schema does not allow here"
    if v == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return f"expected the field {missing}"
    return "expected " + error.message


def _extra_fields(error: ValidationError) -> list[str]:
    instance = error.instance
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    known = set(schema.get("properties", {}))
    if not isinstance(instance, Mapping):
        return []
    return [key for key in instance if key not in known]


def _document_order(error: ValidationError) -> list[tuple[int, int | str]]:
    return [(0, token) if isinstance(token, int) else (1, token) for token in error.absolute_path]


def issues_from_errors(errors: Sequence[ValidationError], base_pointer: str, root_name: str) -> list[InputIssue]:
    """One sentence per issue, in document order (array items by index), each text cut at 1,024 bytes."""
    issues: list[InputIssue] = []
    for error in sorted(errors, key=_document_order):
        path = list(error.absolute_path)
        if error.validator == "additionalProperties" and error.validator_value is False:
            for extra in _extra_fields(error):
                field_path = [*path, extra]
                issues.append(
                    InputIssue(
                        cut_text(f"{name_of(field_path, root_name)}: unexpected field."),
                        cut_text(base_pointer + pointer_of(field_path)),
                    )
                )
            continue
        subject = _described(name_of(path, root_name), error.schema)
        issues.append(InputIssue(cut_text(f"{subject}: {rule_of(error)}."), cut_text(base_pointer + pointer_of(path))))
    return issues[:MAX_ISSUES]


UNUSABLE = (
    "The {what} schema of this function cannot be used on this server, so nothing is checked against it: {why}. "
    "Save a new version of the function."
)
NOT_CHECKED = "{root}: not checked against its schema, since {why}."


def validator_for(schema: Mapping[str, Any], *, draft7: bool = False) -> Validator:
    """The validator of a user schema (see `user_schemas`): nothing fetched, RE2 patterns, a step budget."""
    return user_validator_for(schema, draft7=draft7)


def unusable(what: str, error: UnusableSchema) -> Rejection:
    """The run's ending for a schema saved before the rules of `user_schemas` held: `conflict`, `unworkable`."""
    return conflict(UNUSABLE.format(what=what, why=str(error)), kind="unworkable")


def check_against_schema(
    schema: Mapping[str, Any],
    instance: Any,
    base_pointer: str,
    root_name: str = "The input",
    *,
    draft7: bool = False,
) -> list[InputIssue]:
    """Every issue of `instance` against `schema`; an empty list when it fits.

    A check that passes the step budget of `user_schemas` ends as one issue at `base_pointer`. A schema that breaks the
    rules of `user_schemas` (saved before they held) raises `unusable(...)`, a `conflict` of kind
    `unworkable`: it is the function's fault, not the value's, and a new version mends it.
    """
    try:
        validator = validator_for(schema, draft7=draft7)
    except UnusableSchema as error:
        raise unusable("input" if root_name == "The input" else "output", error) from None
    try:
        errors = checked_errors(validator, instance)
    except TooManySteps as stopped:
        detail = NOT_CHECKED.format(root=root_name, why=stopped)
        return [InputIssue(cut_text(detail), cut_text(base_pointer))]
    return issues_from_errors(errors, base_pointer, root_name)


async def check_off_the_loop(
    schema: Mapping[str, Any],
    instance: Any,
    base_pointer: str,
    root_name: str = "The input",
    *,
    draft7: bool = False,
) -> list[InputIssue]:
    """`check_against_schema` on a worker thread: a check may spend its whole step budget (seconds of Python),
    which the event loop must not; the Trio thread keeps its share of the interpreter meanwhile."""
    check = functools.partial(check_against_schema, schema, instance, base_pointer, root_name, draft7=draft7)
    return await trio.to_thread.run_sync(check)
