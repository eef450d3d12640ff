"""Stream names and the scopes that build them.

A stream name is `org/<org>/<segments...>` or `playbook/<org>/<playbook>/<segments...>`. Handlers
never write a name by hand: they hold a scope (bound by the dispatcher to the caller's org and
playbook) and call `scope.stream(...)`. Every segment, the org and the playbook included, matches
`[A-Za-z0-9_.:-]{1,64}` and is not only dots, and a whole name is at most 256 characters, so no
segment can contain `/` and no caller can reach another tenant's streams.

The scope key (`org/<org>` or `playbook/<org>/<playbook>`) is stored beside every record; reads bound
to a scope compare it with `=`, never with a prefix pattern.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import NewType

StreamName = NewType("StreamName", str)

SEGMENT_MAX_LENGTH = 64
STREAM_MAX_LENGTH = 256
_SEGMENT = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def validate_segment(segment: str) -> str:
    """Return `segment` when it is a valid stream-name segment, else raise `ValueError`."""
    if not isinstance(segment, str) or not _SEGMENT.fullmatch(segment) or set(segment) == {"."}:
        raise ValueError(f"invalid stream segment {segment!r}: use 1 to 64 of A-Z a-z 0-9 _ . : -")
    return segment


def _join(prefix: tuple[str, ...], segments: tuple[str, ...]) -> StreamName:
    if not segments:
        raise ValueError("a stream needs at least one segment below its scope")
    name = "/".join(validate_segment(part) if i else part for i, part in enumerate((*prefix, *segments)))
    if len(name) > STREAM_MAX_LENGTH:
        raise ValueError(f"stream name longer than {STREAM_MAX_LENGTH} characters")
    return StreamName(name)


@dataclass(frozen=True, slots=True)
class OrgScope:
    """An org's own streams, such as `org/<org>/playbooks`."""

    org: str

    def __post_init__(self) -> None:
        validate_segment(self.org)

    @property
    def key(self) -> str:
        """The scope key stored with each record: `org/<org>`."""
        return f"org/{self.org}"

    def stream(self, *segments: str) -> StreamName:
        """`org/<org>/<segments...>`, each segment validated."""
        return _join(("org", self.org), segments)


@dataclass(frozen=True, slots=True)
class PlaybookScope:
    """A playbook's streams, such as `playbook/<org>/<playbook>/runs/<run id>`."""

    org: str
    playbook: str

    def __post_init__(self) -> None:
        validate_segment(self.org)
        validate_segment(self.playbook)

    @property
    def key(self) -> str:
        """The scope key stored with each record: `playbook/<org>/<playbook>`."""
        return f"playbook/{self.org}/{self.playbook}"

    def stream(self, *segments: str) -> StreamName:
        """`playbook/<org>/<playbook>/<segments...>`, each segment validated."""
        return _join(("playbook", self.org, self.playbook), segments)


Scope = OrgScope | PlaybookScope


@functools.lru_cache(maxsize=4096)
def scope_key_of(stream: str) -> str:
    """The scope key of a stream name built by a scope; `ValueError` for any other text."""
    parts = stream.split("/")
    if len(stream) > STREAM_MAX_LENGTH:
        raise ValueError("stream name too long")
    if parts[0] == "org" and len(parts) >= 3:
        head = 2
    elif parts[0] == "playbook" and len(parts) >= 4:
        head = 3
    else:
        raise ValueError(f"{stream!r} is not a stream name built by a scope")
    for part in parts[1:]:
        validate_segment(part)
    return "/".join(parts[:head])
