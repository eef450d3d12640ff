"""CloudEvents 1.0 as the seeds cite it: RFC 3986 URI references, RFC 9110 media types, RFC 3339 times, and the
characters a CloudEvents string may not hold. The HTTP tests check the pointers; these check the edges."""

from __future__ import annotations

import pytest

from auto_runtime.events.cloudevent_syntax import (
    has_forbidden_character,
    has_non_space,
    is_absolute_uri,
    is_media_type,
    is_uri_reference,
)
from auto_runtime.events.cloudevent_time import EventTimeError, parse_event_time


@pytest.mark.parametrize(
    "text",
    [
        "/ledger/eu",
        "https://acme.example/ledger",
        "ledger",
        "./a:b",
        "//acme.example",
        "urn:acme:ledger",
        "mailto:books@acme.example",
        "http://[::1]:8080/x",
        "http://[v7.abc]/x",
        "http://user:pw@host:80/p?q=1#f",
        "/a%20b",
        "?only=query",
        "#only-fragment",
    ],
)
def test_uri_references(text: str) -> None:
    assert is_uri_reference(text)


@pytest.mark.parametrize(
    "text", ["a b", "/a%2", "/a%zz", "1a:b", "a:b c", "/é", "http://[::1/x", "http://h:8x/", "http://[zz]/", "a\\b"]
)
def test_not_uri_references(text: str) -> None:
    assert not is_uri_reference(text)


def test_absolute_uris_have_a_scheme_and_no_fragment() -> None:
    assert is_absolute_uri("https://acme.example/schemas/month")
    assert is_absolute_uri("urn:acme:schema")
    assert not is_absolute_uri("/schemas/month")
    assert not is_absolute_uri("//acme.example/s")
    assert not is_absolute_uri("https://acme.example/s#part")


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("application/json", True),
        ("application/vnd.acme+json", True),
        ("text/plain;charset=utf-8", True),
        ("text/plain ; charset=utf-8 ; format=flowed", True),
        ('text/plain; title="a \\"b\\""', True),
        ("application", False),
        ("application/", False),
        ("/json", False),
        ("text/plain; charset", False),
        ("text/plain; =x", False),
        ("a/b c", False),
        ("a(b)/c", False),
    ],
)
def test_media_types(text: str, valid: bool) -> None:
    assert is_media_type(text) is valid


def test_forbidden_characters() -> None:
    for character in ("\x00", "\x1f", "\x7f", "\x9f", "\ud800", "\udfff", "\ufdd0", "\ufdef", "\ufffe", "\U0010ffff"):
        assert has_forbidden_character(f"a{character}b"), hex(ord(character))
    for character in ("\xa0", "é", "\U0001f600", "\ufdcf", "\ufdf0", "\ufffd", "\U0010fffd"):
        assert not has_forbidden_character(f"a{character}b"), hex(ord(character))


def test_a_character_that_is_not_a_space() -> None:
    assert has_non_space(" a ")
    assert not has_non_space("")
    assert not has_non_space("   ")


def test_times_are_instants() -> None:
    zulu = parse_event_time("2026-10-01T08:59:00Z")
    assert parse_event_time("2026-10-01T10:59:00+02:00").same_instant(zulu)
    assert parse_event_time("2026-10-01T08:59:00.000-00:00").same_instant(zulu)
    assert not parse_event_time("2026-10-01T08:59:00.0000001Z").same_instant(zulu)
    leap = parse_event_time("2016-12-31T23:59:60Z")
    assert leap.same_instant(parse_event_time("2017-01-01T00:00:00Z"))
    assert leap.shown == "2017-01-01T00:00:00.000Z"
    assert parse_event_time("0001-01-01T00:00:00Z").shown == "0001-01-01T00:00:00.000Z"


@pytest.mark.parametrize(
    "text",
    [
        "2026-10-01T09:00:00",
        "2026-02-29T00:00:00Z",
        "2026-10-01T23:59:60+00:30",
        "2026-10-01T09:00:00+23:60",
        "0001-01-01T00:30:00+01:00",
        "9999-12-31T23:59:60Z",
        "２026-10-01T09:00:00Z",
    ],
)
def test_times_that_are_refused(text: str) -> None:
    with pytest.raises(EventTimeError):
        parse_event_time(text)
