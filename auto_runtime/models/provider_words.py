"""A provider's own error words: what the caller may see of them, and what the operator's log gets.

Reasoning-format §4.7: the caller sees the provider's text only when the call went to a built-in
provider on its standard endpoint or to a gateway with ``expose_provider_messages``; even then the first
line alone, cut to 300 characters, and never a JSON, HTML or XML document. The log always gets the text,
cut to 2,000 characters. Either way secrets of 8+ characters become ``[redacted]`` and the instructions or
message quoted whole (8+ characters) become ``[prompt]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

SHOWN_LIMIT = 300
LOGGED_LIMIT = 2000
SCRUBBED_LEAST = 8


@dataclass(frozen=True, slots=True)
class Scrubber:
    """Replaces secrets and quoted prompts in text; values shorter than 8 characters are left alone."""

    secrets: tuple[str, ...] = ()
    prompts: tuple[str, ...] = ()

    @classmethod
    def of(cls, secrets: Iterable[str], prompts: Iterable[str] = ()) -> Scrubber:
        def kept(values: Iterable[str]) -> tuple[str, ...]:
            return tuple(sorted({v for v in values if len(v) >= SCRUBBED_LEAST}, key=len, reverse=True))

        return cls(kept(secrets), kept(prompts))

    def with_prompts(self, prompts: Iterable[str]) -> Scrubber:
        return Scrubber.of(self.secrets, prompts)

    def __call__(self, text: str) -> str:
        for prompt in self.prompts:
            text = text.replace(prompt, "[prompt]")
        for secret in self.secrets:
            text = text.replace(secret, "[redacted]")
        return text


@dataclass(frozen=True, slots=True)
class ProviderError:
    """What an error response says: its message and its code, when the body gives them."""

    message: str | None
    code: str | None


def read_error(body: bytes) -> ProviderError:
    """The message and code of an error body in any of the providers' shapes; both None when unreadable.

    OpenAI, Azure, Anthropic and Gemini put ``{"error": {"message", "type"/"code"/"status"}}``; Bedrock
    answers ``{"message": ...}`` (or ``Message``) with the error type in a header.
    """
    try:
        document: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        text = body.decode("utf-8", errors="replace").strip()
        return ProviderError(text or None, None)
    if isinstance(document, list) and document and isinstance(document[0], dict):
        document = document[0]  # Gemini on Vertex may answer a list of one error
    if not isinstance(document, dict):
        return ProviderError(None, None)
    error = document.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        code = error.get("code")
        if not isinstance(code, str):
            code = error.get("type") if isinstance(error.get("type"), str) else error.get("status")
        return ProviderError(message if isinstance(message, str) else None, code if isinstance(code, str) else None)
    if isinstance(error, str):
        return ProviderError(error, None)
    for key in ("message", "Message"):
        if isinstance(document.get(key), str):
            return ProviderError(document[key], None)
    return ProviderError(None, None)


def looks_like_a_document(text: str) -> bool:
    """JSON, HTML or XML, which the caller never sees as provider words."""
    stripped = text.lstrip()
    return stripped.startswith(("{", "[", "<"))


def shown_words(message: str | None, scrub: Scrubber) -> str | None:
    """The provider's words as the caller may see them: first line, scrubbed, at most 300 characters."""
    if not message:
        return None
    first_line = message.strip().splitlines()[0].strip() if message.strip() else ""
    if not first_line or looks_like_a_document(first_line):
        return None
    return scrub(first_line)[:SHOWN_LIMIT]


def logged_words(text: str, scrub: Scrubber) -> str:
    """The provider's text for the operator's log: scrubbed, at most 2,000 characters."""
    return scrub(text)[:LOGGED_LIMIT]


CONTEXT_LENGTH_WORDS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "maximum number of tokens",
    "input token count",
    "too many input tokens",
)


def names_context_length(message: str | None) -> bool:
    """Whether the provider's words say the request exceeded the model's context length."""
    if not message:
        return False
    lowered = message.lower()
    return any(words in lowered for words in CONTEXT_LENGTH_WORDS)
