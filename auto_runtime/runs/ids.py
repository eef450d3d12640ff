"""Run ids: UUIDs in their canonical form, so one UUID names one run however a caller writes it.

The seeds ("Retrying under a run id"): `run_id` is a UUID and the runtime keeps one run under each id. A UUID's
hex digits may come in either case (RFC 9562 reads them case-insensitively); the runtime keeps and answers the
lower-case form, as `uuid.UUID` writes it. Every place a run id enters (an operation's input, a workflow's own
calls) passes through `canonical_run_id` before it names a stream.
"""

from __future__ import annotations

import re

RUN_ID_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
_RUN_ID = re.compile(RUN_ID_PATTERN)


def is_run_id(text: str) -> bool:
    """Whether `text` is a run id: a UUID written as 8-4-4-4-12 hex digits, in either case."""
    return _RUN_ID.fullmatch(text) is not None


def canonical_run_id(text: str) -> str:
    """The run id in lower case; any other text unchanged (it names no run, and is refused or not found)."""
    return text.lower() if is_run_id(text) else text
