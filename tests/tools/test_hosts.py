"""`allowed_hosts` patterns: a host, or `*.` and a host for every host under it (not the host itself)."""

from __future__ import annotations

import httpx2
import pytest

from auto_runtime.tools.hosts import HostNotAllowed, HostPolicy


def test_patterns_match_a_host_or_the_hosts_under_one() -> None:
    policy = HostPolicy.of(["crm.example.com", "*.example.org"])
    assert policy.allows("crm.example.com") and policy.allows("CRM.Example.com.")
    assert policy.allows("api.example.org") and policy.allows("a.b.example.org")
    assert not policy.allows("example.org")
    assert not policy.allows("evil-example.org") and not policy.allows("crm.example.com.evil.net")
    assert not policy.allows_url("http://127.0.0.1:5/x") and not policy.allows_url("not a url")


def test_every_host_when_left_out() -> None:
    assert HostPolicy.everywhere().allows("10.0.0.5") and HostPolicy.of(None).allows("localhost")


async def test_the_request_hook_refuses_before_anything_is_sent() -> None:
    policy = HostPolicy.of(["*.example.com"])
    with pytest.raises(HostNotAllowed, match=r"The host 127\.0\.0\.1 is not one"):
        await policy.check_request(httpx2.Request("GET", "http://127.0.0.1:1/"))
    await policy.check_request(httpx2.Request("GET", "https://api.example.com/"))
