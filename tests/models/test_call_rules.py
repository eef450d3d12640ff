"""Deadlines, retry waits, Retry-After, scrubbing, token sums, proxies and the SigV4 algorithm."""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime

import httpx

from auto_runtime.aws.signing import AwsCredentials, sigv4_headers
from auto_runtime.models import RetryPolicy, TokenUsage, call_deadline_seconds
from auto_runtime.models.failures import retry_after_seconds
from auto_runtime.models.http_client import no_proxy_patterns
from auto_runtime.models.provider_words import Scrubber


def test_the_deadline_of_one_call() -> None:
    assert call_deadline_seconds(1024) == 85.6
    assert call_deadline_seconds(64_000) == 1660.0


def test_retry_waits() -> None:
    policy = RetryPolicy()
    assert policy.wait_before(2, None) == 2.0
    assert policy.wait_before(3, None) == 4.0
    assert policy.wait_before(4, None) is None
    assert policy.wait_before(2, 0.5) == 0.5
    assert policy.wait_before(2, 75.0) == 2.0  # a wait of a minute or more does not replace ours


def test_retry_after_headers() -> None:
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_seconds({"Retry-After": "7"}) == 7.0
    now = 1_800_000_000.0
    date = email.utils.formatdate(now + 12, usegmt=True)
    assert retry_after_seconds({"retry-after": date}, now=now) == 12.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_scrubbing_secrets_and_prompts() -> None:
    scrub = Scrubber.of(["short", "a-long-secret-value"], ["Summarise the ticket please"])
    text = "short a-long-secret-value said: Summarise the ticket please"
    assert scrub(text) == "short [redacted] said: [prompt]"


def test_usage_sums_keep_unknown_only_when_no_call_knew() -> None:
    first = TokenUsage(input_total=10, input_cache_read=None, output_total=3, total=13)
    second = TokenUsage(input_total=5, input_cache_read=2, output_total=1, total=None)
    summed = first + second
    assert summed.as_record() == {
        "input": {"total": 15, "uncached": None, "cache_read": 2, "cache_write": None},
        "output": {"total": 4, "text": None, "reasoning": None},
        "total": 13,
    }


def test_no_proxy_patterns() -> None:
    assert no_proxy_patterns("localhost, .internal.example,10.0.0.1") == (
        "all://localhost",
        "all://*.localhost",
        "all://*.internal.example",
        "all://internal.example",
        "all://10.0.0.1",
        "all://*.10.0.0.1",
    )
    assert no_proxy_patterns("*") == ("all://",)
    assert no_proxy_patterns(None) == ()


def test_sigv4_matches_the_aws_test_suite() -> None:
    """The "get-vanilla" and "post-vanilla" cases of AWS's Signature Version 4 test suite."""
    credentials = AwsCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    moment = datetime(2015, 8, 30, 12, 36, tzinfo=UTC)
    common = {"headers": {}, "body": b"", "credentials": credentials, "region": "us-east-1", "service": "service"}
    get = sigv4_headers(method="GET", url=httpx.URL("https://example.amazonaws.com/"), moment=moment, **common)  # type: ignore[arg-type]
    assert get["Authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host;x-amz-date, "
        "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
    )
    post = sigv4_headers(method="POST", url=httpx.URL("https://example.amazonaws.com/"), moment=moment, **common)  # type: ignore[arg-type]
    assert post["Authorization"].endswith("Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b")
