"""JSON Schema issues in the HTTP reference's words: the field's path, its description and examples, the rule.

`The input: expected the field month`; `month, The month to report on, such as "April 2026": expected at
least 6 characters.`; a nested field as `address, then city`, an item by its place as `lines, then item 2`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator, ValidationError

from auto_runtime.functions.computation.rejection import Issue
from auto_runtime.sandbox.json_values import pointer_of
from auto_runtime.sandbox.limits import cut_text

_TYPE_WORDS = {
    "string": "text",
    "integer": "an integer",
    "number": "a number",
    "object": "an object",
    "array": "a list",
    "boolean": "true or false",
    "null": "null",
}


def _path_words(path: list[str | int], whole: str) -> str:
    if not path:
        return whole
    return ", then ".join(f"item {token + 1}" if isinstance(token, int) else token for token in path)


def _types(value: Any) -> str:
    names = value if isinstance(value, list) else [value]
    return " or ".join(_TYPE_WORDS.get(str(name), str(name)) for name in names)


def _rule(error: ValidationError) -> str:
    keyword = error.validator
    value: Any = error.validator_value
    if keyword == "required":
        named = [name for name in value if error.message == f"{name!r} is a required property"]
        return f"expected the field {named[0] if named else error.message}"
    if keyword == "type":
        return f"expected {_types(value)}"
    if keyword == "minLength":
        return f"expected at least {value} characters"
    if keyword == "maxLength":
        return f"expected at most {value} characters"
    if keyword == "minimum":
        return f"expected at least {value}"
    if keyword == "maximum":
        return f"expected at most {value}"
    if keyword == "exclusiveMinimum":
        return f"expected more than {value}"
    if keyword == "exclusiveMaximum":
        return f"expected less than {value}"
    if keyword == "minItems":
        return f"expected at least {value} items"
    if keyword == "maxItems":
        return f"expected at most {value} items"
    if keyword == "enum":
        return "expected one of " + ", ".join(json.dumps(item, ensure_ascii=False) for item in value)
    if keyword == "const":
        return "expected " + json.dumps(value, ensure_ascii=False)
    if keyword == "pattern":
        return f"expected text matching {value}"
    if keyword == "additionalProperties" and isinstance(error.instance, dict):
        known = set(error.schema.get("properties", {})) if isinstance(error.schema, dict) else set()
        extra = [name for name in error.instance if name not in known]
        return f"did not expect the field {extra[0]}" if extra else "did not expect more fields"
    return error.message


def _describe(error: ValidationError, whole: str) -> str:
    path = list(error.absolute_path)
    name = _path_words(path, whole)
    schema = error.schema if isinstance(error.schema, dict) else {}
    parts = [name]
    if error.validator != "required":
        if isinstance(schema.get("description"), str):
            parts.append(schema["description"])
        examples = schema.get("examples")
        if isinstance(examples, list) and examples:
            parts.append("such as " + " or ".join(json.dumps(item, ensure_ascii=False) for item in examples))
    return ", ".join(parts) + ": " + _rule(error) + "."


def _document_order(error: ValidationError) -> list[tuple[int, int | str]]:
    return [(0, token) if isinstance(token, int) else (1, token) for token in error.absolute_path]


def schema_issues(schema: dict[str, Any], value: Any, whole: str, root: str) -> Iterator[Issue]:
    """The issues of `value` against `schema`, in document order; `whole` names the top (`The input`)."""
    validator = Draft202012Validator(schema)
    for error in sorted(validator.iter_errors(value), key=_document_order):
        pointer = root + pointer_of(list(error.absolute_path))
        yield Issue(detail=cut_text(_describe(error, whole)), pointer=cut_text(pointer))
