"""Decoding an operation's input: JSON Schema issues with pointers first, then the typed model."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from pydantic import BaseModel, ValidationError

from auto_runtime.operations.operation import Operation
from auto_runtime.operations.schemas import input_schema_of
from auto_runtime.problems import InputIssue, invalid_input
from auto_runtime.schema_issues import issues_from_errors, pointer_of

ROOT_NAME = "The request"


def _issues_from_pydantic(error: ValidationError) -> list[InputIssue]:
    issues = []
    for item in error.errors():
        path = [p for p in item["loc"] if isinstance(p, str | int)]
        subject = ", then ".join(str(p) for p in path) or ROOT_NAME
        message = str(item["msg"]).removeprefix("Value error, ")
        issues.append(InputIssue(f"{subject}: {message}.", pointer_of("", path)))
    return issues


@cache
def _input_validator(name: str, model: type[BaseModel]) -> Draft202012Validator:
    """One validator per operation, built once: requests never pay for compiling or keying the schema."""
    return Draft202012Validator(input_schema_of(name, model))


def decode_input(operation: Operation, raw: Mapping[str, Any]) -> BaseModel:
    """The operation's typed input, or `invalid_input` with every issue at its JSON pointer."""
    validator = _input_validator(operation.name, operation.input_model)
    issues = issues_from_errors(list(validator.iter_errors(dict(raw))), "", ROOT_NAME)
    if issues:
        raise invalid_input(issues)
    try:
        return operation.input_model.model_validate(dict(raw))
    except ValidationError as error:
        raise invalid_input(_issues_from_pydantic(error)) from None
