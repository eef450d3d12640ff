"""Scrubbing: every secret removed as written, JSON-escaped, form- and percent-encoded and in base64; values
under 8 characters untouched; a minted token kept until the token after the one that replaces it."""

from __future__ import annotations

import base64
import json
import logging
from urllib.parse import quote, quote_plus, urlencode

import pytest

from auto_runtime.tools.scrubbing import REDACTED, Scrubber, ScrubbingFilter, SecretSet

SECRET = 'p@ss "word"/with\\odd\nbits+&='
PLAIN = "sk-live-0123456789abcdef"


@pytest.mark.parametrize(
    "carried",
    [
        SECRET,
        json.dumps(SECRET)[1:-1],
        json.dumps({"key": SECRET}),
        quote_plus(SECRET),
        urlencode({"key": SECRET}),
        quote(SECRET, safe=""),
        f"/items/{quote(SECRET, safe='')}/x",
        base64.b64encode(SECRET.encode()).decode(),
        base64.urlsafe_b64encode(SECRET.encode()).decode().rstrip("="),
    ],
)
def test_each_encoding_of_a_secret_is_scrubbed(carried: str) -> None:
    scrubbed = Scrubber.of({SECRET})(f"before {carried} after")
    assert REDACTED in scrubbed
    assert carried not in scrubbed
    assert scrubbed.startswith("before ") and scrubbed.endswith(" after")


def test_a_basic_credential_is_scrubbed_whole_and_by_its_password() -> None:
    pair = "ada:pass-word-0123"
    scrub = Scrubber.of({pair, "pass-word-0123"})
    header = "Authorization: Basic " + base64.b64encode(pair.encode()).decode()
    assert scrub(header) == f"Authorization: Basic {REDACTED}"
    assert scrub("the password was pass-word-0123") == f"the password was {REDACTED}"


def test_values_under_eight_characters_are_never_scrubbed() -> None:
    scrub = Scrubber.of({"eu-west", "1234567"})
    assert scrub("region eu-west and 1234567") == "region eu-west and 1234567"
    assert Scrubber.of({"12345678"})("x 12345678 y") == f"x {REDACTED} y"


def test_json_values_are_scrubbed_in_keys_and_values_and_other_values_kept() -> None:
    scrub = Scrubber.of({PLAIN})
    value = {PLAIN: [1, True, None, f"key={PLAIN}"], "nested": {"deep": PLAIN}}
    assert scrub.value(value) == {REDACTED: [1, True, None, f"key={REDACTED}"], "nested": {"deep": REDACTED}}


def test_a_minted_token_stays_a_secret_until_the_token_after_its_replacement_is_minted() -> None:
    secrets = SecretSet({PLAIN})
    secrets.mint("billing", "token-one-0123456789")
    secrets.mint("billing", "token-two-0123456789")
    assert secrets("token-one-0123456789 token-two-0123456789") == f"{REDACTED} {REDACTED}"
    secrets.mint("billing", "token-three-0123456789")
    assert secrets("token-one-0123456789") == "token-one-0123456789"
    assert secrets("token-two-0123456789 token-three-0123456789") == f"{REDACTED} {REDACTED}"
    secrets.mint("other", "another-source-token-01")
    assert "token-two-0123456789" in secrets.values()  # one source's tokens never push out another's
    assert PLAIN in secrets.values()


def test_the_logging_filter_scrubs_the_message_its_arguments_and_the_traceback() -> None:
    secrets = SecretSet({PLAIN})
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "sent %s", (PLAIN,), None)
    try:
        raise ValueError(f"refused {PLAIN}")
    except ValueError:
        import sys

        record.exc_info = sys.exc_info()
    assert ScrubbingFilter(secrets).filter(record)
    line = logging.Formatter().format(record)
    assert PLAIN not in line and "sent [redacted]" in line and "refused [redacted]" in line


def test_scrubbing_finds_what_it_would_remove() -> None:
    scrub = Scrubber.of({PLAIN})
    assert scrub.finds(quote(PLAIN)) and not scrub.finds("nothing here")
