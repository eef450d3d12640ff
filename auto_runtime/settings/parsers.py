"""Parsers of the text of one environment variable.

Each parser returns the typed value or raises :class:`RefusedError` with what the setting expects. A
:class:`RefusedError` never holds the text it was given, so its message is safe to print.
"""

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

from auto_runtime.settings.addresses import (
    has_query_or_fragment,
    is_host_name,
    is_https_or_loopback,
    split_url,
)


class RefusedError(ValueError):
    """What a setting expects, for a value it refuses."""

    def __init__(self, expects: str) -> None:
        super().__init__(expects)
        self.expects = expects


def integer(least: int, most: int) -> Callable[[str], int]:
    expects = f"expects a whole number from {least:,} to {most:,}"

    def parse(text: str) -> int:
        if not re.fullmatch(r"[0-9]{1,12}", text.strip()):
            raise RefusedError(expects)
        value = int(text.strip())
        if not least <= value <= most:
            raise RefusedError(expects)
        return value

    return parse


def one_of(*options: str) -> Callable[[str], str]:
    expects = "expects one of " + ", ".join(options)

    def parse(text: str) -> str:
        if text.strip() not in options:
            raise RefusedError(expects)
        return text.strip()

    return parse


def boolean(text: str) -> bool:
    normalized = text.strip().lower()
    if normalized in ("true", "1"):
        return True
    if normalized in ("false", "0"):
        return False
    raise RefusedError("expects true or false (or 1 or 0)")


_DURATION = re.compile(
    r"P(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?=\d)(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:[.,]\d+)?)S)?)?"
)


def parse_duration(text: str) -> timedelta:
    """An ISO 8601 duration in weeks, days, hours, minutes and seconds (a year has no set length).

    The settings' own grammar, not `functions.durations`': whole weeks, days, hours and minutes, seconds with a
    decimal, read to the microsecond. The workflow grammar takes a decimal in every part and rounds to whole
    milliseconds, so it would take `P1.5D`, and round `PT0.0099S` up to the `PT0.01S` bound these refuse it at;
    the configuration seed names only "an ISO 8601 duration" and each setting's bounds. Settings sit below the
    function types, which they configure."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or not any(match.groupdict().values()):
        raise ValueError("not an ISO 8601 duration")
    parts = {name: value for name, value in match.groupdict().items() if value is not None}
    seconds = Decimal(parts.pop("seconds", "0").replace(",", "."))
    return timedelta(**{name: int(value) for name, value in parts.items()}) + timedelta(seconds=float(seconds))


def duration(least: str, most: str) -> Callable[[str], timedelta]:
    lower, upper = parse_duration(least), parse_duration(most)
    expects = f"expects an ISO 8601 duration from {least} to {most}, in days, hours, minutes and seconds"

    def parse(text: str) -> timedelta:
        try:
            value = parse_duration(text)
        except ValueError:
            raise RefusedError(expects) from None
        if not lower <= value <= upper:
            raise RefusedError(expects)
        return value

    return parse


def text(value: str) -> str:
    return value


def http_url(value: str) -> str:
    """An absolute http or https URL."""
    if split_url(value.strip()) is None:
        raise RefusedError("expects an http or https URL")
    return value.strip()


def public_url(value: str) -> str:
    """An https URL, or http on a loopback address, with no user, query or fragment; no trailing /."""
    parts = split_url(value.strip())
    if parts is None or parts.username or has_query_or_fragment(value.strip()) or not is_https_or_loopback(value):
        raise RefusedError("expects an https URL (or http on a loopback address) with no user, query or fragment")
    return value.strip().rstrip("/")


def issuer_url(value: str) -> str:
    """An https URL with no path, query or fragment."""
    stripped = value.strip()
    parts = split_url(stripped)
    if (
        parts is None
        or parts.scheme != "https"
        or parts.username
        or parts.path not in ("", "/")
        or has_query_or_fragment(stripped)
    ):
        raise RefusedError("expects an https URL with no path, query or fragment")
    return stripped.rstrip("/")


def absolute_path(value: str) -> Path:
    if not value.startswith("/"):
        raise RefusedError("expects an absolute path")
    return Path(value)


def any_path(value: str) -> Path:
    """A path, absolute or relative to the working directory; the loader anchors it."""
    return Path(value)


def secrets_key(value: str) -> bytes:
    expects = "expects the base64 of 32 bytes, as openssl rand -base64 32 prints it"
    try:
        key = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise RefusedError(expects) from None
    if len(key) != 32:
        raise RefusedError(expects)
    return key


def postgres_url(value: str) -> str:
    try:
        parts = urlsplit(value.strip())
        parts.port  # noqa: B018 - reading it checks the port
    except ValueError:
        raise RefusedError("expects a postgresql:// or postgres:// URL") from None
    if parts.scheme not in ("postgresql", "postgres"):
        raise RefusedError("expects a postgresql:// or postgres:// URL")
    return value.strip()


@dataclass(frozen=True, slots=True)
class S3Location:
    """The bucket and key prefix of ``CONTENT_STORE_URL``; ``prefix`` has no leading or trailing /."""

    bucket: str
    prefix: str


_BUCKET = re.compile(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]")


def s3_location(value: str) -> S3Location:
    expects = "expects an s3://bucket/prefix URL with a valid bucket name"
    parts = urlsplit(value.strip())
    if parts.scheme != "s3" or not _BUCKET.fullmatch(parts.netloc) or parts.query or parts.fragment:
        raise RefusedError(expects)
    return S3Location(parts.netloc, parts.path.strip("/"))


def host(value: str) -> str:
    stripped = value.strip()
    if not stripped or not is_host_name(stripped):
        raise RefusedError("expects a host name or an IP address")
    return stripped
