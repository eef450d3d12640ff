"""Field types shared by operation inputs, with the seeds' rules as JSON Schema keywords."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from auto_runtime.problems import InputIssue, invalid_input

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
