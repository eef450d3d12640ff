"""Rejections and their RFC 9457 problem documents, as the seeds' "Responses and errors" tables say.

A `Rejection` is raised anywhere below the transports; the HTTP layer turns it into a problem response and the
MCP layer into an `isError` tool result. Only the reasons of `PROBLEM_REASONS` and the per-kind problem types of
`KIND_PROBLEM_TYPES` exist; the table is the single source of statuses and titles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PROBLEM_BASE = "https://on.auto/problems/"


@dataclass(frozen=True)
class ProblemReason:
    """One `reason` of the seeds' problem table: its status and its title."""

    reason: str
    status: int
    title: str


PROBLEM_REASONS: Mapping[str, ProblemReason] = {
    r.reason: r
    for r in (
        ProblemReason("bad_request", 400, "Bad request"),
        ProblemReason("unauthenticated", 401, "Unauthenticated"),
        ProblemReason("forbidden", 403, "Forbidden"),
        ProblemReason("origin_not_allowed", 403, "Origin not allowed"),
        ProblemReason("not_found", 404, "Not found"),
        ProblemReason("method_not_allowed", 405, "Method not allowed"),
        ProblemReason("conflict", 409, "Conflict"),
        ProblemReason("cancelled", 409, "Cancelled"),
        ProblemReason("unanswered", 410, "Unanswered"),
        ProblemReason("length_required", 411, "Length required"),
        ProblemReason("content_too_large", 413, "Content too large"),
        ProblemReason("unsupported_media_type", 415, "Unsupported media type"),
        ProblemReason("invalid_input", 422, "Invalid input"),
        ProblemReason("client_closed_request", 499, "Client closed request"),
        ProblemReason("internal", 500, "Internal error"),
        ProblemReason("unavailable", 503, "Unavailable"),
    )
}

# Problem types of their own, each keeping the `reason` of its status (seeds' type table).
KIND_PROBLEM_TYPES: Mapping[str, tuple[str, str]] = {
    "tools_called": ("conflict", "Tools called"),
    "effect_unknown": ("conflict", "Effect unknown"),
    "tools_unfinished": ("unavailable", "Tools unfinished"),
    "rebuilding": ("unavailable", "Rebuilding"),
}

# Kinds and `because` values with which a retry never helps, so no `Retry-After` is sent ("When to retry").
NO_RETRY_KINDS = frozenset({"tools_unfinished", "tool_not_offered", "model_not_offered"})
NO_RETRY_BECAUSE = frozenset({"builds_of_the_day", "stalled", "not_finite", "not_in_order"})
DEFAULT_RETRY_AFTER_SECONDS = 5


ERROR_TEXT_BYTES = 1024


def cut_text(text: str, limit: int = ERROR_TEXT_BYTES) -> str:
    """Cut `text` to at most `limit` bytes of UTF-8, on a character boundary, and mark a cut with `…`."""
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode("utf-8", "ignore") + "…"


@dataclass(frozen=True)
class InputIssue:
    """One entry of an `invalid_input` problem's `errors`: a sentence and the JSON pointer it is about."""

    detail: str
    pointer: str

    def as_json(self) -> dict[str, str]:
        return {"detail": self.detail, "pointer": self.pointer}


@dataclass
class Rejection(Exception):
    """An operation that did not succeed, for a reason the caller can read.

    `retry_after` is only honoured for `unavailable` problems that a retry may resolve; `problem()` drops it
    otherwise. `headers` carries transport headers such as `WWW-Authenticate` (HTTP only; MCP ignores them).
    """

    reason: str
    detail: str
    kind: str | None = None
    because: str | None = None
    errors: Sequence[InputIssue] = ()
    retry_after: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    instance: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.reason not in PROBLEM_REASONS:
            raise ValueError(f"unknown problem reason {self.reason!r}")
        Exception.__init__(self, self.detail)

    @property
    def status(self) -> int:
        return PROBLEM_REASONS[self.reason].status

    @property
    def problem_type(self) -> str:
        if self.kind is not None and self.kind in KIND_PROBLEM_TYPES:
            return PROBLEM_BASE + self.kind
        return PROBLEM_BASE + self.reason

    @property
    def title(self) -> str:
        if self.kind is not None and self.kind in KIND_PROBLEM_TYPES:
            return KIND_PROBLEM_TYPES[self.kind][1]
        return PROBLEM_REASONS[self.reason].title

    def effective_retry_after(self) -> int | None:
        """The `Retry-After` seconds to send, or None where "When to retry" forbids one."""
        if self.reason != "unavailable":
            return None
        if self.kind in NO_RETRY_KINDS or self.because in NO_RETRY_BECAUSE:
            return None
        return self.retry_after if self.retry_after is not None else DEFAULT_RETRY_AFTER_SECONDS

    def as_record(self) -> dict[str, Any]:
        """The rejection as a run's facts keep it: `reason`, `detail`, and `kind`, `because`, `errors` when set."""
        data: dict[str, Any] = {"reason": self.reason, "detail": self.detail}
        if self.kind is not None:
            data["kind"] = self.kind
        if self.because is not None:
            data["because"] = self.because
        if self.errors:
            data["errors"] = [issue.as_json() for issue in self.errors]
        return data

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> Rejection:
        """The rejection `as_record` wrote (a recorded ending), to answer again as a problem."""
        return cls(
            str(data["reason"]),
            str(data.get("detail", "")),
            kind=data.get("kind"),
            because=data.get("because"),
            errors=tuple(InputIssue(e["detail"], e["pointer"]) for e in data.get("errors", [])),
        )

    def problem(self) -> dict[str, Any]:
        """The problem document, members in the order the seeds show them."""
        document: dict[str, Any] = {
            "type": self.problem_type,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            "reason": self.reason,
        }
        if self.kind is not None:
            document["kind"] = self.kind
        if self.because is not None:
            document["because"] = self.because
        if self.errors:
            document["errors"] = [issue.as_json() for issue in self.errors]
        if self.instance is not None:
            document["instance"] = self.instance
        document.update(self.extra)
        return document


def invalid_input(issues: Sequence[InputIssue]) -> Rejection:
    """An `invalid_input` rejection whose detail says every issue, one sentence each."""
    detail = " ".join(issue.detail for issue in issues) if issues else "The input is not valid."
    return Rejection("invalid_input", detail, errors=tuple(issues))


def not_found(detail: str) -> Rejection:
    return Rejection("not_found", detail)


def conflict(detail: str, *, kind: str | None = None, because: str | None = None) -> Rejection:
    return Rejection("conflict", detail, kind=kind, because=because)


CHANGED_AT_THE_SAME_MOMENT = "Another change was made at the same moment; send the request again."


def changed_at_the_same_moment() -> Rejection:
    """The answer to a command whose stream other writers kept moving while it decided (the ledger's
    `decide_and_append` raises it after its last clash)."""
    return conflict(CHANGED_AT_THE_SAME_MOMENT)


def bad_request(detail: str, errors: Sequence[InputIssue] = ()) -> Rejection:
    """A malformed request; `errors` points at the place, where there is one (a field given twice)."""
    return Rejection("bad_request", detail, errors=tuple(errors))


def forbidden(detail: str) -> Rejection:
    """The credential is valid but may not do this: over HTTP the challenge says so (`insufficient_scope`)."""
    return Rejection("forbidden", detail, headers={"WWW-Authenticate": 'Bearer error="insufficient_scope"'})


def unavailable(
    detail: str, *, kind: str | None = None, because: str | None = None, retry_after: int | None = None
) -> Rejection:
    return Rejection("unavailable", detail, kind=kind, because=because, retry_after=retry_after)
