"""``allowed_models``: which references a definition may give, and which catalog entries are shown.

An entry either equals a reference or ends in ``*`` and covers every reference starting with the part
before it. A definition's reference is allowed when the reference as written, or its alias target, is
covered. ``None`` means no allow list: everything is allowed.
"""

from __future__ import annotations

from collections.abc import Sequence


def entry_covers(entry: str, reference: str) -> bool:
    """Whether one allow-list entry covers one concrete reference."""
    if entry.endswith("*"):
        return reference.startswith(entry[:-1])
    return reference == entry


def is_allowed(allowed: Sequence[str] | None, written: str, target: str | None = None) -> bool:
    """Whether the reference as written, or the alias target it resolves to, is on the allow list."""
    if allowed is None:
        return True
    candidates = (written,) if target is None else (written, target)
    return any(entry_covers(entry, candidate) for entry in allowed for candidate in candidates)


def pattern_allowed(allowed: Sequence[str] | None, pattern: str) -> bool:
    """Whether some wildcard of the allow list covers every model a wildcard ``pattern`` could stand for."""
    if allowed is None:
        return True
    stem = pattern[:-1]
    return any(entry.endswith("*") and stem.startswith(entry[:-1]) for entry in allowed)


def catalog_entry_allowed(allowed: Sequence[str] | None, entry_id: str, target: str | None = None) -> bool:
    """Whether ``list_models`` shows an entry: a wildcard must be covered whole; an alias by name or target."""
    if allowed is None:
        return True
    ids = (entry_id,) if target is None else (entry_id, target)
    for candidate in ids:
        if candidate.endswith("*"):
            if pattern_allowed(allowed, candidate):
                return True
        elif is_allowed(allowed, candidate):
            return True
    return False
