"""Field types shared by operation inputs, with the seeds' rules as JSON Schema keywords.

An input model takes exactly what its JSON Schema takes, no more (`operations.decode` lets the model alone
accept an input): these types carry the two rules pydantic would otherwise read more loosely than the schema.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic.json_schema import SkipJsonSchema

from auto_runtime.problems import InputIssue, invalid_input

T = TypeVar("T")
NOT_ONLY_SPACE = re.compile(r"\S")


def _given_not_null(value: Any) -> Any:
    if value is None:
        raise ValueError("expected a value, not null; leave the field out instead")
    return value


OrLeftOut = Annotated[T | SkipJsonSchema[None], BeforeValidator(_given_not_null)]
"""A field that may be left out (it is then `None`), but not given as `null`: its schema types it as `T` alone,
which refuses `null`, so the model refuses it too. A default is never validated, so leaving it out is fine."""


def _not_only_space(text: str) -> str:
    if NOT_ONLY_SPACE.search(text) is None:
        raise ValueError("expected text that is not only whitespace")
    return text


NotOnlySpace = Annotated[str, Field(min_length=1, pattern=NOT_ONLY_SPACE.pattern), AfterValidator(_not_only_space)]
"""Text with a character that is not white space, by the schema's pattern `\\S` as Python's `re` reads it: pydantic
matches patterns with Rust's engine, whose `\\S` also matches U+001C to U+001F, which `re` counts as white space."""

ID_PATTERN = "^[a-z][a-z0-9-]{2,47}$"

PlaybookId = Annotated[
    str,
    Field(
        pattern=ID_PATTERN,
        description="The id of the playbook: 3 to 48 lowercase letters, digits and hyphens, beginning with a letter",
        examples=["sales"],
    ),
]


def trimmed(value: str, field: str, *, least: int, most: int, label: str) -> str:
    """`value` without the whitespace around it, refused at `/field` when its length is outside the range."""
    text = value.strip()
    if len(text) < least:
        raise invalid_input([InputIssue(f"{field}, {label}: expected text that is not only whitespace.", f"/{field}")])
    if len(text) > most:
        raise invalid_input([InputIssue(f"{field}, {label}: expected at most {most} characters.", f"/{field}")])
    return text
