"""Decoding an operation's input: the typed model first, and the JSON Schema only to word a refusal.

An input is valid when it fits the operation's JSON Schema and the two rules below, and then the lax model
decodes it (as `5.0` to the integer `5`). Running the schema on every request costs more than the rest of the
decoding, so the model goes first, in strict mode, on an input that keeps both rules (one C-speed pass of
`json.dumps` tells): strict mode and the field types of `operations.fields` make it take nothing the schema
refuses, so what it accepts is decoded as the lax model would. Whatever it refuses takes the checked path:
the schema's issues with their pointers, then the lax model, exactly as a refusal was always worded.
`tests/operations/test_decode_agreement.py` walks every operation of the catalog with tricky inputs and shows
both paths agree. An operation whose model takes more than its schema (`SCHEMA_FIRST`) always takes the
checked path.

Two rules hold for every operation, over HTTP and MCP alike, besides its schema:
- The text rule (`auto_runtime.text_rule`): no text anywhere in the input holds a lone surrogate, JSON data
  included, and a text field (a place the schema types as a string) holds no U+0000 either. A text field's
  issue is worded with its description, as a schema issue; a lone surrogate in data by its path.
- No number is too large for a double (`1e400`, or an integer longer than the interpreter converts, which the
  body readers read as an infinity): JSON has no such number, so it could not be measured, recorded or handed
  on. The words are the computation page's, at the number's pointer; any other issue there is left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from auto_runtime.json_limits import non_finite_pointer
from auto_runtime.json_pointers import pointer_of
from auto_runtime.operations.operation import Operation
from auto_runtime.operations.schemas import input_schema_of
from auto_runtime.problems import InputIssue, invalid_input
from auto_runtime.schema_issues import MAX_ISSUES, issues_from_errors
from auto_runtime.text_rule import lone_surrogate_paths, not_unicode_issue, text_field_fault

ROOT_NAME = "The request"
TOO_LARGE_FOR_A_DOUBLE = "The input holds a number too large for a double."
SCHEMA_FIRST = frozenset({"publish_event"})
"""Operations whose model takes more than their schema: `publish_event`'s event is any object to its model,
and its hand-written schema (`publish_operations.CLOUD_EVENT_SCHEMA`) checks the attributes' types."""


def _type_and_text(
    validator: Validator, types: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """The `type` keyword, and a text the schema types as a string keeps the text rule. The issue's own
    `validator` name makes `schema_issues.rule_of` word it as `expected <message>`. The message of a wrong type
    leaves the value out: it is never shown, and the `repr` of a value nested past the recursion limit raises."""
    declared = types if isinstance(types, list) else [types]
    if not any(validator.is_type(instance, name) for name in declared):
        yield ValidationError(f"is not of type {', '.join(repr(name) for name in declared)}")
    elif "string" in declared and isinstance(instance, str) and (fault := text_field_fault(instance)) is not None:
        yield ValidationError(fault, validator="text")


def _enum(validator: Validator, enums: Any, instance: Any, schema: Mapping[str, Any]) -> Iterator[ValidationError]:
    """The `enum` keyword; a list or an object against values that are neither is refused without its `repr`,
    for the reason above."""
    if isinstance(instance, list | dict) and not any(isinstance(value, list | dict) for value in enums):
        yield ValidationError("is not one of the values allowed")
        return
    yield from Draft202012Validator.VALIDATORS["enum"](validator, enums, instance, schema)


OperationInputValidator: type[Validator] = extend(  # type: ignore[no-untyped-call]
    Draft202012Validator, {"type": _type_and_text, "enum": _enum}
)


def _issues_from_pydantic(error: PydanticValidationError) -> list[InputIssue]:
    issues = []
    for item in error.errors():
        path = [p for p in item["loc"] if isinstance(p, str | int)]
        subject = ", then ".join(str(p) for p in path) or ROOT_NAME
        message = str(item["msg"]).removeprefix("Value error, ")
        issues.append(InputIssue(f"{subject}: {message}.", pointer_of(path)))
    return issues


@cache
def _input_validator(name: str, model: type[BaseModel]) -> Validator:
    """One validator per operation, built once: requests never pay for compiling or keying the schema."""
    return OperationInputValidator(input_schema_of(name, model))


def input_issues(operation: Operation, raw: Mapping[str, Any]) -> list[InputIssue]:
    """Every issue of the raw input against the operation's schema and the two rules above."""
    validator = _input_validator(operation.name, operation.input_model)
    issues = issues_from_errors(list(validator.iter_errors(dict(raw))), "", ROOT_NAME)
    pointed = {issue.pointer for issue in issues}
    for path in lone_surrogate_paths(dict(raw)):
        if len(issues) >= MAX_ISSUES:
            break
        issue = not_unicode_issue(path, "", ROOT_NAME)
        if issue.pointer not in pointed:
            issues.append(issue)
    not_finite = non_finite_pointer(dict(raw))
    if not_finite is not None:
        issues = [issue for issue in issues if issue.pointer != not_finite]
        issues.insert(0, InputIssue(TOO_LARGE_FOR_A_DOUBLE, not_finite))
    return issues


def keeps_both_rules(raw: Mapping[str, Any]) -> bool:
    """Whether every text of `raw` (keys included) is valid Unicode without U+0000 and every number finite:
    `json.dumps` refuses a non-finite number, the UTF-8 codec a lone surrogate, and it writes U+0000 as the
    escape `\\u0000` (text holding that escape itself takes the checked path too, which decodes it alike). False
    too for input nested past the encoder's recursion, which the checked path reads iteratively. U+0000 in JSON
    data is kept; the checked path tells a text field's from data's."""
    try:
        text = json.dumps(raw, ensure_ascii=False, allow_nan=False, check_circular=False)
        text.encode("utf-8")
    except (ValueError, RecursionError):
        return False
    return "\\u0000" not in text


def decode_input(operation: Operation, raw: Mapping[str, Any]) -> BaseModel:
    """The operation's typed input, or `invalid_input` with every issue at its JSON pointer."""
    fields = dict(raw)
    if operation.name not in SCHEMA_FIRST and keeps_both_rules(fields):
        try:
            return operation.input_model.model_validate(fields, strict=True)
        except PydanticValidationError:
            pass
    return checked_decode(operation, fields)


def checked_decode(operation: Operation, raw: Mapping[str, Any]) -> BaseModel:
    """The input checked against the schema and the two rules first, then decoded by the lax model."""
    issues = input_issues(operation, raw)
    if issues:
        raise invalid_input(issues)
    try:
        return operation.input_model.model_validate(dict(raw))
    except PydanticValidationError as error:
        raise invalid_input(_issues_from_pydantic(error)) from None
