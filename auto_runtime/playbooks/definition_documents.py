"""The one cache of parsed definition documents, owned by the playbook actors (`playbook_host`).

A run needs its definition's document parsed (a computation's program, a reasoning function's template, a
workflow's steps); parsing is worth keeping, since a reasoning document takes up to a few hundred milliseconds.
`DefinitionDocuments` keeps the parsed documents of the versions runs asked for, keyed by (org, playbook, type,
name, version): a version's source never changes, so an entry is right on every server, and the version a
caller names is the one it gets (a run takes its definition's current version as the `definitions`
projection answers it, one indexed row, so another server's save is seen at once; a trigger names the version
current when its event was recorded).

Ownership: the entries of a playbook belong to its actor. They are dropped when the actor starts (a new life,
or a restart after its runs failed, rebuilds them from the ledger's sources as runs ask) and when it leaves
the registry, so a passivated playbook holds no document. The whole cache is bounded (`max_entries`, least
recently used first), so 10,000 live playbooks cannot make it grow without bound.

Concurrency: used on the Trio thread only; every change to the map is synchronous. Two runs that miss the
same entry at once both parse it (the second store wins; both documents are equal). A source that no longer
parses is answered as the type's `Rejection` (`unworkable`) and kept out of the cache.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from cachetools import LRUCache

from auto_runtime.functions.function_type import FunctionType
from auto_runtime.problems import Rejection

DOCUMENTS_KEPT = 512
"""Parsed documents kept for all playbooks together."""

PlaybookKey = tuple[str, str]
DocumentKey = tuple[str, str, str, str, int]
"""(org, playbook, type, name, version)."""
SourceOf = Callable[[], Awaitable[str]]


class DefinitionDocuments:
    """Parsed documents of definition versions (see the module's rules)."""

    def __init__(self, types: Mapping[str, FunctionType], max_entries: int = DOCUMENTS_KEPT) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be >= 1")
        self.types = types
        self.max_entries = max_entries
        self._by_playbook: dict[PlaybookKey, set[DocumentKey]] = {}
        self._entries: _Entries = _Entries(max_entries, self._by_playbook)
        self.parses = 0
        """Sources parsed so far (each miss parses once)."""

    def __len__(self) -> int:
        return len(self._entries)

    def holds(self, playbook: PlaybookKey) -> int:
        """How many documents of the playbook are kept now."""
        return len(self._by_playbook.get(playbook, ()))

    async def parsed(
        self, playbook: PlaybookKey, definition_type: str, name: str, version: int, source: str | SourceOf
    ) -> Any | Rejection:
        """The parsed document of the version (`source` is its source, or a function that reads it when the
        version is not kept); a source that no longer parses answers the type's `Rejection`."""
        key = (playbook[0], playbook[1], definition_type, name, version)
        found = self._entries.get(key, _MISSING)
        if found is not _MISSING:
            return found
        text = source if isinstance(source, str) else await source()
        self.parses += 1
        document = await self.types[definition_type].parse(text)
        if isinstance(document, Rejection):
            return document
        self._keep(playbook, key, document)
        return document

    def forget(self, playbook: PlaybookKey) -> None:
        """Drop the playbook's documents (its actor starts, restarts or leaves)."""
        for key in self._by_playbook.pop(playbook, ()):
            self._entries.pop(key, None)

    def _keep(self, playbook: PlaybookKey, key: DocumentKey, document: Any) -> None:
        self._by_playbook.setdefault(playbook, set()).add(key)
        self._entries[key] = document


class _Entries(LRUCache[DocumentKey, Any]):
    """The documents, least recently used evicted first; an eviction also drops the key from its playbook's set."""

    def __init__(self, max_entries: int, by_playbook: dict[PlaybookKey, set[DocumentKey]]) -> None:
        super().__init__(max_entries)
        self._by_playbook = by_playbook

    def popitem(self) -> tuple[DocumentKey, Any]:
        oldest, document = super().popitem()
        owner = (oldest[0], oldest[1])
        kept = self._by_playbook.get(owner)
        if kept is not None:
            kept.discard(oldest)
            if not kept:
                del self._by_playbook[owner]
        return oldest, document


_MISSING = object()
