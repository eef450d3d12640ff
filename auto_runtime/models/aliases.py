"""``model_aliases``: an exact alias first, then the wildcard alias with the longest prefix; one hop only.

A wildcard alias has ``*`` once, at the end of both sides, standing for a non-empty rest:
with ``anthropic/*: gateway/anthropic/*``, ``anthropic/claude-x`` becomes ``gateway/anthropic/claude-x``.
The settings refuse chains and cycles at start, so a target is never itself an alias.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AliasMatch:
    """The alias (as the operator spelled it) that matched, and the reference it leads to."""

    alias: str
    target: str


def is_wildcard(pattern: str) -> bool:
    return pattern.endswith("*")


def find_alias(reference: str, aliases: Mapping[str, str]) -> AliasMatch | None:
    """The alias that rewrites ``reference``, or None when no alias applies."""
    exact = aliases.get(reference)
    if exact is not None and not is_wildcard(reference):
        return AliasMatch(reference, exact)
    matching = [
        alias
        for alias in aliases
        if is_wildcard(alias) and len(reference) > len(alias) - 1 and reference.startswith(alias[:-1])
    ]
    if not matching:
        return None
    best = max(matching, key=len)
    rest = reference[len(best) - 1 :]
    return AliasMatch(best, aliases[best][:-1] + rest)
