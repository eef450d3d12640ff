"""Sending one model request with the retries and deadline of §4.6, and typing what went wrong (§5.5)."""

from __future__ import annotations

import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx
import trio

from auto_runtime.models.deadlines import RetryPolicy
from auto_runtime.models.failures import ModelCallFailure, failure_of_response
from auto_runtime.models.provider_words import Scrubber, logged_words

log = logging.getLogger("auto_runtime.models")

RequestBuilder = Callable[[], Awaitable[httpx.Request]]


@dataclass(frozen=True, slots=True)
class ReadResponse:
    """A 2xx response, read whole."""

    status: int
    headers: httpx.Headers
    body: bytes


def _untrusted_certificate(error: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError):
            return True
        if "CERTIFICATE_VERIFY_FAILED" in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _transport_failure(provider: str, error: httpx.TransportError, scrub: Scrubber) -> ModelCallFailure:
    if _untrusted_certificate(error):
        return ModelCallFailure(
            "certificate_untrusted",
            provider,
            f"The provider {provider} presented a TLS certificate the server does not trust; the operator must "
            "add its certificate authority (NODE_EXTRA_CA_CERTS) before it can be used",
            logged=logged_words(f"{type(error).__name__}: {error}", scrub),
        )
    return ModelCallFailure(
        "provider_unavailable",
        provider,
        f"The provider {provider} could not be reached",
        logged=logged_words(f"{type(error).__name__}: {error}", scrub),
    )


async def _attempt(
    client: httpx.AsyncClient, build: RequestBuilder, provider: str, expose_words: bool, scrub: Scrubber
) -> ReadResponse:
    request = await build()
    try:
        response = await client.send(request)
        try:
            body = await response.aread()
        finally:
            await response.aclose()
    except httpx.TransportError as error:
        raise _transport_failure(provider, error, scrub) from error
    if response.status_code >= 400:
        raise failure_of_response(
            provider, response.status_code, response.headers, body, expose_words=expose_words, scrub=scrub
        )
    return ReadResponse(response.status_code, response.headers, body)


async def send_with_retries(
    client: httpx.AsyncClient,
    build: RequestBuilder,
    *,
    provider: str,
    expose_words: bool,
    scrub: Scrubber,
    deadline_seconds: float,
    retry: RetryPolicy,
    run_id: str | None = None,
) -> ReadResponse:
    """Send the request ``build`` makes (afresh for each attempt, so signatures stay current).

    Raises :class:`ModelCallFailure`: the last failure when no attempt is left or the next wait would pass
    the deadline, ``timed_out`` when the deadline passes during an attempt. Every failure is logged for the
    operator with the run id; the run id is never sent to the provider.
    """
    deadline = trio.current_time() + deadline_seconds
    attempt = 1
    with trio.move_on_at(deadline):
        while True:
            try:
                return await _attempt(client, build, provider, expose_words, scrub)
            except ModelCallFailure as failure:
                log.warning(
                    "model call to %s failed (attempt %d, run %s): %s",
                    provider,
                    attempt,
                    run_id or "-",
                    failure.logged or failure.detail,
                )
                attempt += 1
                wait = retry.wait_before(attempt, failure.retry_after_seconds) if failure.retried else None
                if wait is None or trio.current_time() + wait >= deadline:
                    raise
            await trio.sleep(wait)
    log.warning("model call to %s passed its deadline of %.1f s (run %s)", provider, deadline_seconds, run_id or "-")
    raise ModelCallFailure(
        "timed_out",
        provider,
        f"The provider {provider} did not answer within the call's deadline of {deadline_seconds:g} seconds",
    )
