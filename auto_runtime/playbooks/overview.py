"""The **Used by** part of an overview, added each time a definition is returned, from the playbook's active
definitions as they stand (a type writes the rest when a version is saved; see `functions.overview`)."""

from __future__ import annotations

from collections.abc import Sequence


def used_by_section(users: Sequence[tuple[str, str, str]]) -> str:
    """`**Used by**` with one line per (type, name, how); empty when nothing uses the definition."""
    if not users:
        return ""
    lines = [f"- the {kind} `{name}`, which {how}" for kind, name, how in users]
    return "\n\n**Used by**\n\n" + "\n".join(lines) + "\n"
