"""A run's or a save's refusal, until the lead unifies it with the catalog's problem type."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Issue:
    """One entry of `errors`: a sentence and the JSON Pointer it is about."""

    detail: str
    pointer: str


@dataclass(frozen=True)
class Rejection:
    """`reason` such as `invalid_input`, `conflict`, `unavailable` or `internal` (a failed run)."""

    reason: str
    detail: str
    kind: str | None = None
    because: str | None = None
    errors: list[Issue] = field(default_factory=list)
    retry_after: int | None = None
