"""One entry of ``list_models`` (mcp.md §12): the OpenAI model object with the runtime's own members."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ListedModel:
    """``id`` is what a definition puts in ``model``; ``owned_by`` the prefix of the provider running it."""

    id: str
    owned_by: str
    created: int = 0
    name: str | None = None
    context_window: int | None = None
    max_tokens: int | None = None
    resolved_to: str | None = None
    pattern: bool = False

    def as_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": self.id, "object": "model", "created": self.created, "owned_by": self.owned_by}
        if self.name is not None:
            entry["name"] = self.name
        if self.context_window is not None:
            entry["context_window"] = self.context_window
        if self.max_tokens is not None:
            entry["max_tokens"] = self.max_tokens
        if self.resolved_to is not None:
            entry["resolved_to"] = self.resolved_to
        if self.pattern:
            entry["pattern"] = True
        return entry
