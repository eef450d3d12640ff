"""What the definition types share about reading their documents: the refusals at save, a check on the sandbox's
checkers, a saved document read again for a run, and a schema as the overviews and `CheckedDocument` take it.

Each type keeps its own format; only the words and the handling the seeds give every type alike live here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import trio

from auto_runtime.problems import InputIssue, Rejection, conflict, unavailable
from auto_runtime.sandbox import CheckerUnavailable

Document = TypeVar("Document")

NO_LONGER_PARSES = "The saved document of this function no longer parses on this server; update it. "


def source_refusal(details: Sequence[str]) -> Rejection:
    """`invalid_input` with each detail an issue at `/source`: a document refused at save."""
    return Rejection(
        "invalid_input", " ".join(details), errors=tuple(InputIssue(detail, "/source") for detail in details)
    )


def no_longer_parses(detail: str) -> Rejection:
    """A run's refusal of a saved document this server no longer reads (it was saved before a rule it breaks
    held): `conflict`, `unworkable`, with why it does not parse."""
    return conflict(NO_LONGER_PARSES + detail, kind="unworkable")


async def reparsed(parse: Callable[[str], Document | Rejection], source: str) -> Document | Rejection:
    """A saved document parsed again on a worker thread (the parse of a large document takes more time than the
    event loop may spend), or `no_longer_parses` with the refusal's detail."""
    document = await trio.to_thread.run_sync(parse, source)
    if isinstance(document, Rejection):
        return no_longer_parses(document.detail)
    return document


async def on_a_checker(checking: Awaitable[Document | Rejection], what: str) -> Document:
    """The document `checking` accepted on the sandbox's checkers. Raises its refusal, or `unavailable`
    (retry after 1 s) when no checker is ready to check `what` (`the program`, `the workflow`)."""
    try:
        checked = await checking
    except CheckerUnavailable:
        raise unavailable(f"No checker is ready to check {what}; send the same request again.", retry_after=1) from None
    if isinstance(checked, Rejection):
        raise checked
    return checked


def object_schema(schema: dict[str, Any] | bool | None) -> dict[str, Any] | None:
    """A document's schema as a `CheckedDocument` and an overview take it: an object, or `None` for a boolean
    schema or none."""
    return schema if isinstance(schema, dict) else None
