"""Checking a tool call's arguments against the tool's input schema, as `validate` and `dry_run` report it.

The result is `valid` (`true`, `false`, or `null` when the checker cannot handle the schema) and `issues`, each
the JSON Pointer of the argument at fault as `path` and what is wrong there as `message`: at most 20, then one
saying how many more there are.

The checker is the one user schemas use (`user_schemas`): nothing is fetched, patterns are RE2, every check has
a step budget. A schema it refuses (a pattern RE2 cannot run, a reference outside the schema, a loop) or a check
that runs out of steps answers `valid: null` with one issue saying why: the arguments may still be right. The
check runs on a worker thread, since a check may spend its whole step budget.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import trio
from jsonschema.exceptions import ValidationError

from auto_runtime.json_pointers import pointer_of
from auto_runtime.schema_issues import rule_of
from auto_runtime.user_schemas import DRAFT_07, TooManySteps, UnusableSchema, checked_errors, validator_for

MAX_ISSUES = 20
MAX_MESSAGE_CHARACTERS = 300
SCHEMA_NOT_READ = "The tool's input schema was not read, so the arguments were not checked."


@dataclass(frozen=True)
class ArgumentCheck:
    valid: bool | None
    issues: tuple[dict[str, str], ...]

    def as_json(self) -> dict[str, Any]:
        return {"valid": self.valid, "issues": [dict(issue) for issue in self.issues]}


def not_checked(why: str) -> ArgumentCheck:
    return ArgumentCheck(None, ({"path": "", "message": why},))


def _message(words: str) -> str:
    text = words[:1].upper() + words[1:]
    return text[:MAX_MESSAGE_CHARACTERS]


def _issues_of(error: ValidationError) -> list[dict[str, str]]:
    path = list(error.absolute_path)
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else ""
        return [{"path": pointer_of([*path, missing]) if missing else pointer_of(path), "message": "Expected a value"}]
    if error.validator == "additionalProperties" and error.validator_value is False:
        schema = error.schema if isinstance(error.schema, Mapping) else {}
        known = set(schema.get("properties", {}))
        instance = error.instance if isinstance(error.instance, Mapping) else {}
        extras = [key for key in instance if key not in known]
        if extras:
            return [{"path": pointer_of([*path, key]), "message": "Not expected"} for key in extras]
    return [{"path": pointer_of(path), "message": _message(rule_of(error))}]


def _document_order(error: ValidationError) -> list[tuple[int, int | str]]:
    """Items by their index, fields by name: the order the issues are listed in."""
    return [(0, token) if isinstance(token, int) else (1, token) for token in error.absolute_path]


def check_arguments(schema: Mapping[str, Any], arguments: Any) -> ArgumentCheck:
    """The arguments against the schema (see the module docstring); pure, and possibly slow: see `checked`."""
    draft7 = str(schema.get("$schema", "")).rstrip("#") == DRAFT_07
    try:
        validator = validator_for(dict(schema), draft7=draft7)
    except UnusableSchema as refused:
        return not_checked(f"The tool's input schema cannot be checked on this server: {refused}.")
    except Exception as broken:  # a schema that does not pass its meta-schema, or is not JSON at all
        return not_checked(f"The tool's input schema cannot be checked on this server ({type(broken).__name__}).")
    try:
        errors = checked_errors(validator, arguments)
    except TooManySteps as stopped:
        return not_checked(f"The arguments could not be checked: {stopped}.")
    issues: list[dict[str, str]] = []
    for error in sorted(errors, key=_document_order):
        issues.extend(_issues_of(error))
    if len(issues) > MAX_ISSUES:
        more = len(issues) - MAX_ISSUES
        issues = [*issues[:MAX_ISSUES], {"path": "", "message": f"{more} more issue{'' if more == 1 else 's'}"}]
    return ArgumentCheck(not issues, tuple(issues))


async def checked(schema: Mapping[str, Any], arguments: Any) -> ArgumentCheck:
    """`check_arguments` on a worker thread, so the Trio thread never spends a check's step budget."""
    return await trio.to_thread.run_sync(functools.partial(check_arguments, schema, arguments))
