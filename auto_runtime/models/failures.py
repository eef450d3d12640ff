"""A model call that did not answer, typed as reasoning-format §5.5 "Failures by response" has it.

* ``content_refused``: 400 with code ``content_filter`` or ``content_policy_violation``, or a content-filter
  finish; the run ends ``invalid_input`` at ``/input``.
* ``request_refused``: 400, 404, 413, 422 and any other 4xx not below; ``conflict``, ``unworkable``.
* ``credentials_rejected``: 401, 403, or no credential obtainable from a cloud chain; ``unavailable``.
* ``rate_limited``: 429; ``unavailable``, the detail saying when to try again.
* ``provider_unavailable``: 408, 409, 5xx, a connection failure, an unreadable 2xx; ``unavailable``.
* ``timed_out``: the call's deadline (§4.6); ``unavailable``.
* ``certificate_untrusted``: an untrusted TLS certificate; ``unavailable``, ``model_not_offered``,
  ``because: provider_not_configured``.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from auto_runtime.models.answers import TokenUsage
from auto_runtime.models.provider_words import (
    Scrubber,
    logged_words,
    names_context_length,
    read_error,
    shown_words,
)

FailureKind = Literal[
    "content_refused",
    "request_refused",
    "credentials_rejected",
    "rate_limited",
    "provider_unavailable",
    "timed_out",
    "certificate_untrusted",
]

RETRIED_STATUSES = frozenset({408, 409, 429})
CONTENT_FILTER_CODES = frozenset({"content_filter", "content_policy_violation"})

STATUS_MEANINGS: Mapping[int, str] = {
    400: "request invalid",
    401: "credentials rejected",
    403: "credentials rejected",
    404: "model not found",
    408: "request timed out",
    409: "conflict",
    413: "request too large",
    422: "request not accepted",
    429: "rate limited",
    500: "internal error",
    502: "bad gateway",
    503: "unavailable",
    504: "gateway timed out",
    529: "overloaded",
}


def status_meaning(status: int) -> str:
    if status in STATUS_MEANINGS:
        return STATUS_MEANINGS[status]
    if 400 <= status < 500:
        return "request not accepted"
    if status >= 500:
        return "provider error"
    return "unexpected status"


@dataclass
class ModelCallFailure(Exception):
    """A call that ended without an answer.

    ``detail`` is safe to show the caller: it names the provider prefix, and quotes the provider's own
    words only where §4.7 allows. ``logged`` is for the operator's log only. ``retry_after_seconds`` is
    the provider's wait for ``rate_limited`` when it gave one. ``context_length`` is set when a refused
    request was too long for the model, so the run can add the bytes its tools answered. ``usage`` is set
    when the provider answered (a content-filter finish) and counted tokens.
    """

    kind: FailureKind
    provider: str
    detail: str
    status: int | None = None
    retry_after_seconds: float | None = None
    context_length: bool = False
    usage: TokenUsage | None = None
    logged: str | None = None

    def __post_init__(self) -> None:
        Exception.__init__(self, self.detail)

    @property
    def retried(self) -> bool:
        """Whether §4.6 allows another attempt after this failure."""
        if self.kind == "provider_unavailable":
            return self.status is None or self.status != 200
        return self.kind == "rate_limited"


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, else ``retry-after`` in seconds or as an HTTP date."""
    lowered = {name.lower(): value for name, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis)
        except ValueError:
            value = -1.0
        if value >= 0:
            return value / 1000.0
    after = lowered.get("retry-after")
    if after is None:
        return None
    try:
        seconds = float(after)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(after)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(seconds, 0.0)


def failure_of_response(
    provider: str,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    expose_words: bool,
    scrub: Scrubber,
) -> ModelCallFailure:
    """The failure an error response stands for (any status of 400 and above)."""
    error = read_error(body)
    logged = logged_words(f"HTTP {status}: {body.decode('utf-8', errors='replace')}", scrub)
    words = shown_words(error.message, scrub) if expose_words else None
    said = f": {words}" if words else ""
    meaning = status_meaning(status)
    if status == 400 and (error.code in CONTENT_FILTER_CODES or _content_filter_inner(body)):
        return ModelCallFailure(
            "content_refused",
            provider,
            f"The provider {provider} refused the content of the request (HTTP 400){said}",
            status=status,
            logged=logged,
        )
    if status in (401, 403):
        return ModelCallFailure(
            "credentials_rejected",
            provider,
            f"The provider {provider} rejected the server's credentials (HTTP {status}, {meaning}){said}",
            status=status,
            logged=logged,
        )
    if status == 429:
        wait = retry_after_seconds(headers)
        seconds = max(1, round(wait)) if wait is not None else 0
        when = f"try again in {seconds} second{'s' if seconds != 1 else ''}" if wait is not None else "try again later"
        return ModelCallFailure(
            "rate_limited",
            provider,
            f"The provider {provider} is limiting the rate of requests (HTTP 429); {when}{said}",
            status=status,
            retry_after_seconds=wait,
            logged=logged,
        )
    if status in RETRIED_STATUSES or status >= 500:
        return ModelCallFailure(
            "provider_unavailable",
            provider,
            f"The provider {provider} is unavailable (HTTP {status}, {meaning}){said}",
            status=status,
            logged=logged,
        )
    return ModelCallFailure(
        "request_refused",
        provider,
        f"The provider {provider} refused the request (HTTP {status}, {meaning}){said}",
        status=status,
        context_length=names_context_length(error.message) or "context_length" in (error.code or ""),
        logged=logged,
    )


def _content_filter_inner(body: bytes) -> bool:
    """Azure may put ``content_filter`` in ``error.innererror.code`` under another top-level code."""
    text = body.decode("utf-8", errors="replace")
    return '"content_filter"' in text or '"content_policy_violation"' in text


def unreadable_answer(provider: str, why: str, body: bytes, scrub: Scrubber) -> ModelCallFailure:
    """A 2xx whose body is not the protocol's answer: provider unavailable, never retried (it was read)."""
    return ModelCallFailure(
        "provider_unavailable",
        provider,
        f"The provider {provider} answered with a response the server could not read",
        status=200,
        logged=logged_words(f"{why}: {body.decode('utf-8', errors='replace')}", scrub),
    )


def content_filtered(provider: str, raw_reason: str | None, usage: TokenUsage) -> ModelCallFailure:
    """A content-filter finish: the provider answered but withheld the content."""
    return ModelCallFailure(
        "content_refused",
        provider,
        f"The provider {provider} withheld its answer (finish reason {raw_reason or 'content_filter'})",
        usage=usage,
    )
