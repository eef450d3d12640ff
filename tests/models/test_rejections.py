"""Admission refusals and failed calls as the problems a run without tool calls ends with (§8)."""

from __future__ import annotations

from auto_runtime.models import (
    ModelCallFailure,
    ModelNotOffered,
    ProviderOptionRefused,
    failure_rejection,
    not_offered_rejection,
    offered_option_problems,
    option_rejection,
)


def test_model_not_offered_has_no_retry_after() -> None:
    rejection = not_offered_rejection(ModelNotOffered("model_not_allowed", "fake/x", "The model fake/x is not offered"))
    problem = rejection.problem()
    assert (rejection.status, problem["kind"], problem["because"]) == (503, "model_not_offered", "model_not_allowed")
    assert rejection.effective_retry_after() is None


def test_an_option_refused_is_unworkable() -> None:
    rejection = option_rejection(ProviderOptionRefused("/provider_options/gw/x", "The gateway gw does not allow x"))
    assert (rejection.status, rejection.kind) == (409, "unworkable")
    assert rejection.errors[0].pointer == "/provider_options/gw/x"


def test_failures_by_kind() -> None:
    def rejected(kind: str) -> tuple[int, str | None, str | None, int | None]:
        rejection = failure_rejection(ModelCallFailure(kind, "fake", "words"))  # type: ignore[arg-type]
        return rejection.status, rejection.kind, rejection.because, rejection.effective_retry_after()

    assert rejected("content_refused") == (422, None, None, None)
    assert rejected("request_refused") == (409, "unworkable", None, None)
    assert rejected("certificate_untrusted") == (503, "model_not_offered", "provider_not_configured", None)
    for kind in ("credentials_rejected", "rate_limited", "provider_unavailable", "timed_out"):
        assert rejected(kind) == (503, None, None, 5)


def test_options_not_offered_at_parse() -> None:
    options = {
        "anthropic": {"thinking": {"type": "enabled", "budgetTokens": 1, "betas": []}, "headers": {}},
        "openai": {"textVerbosity": "low", "store": True},
        "my-gateway": {"anything": 1},
    }
    assert offered_option_problems(options) == [
        ("/provider_options/anthropic/thinking/betas", "anthropic.thinking.betas is not offered"),
        ("/provider_options/anthropic/headers", "anthropic.headers is not offered"),
        ("/provider_options/openai/store", "openai.store is not offered"),
    ]
