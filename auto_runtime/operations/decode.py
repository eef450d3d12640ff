"""Decoding an operation's input: JSON Schema issues with pointers first, then the typed model.

Two rules hold for every operation, over HTTP and MCP alike, besides its schema:
- A text field (a place the schema types as a string) holds valid Unicode: JSON can write a lone surrogate
  (`"\\ud800"`), UTF-8 cannot, so a source, a name or a reason holding one could not be stored or sent on.
- No number is too large for a double (`1e400`, or an integer longer than the interpreter converts, which the
  body readers read as an infinity): JSON has no such number, so it could not be measured, recorded or handed
  on. The words are the computation page's, at the number's pointer; any other issue there is left out.
"""

from __future__ import annotations

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
from auto_runtime.operations.operation import Operation
from auto_runtime.operations.schemas import input_schema_of
from auto_runtime.problems import InputIssue, invalid_input
from auto_runtime.schema_issues import issues_from_errors, pointer_of

ROOT_NAME = "The request"
NOT_UNICODE = "text that is valid Unicode, without a lone surrogate"
TOO_LARGE_FOR_A_DOUBLE = "The input holds a number too large for a double."


def is_unicode(text: str) -> bool:
    """Whether `text` can be written in UTF-8: JSON's decoder joins every proper surrogate pair, so a
    surrogate left in a decoded string is a lone one."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _type_and_unicode(
    validator: Validator, types: Any, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    """The `type` keyword, and a text the schema types as a string holds valid Unicode. The issue's own
    `validator` name makes `schema_issues.rule_of` word it as `expected <message>`."""
    yield from Draft202012Validator.VALIDATORS["type"](validator, types, instance, schema)
    declared = types if isinstance(types, list) else [types]
    if "string" in declared and isinstance(instance, str) and not is_unicode(instance):
        yield ValidationError(NOT_UNICODE, validator="unicode")


OperationInputValidator: type[Validator] = extend(  # type: ignore[no-untyped-call]
    Draft202012Validator, {"type": _type_and_unicode}
)


def _issues_from_pydantic(error: PydanticValidationError) -> list[InputIssue]:
    issues = []
    for item in error.errors():
        path = [p for p in item["loc"] if isinstance(p, str | int)]
        subject = ", then ".join(str(p) for p in path) or ROOT_NAME
        message = str(item["msg"]).removeprefix("Value error, ")
        issues.append(InputIssue(f"{subject}: {message}.", pointer_of("", path)))
    return issues


@cache
def _input_validator(name: str, model: type[BaseModel]) -> Validator:
    """One validator per operation, built once: requests never pay for compiling or keying the schema."""
    return OperationInputValidator(input_schema_of(name, model))


def input_issues(operation: Operation, raw: Mapping[str, Any]) -> list[InputIssue]:
    """Every issue of the raw input against the operation's schema and the two rules above."""
    validator = _input_validator(operation.name, operation.input_model)
    issues = issues_from_errors(list(validator.iter_errors(dict(raw))), "", ROOT_NAME)
    not_finite = non_finite_pointer(dict(raw))
    if not_finite is not None:
        issues = [issue for issue in issues if issue.pointer != not_finite]
        issues.insert(0, InputIssue(TOO_LARGE_FOR_A_DOUBLE, not_finite))
    return issues


def decode_input(operation: Operation, raw: Mapping[str, Any]) -> BaseModel:
    """The operation's typed input, or `invalid_input` with every issue at its JSON pointer."""
    issues = input_issues(operation, raw)
    if issues:
        raise invalid_input(issues)
    try:
        return operation.input_model.model_validate(dict(raw))
    except PydanticValidationError as error:
        raise invalid_input(_issues_from_pydantic(error)) from None
