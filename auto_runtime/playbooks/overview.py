"""Overviews: Markdown a person reads instead of a definition's document.

A type writes the body when a version is saved (`schema_table` helps with the fields); the **Used by** part is
added each time the definition is returned, from the playbook's active definitions as they stand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _type_words(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind is None and "enum" in schema:
        return "one of " + ", ".join(f"`{v}`" for v in schema["enum"])
    return str(kind) if kind is not None else "any value"


def schema_table(schema: Mapping[str, Any] | None) -> str:
    """A table of an object schema's fields, or one line for any other schema."""
    if not schema:
        return "Any JSON value.\n"
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, Mapping) or not properties:
        description = schema.get("description")
        return f"A {_type_words(schema)}{': ' + str(description) if description else ''}.\n"
    required = set(schema.get("required", []))
    lines = ["| Field | Type | Required | Meaning |", "| --- | --- | --- | --- |"]
    for name, field in properties.items():
        field_schema = field if isinstance(field, Mapping) else {}
        lines.append(
            f"| `{_cell(str(name))}` | {_cell(_type_words(field_schema))} | {'yes' if name in required else 'no'} "
            f"| {_cell(str(field_schema.get('description', '')))} |"
        )
    return "\n".join(lines) + "\n"


def used_by_section(users: Sequence[tuple[str, str, str]]) -> str:
    """`**Used by**` with one line per (type, name, how); empty when nothing uses the definition."""
    if not users:
        return ""
    lines = [f"- the {kind} `{name}`, which {how}" for kind, name, how in users]
    return "\n\n**Used by**\n\n" + "\n".join(lines) + "\n"
