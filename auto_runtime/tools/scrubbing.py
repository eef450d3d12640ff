"""Scrubbing the tool servers' secrets out of every message, record, result, problem and log line.

The seeds' rules (configuration "Keep secrets out of the file"):

- a secret is a value a `${NAME}` reference took, a credential of an auth block, or a token minted from one;
  the settings gather the first two (`LoadedSettings.secret_values`), the token sources add the third;
- each secret is removed as written, JSON-escaped (a quote, a backslash or a line break in it escaped),
  form-encoded as a query carries it, percent-encoded as a path carries it, and in base64 as a Basic
  credential carries it;
- a value shorter than 8 characters is never scrubbed;
- a minted token is scrubbed until the token after the one that replaces it is minted: each token source keeps
  its newest two tokens in the set.

Concurrency rules: a `SecretSet` is mutated only from the Trio thread (token sources run there); a `Scrubber`
is an immutable snapshot, safe to use from any thread, and a `SecretSet` hands out a new one after each change.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, quote_plus

SCRUBBED_LEAST = 8
"""A value shorter than this many characters is not scrubbed, since scrubbing it would erase ordinary words."""
REDACTED = "[redacted]"
MINTED_KEPT = 2
"""How many of a source's minted tokens stay secrets: the current one and the one it replaced."""


def encodings_of(secret: str) -> frozenset[str]:
    """Every form in which `secret` may travel: as written, JSON-escaped, form- and percent-encoded, base64."""
    forms = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        quote_plus(secret, safe=""),
        quote(secret, safe=""),
        quote(secret),
    }
    raw = secret.encode("utf-8")
    for encoded in (base64.b64encode(raw).decode("ascii"), base64.urlsafe_b64encode(raw).decode("ascii")):
        forms.add(encoded)
        forms.add(encoded.rstrip("="))
    return frozenset(form for form in forms if len(form) >= SCRUBBED_LEAST)


@dataclass(frozen=True, slots=True)
class Scrubber:
    """Replaces every form of each secret with `[redacted]`; longer forms first, so no part of one survives."""

    secrets: frozenset[str]
    _pattern: re.Pattern[str] | None

    @classmethod
    def of(cls, secrets: Iterable[str]) -> Scrubber:
        kept = frozenset(secret for secret in secrets if len(secret) >= SCRUBBED_LEAST)
        forms = sorted({form for secret in kept for form in encodings_of(secret)}, key=lambda f: (-len(f), f))
        pattern = re.compile("|".join(re.escape(form) for form in forms)) if forms else None
        return cls(kept, pattern)

    def __call__(self, text: str) -> str:
        """`text` with every form of every secret replaced."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(REDACTED, text)

    def value(self, value: Any) -> Any:
        """A JSON value with every string in it (keys included) scrubbed; other values as they are."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, Mapping):
            return {self(str(key)): self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value

    def finds(self, text: str) -> bool:
        """Whether any form of any secret occurs in `text`."""
        return self._pattern is not None and self._pattern.search(text) is not None


class SecretSet:
    """The one set of secrets every tool server shares: the settings' secrets and the minted tokens.

    `mint(source, token)` records a source's new token; the source's token before the previous one stops being
    a secret then (the minted-token window). `scrubber` is rebuilt only after a change.
    """

    def __init__(self, fixed: Iterable[str] = ()) -> None:
        self._fixed: set[str] = set(fixed)
        self._minted: dict[str, list[str]] = {}
        self._scrubber: Scrubber | None = None

    def add(self, secret: str) -> None:
        """A secret that stays one for as long as the server runs (a credential of an auth block, say)."""
        if secret not in self._fixed:
            self._fixed.add(secret)
            self._scrubber = None

    def mint(self, source: str, token: str) -> None:
        """`source` minted `token`; it keeps its newest `MINTED_KEPT` tokens as secrets."""
        tokens = self._minted.setdefault(source, [])
        if token in tokens:
            return
        tokens.append(token)
        del tokens[:-MINTED_KEPT]
        self._scrubber = None

    def values(self) -> frozenset[str]:
        """Every secret now (the short ones included; the scrubber leaves those alone)."""
        return frozenset(self._fixed | {token for tokens in self._minted.values() for token in tokens})

    @property
    def scrubber(self) -> Scrubber:
        if self._scrubber is None:
            self._scrubber = Scrubber.of(self.values())
        return self._scrubber

    def __call__(self, text: str) -> str:
        return self.scrubber(text)


class ScrubbingFilter(logging.Filter):
    """A logging filter that scrubs a record's message (its arguments merged in) with the set's scrubber now.

    Add it to a handler, so every line the handler writes is scrubbed, whichever logger it came from.
    """

    def __init__(self, secrets: SecretSet) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        scrubber = self.secrets.scrubber
        if scrubber.secrets:
            message = record.getMessage()
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.msg = scrubber(message)
            record.args = None
            if record.exc_text:
                record.exc_text = scrubber(record.exc_text)
            record.exc_info = None
        return True
