"""``${NAME}``, ``${NAME:-default}`` and ``$$`` in the string values of the configuration file.

A ``$`` that starts none of these is an ordinary character. ``${`` must begin a well-formed reference.
A variable set to the empty string counts as not set, as ``:-`` does in a shell.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

REFERENCE_FORMS = "${NAME}, ${NAME:-default} or $$ for a literal $"


@dataclass(frozen=True, slots=True)
class Reference:
    """One ``${...}`` in a value."""

    name: str
    default: str | None


Segment = str | Reference


class MalformedReferenceError(ValueError):
    """A ``${`` that does not begin a well-formed reference."""


class UnsetReferenceError(LookupError):
    """A reference to a variable that is not set and has no default."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


@dataclass(frozen=True, slots=True)
class Template:
    """A string value split into the text written out and its references."""

    segments: tuple[Segment, ...]

    @property
    def references(self) -> tuple[Reference, ...]:
        return tuple(segment for segment in self.segments if isinstance(segment, Reference))

    @property
    def has_reference(self) -> bool:
        return bool(self.references)

    def written_text(self, stand_in: str = "\x00") -> str:
        """The text written out, each reference replaced by ``stand_in`` (by default a NUL)."""
        return "".join(segment if isinstance(segment, str) else stand_in for segment in self.segments)

    def resolve(self, environment: Mapping[str, str]) -> "ResolvedText":
        parts: list[str] = []
        taken: list[str] = []
        for segment in self.segments:
            if isinstance(segment, str):
                parts.append(segment)
                continue
            value = environment.get(segment.name) or None
            if value is not None:
                taken.append(value)
            elif segment.default is not None:
                value = segment.default
            else:
                raise UnsetReferenceError(segment.name)
            parts.append(value)
        return ResolvedText("".join(parts), tuple(taken))


@dataclass(frozen=True, slots=True)
class ResolvedText:
    """A value with its references replaced.

    ``taken`` holds the values the references took from the environment (defaults excluded):
    each is a secret.
    """

    value: str
    taken: tuple[str, ...]


def parse_template(text: str) -> Template:
    """Split ``text``; raises MalformedReferenceError when a ``${`` is not a well-formed reference."""
    segments: list[Segment] = []
    literal: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "$":
            literal.append(char)
            index += 1
            continue
        following = text[index + 1 : index + 2]
        if following == "$":
            literal.append("$")
            index += 2
            continue
        if following != "{":
            literal.append("$")
            index += 1
            continue
        match = _REFERENCE.match(text, index)
        if match is None:
            raise MalformedReferenceError(f"expects {REFERENCE_FORMS}")
        if literal:
            segments.append("".join(literal))
            literal = []
        segments.append(Reference(match.group(1), match.group(2)))
        index = match.end()
    if literal:
        segments.append("".join(literal))
    return Template(tuple(segments))
