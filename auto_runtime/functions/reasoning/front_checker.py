"""Collecting the problems of a document with front matter, each at the line of the field at fault.

Reasoning and interaction documents share it: the same object-of-keys checks and the same words for unknown
keys and a description. Each document's reader keeps its own fields' checks; an interaction document's checker
adds its templates to this one.
"""

from __future__ import annotations

from typing import Any

from auto_runtime.functions.reasoning.front_matter import FrontMatter, Problem
from auto_runtime.json_pointers import escape


class FrontMatterChecker:
    """The problems found so far, in the order found; `add` places one at its pointer's line."""

    def __init__(self, front: FrontMatter) -> None:
        self.front = front
        self.problems: list[Problem] = []

    def add(self, pointer: str, words: str) -> None:
        self.problems.append(Problem(self.front.line_of(pointer), pointer, words))

    def mapping(self, pointer: str, value: Any, keys: tuple[str, ...], what: str) -> dict[str, Any] | None:
        """`value` when it is an object (each key not among `keys` a problem), else `None` and a problem."""
        if not isinstance(value, dict):
            self.add(pointer, f"Expected {what}")
            return None
        for key in value:
            if key not in keys:
                self.add(f"{pointer}/{escape(key)}", f"Unknown key {key}; the keys here are {', '.join(keys)}")
        return value

    def top_keys(self, fields: dict[str, Any], keys: tuple[str, ...]) -> None:
        """Each key of the front matter not among `keys` a problem."""
        for key in fields:
            if key not in keys:
                self.add(f"/{escape(key)}", f"Unknown key {key}; the keys are {', '.join(keys)}")

    def description(self, fields: dict[str, Any]) -> str | None:
        """The front matter's `description`: text of 1 to 1,000 characters, else `None` and a problem."""
        description = fields.get("description")
        if "description" in fields and (not isinstance(description, str) or not 1 <= len(description) <= 1000):
            self.add("/description", "Expected text of 1 to 1,000 characters")
            return None
        return description
