"""The catalog ``list_models`` shows (mcp.md §12).

* Anthropic, OpenAI, Google and each gateway are asked for their own lists; the other providers show
  their ``declared_models``, or ``<prefix>/*`` when none is declared. A gateway whose list cannot be
  read shows its declared models and makes the answer ``partial``.
* Each alias appears under its own name unless its target's provider is not configured; what an alias
  redirects is hidden behind it (a provider wholly behind a ``<prefix>/*`` alias is not even asked).
* ``allowed_models`` filters: an alias stays when its name or target is allowed; a wildcard entry
  only when some wildcard of the allow list covers all it could stand for.
* A provider's list is kept 5 minutes. A failed refresh serves the previous list, makes the answer
  ``partial``, and the next refresh waits a minute.
* Nothing secret is shown: the entries hold ids, names, release times, token limits and prefixes only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import httpx
import trio

from auto_runtime.models.aliases import find_alias
from auto_runtime.models.allow_list import catalog_entry_allowed
from auto_runtime.models.listed import ListedModel
from auto_runtime.models.provider_lists import ListingFailed
from auto_runtime.models.providers import ModelProvider
from auto_runtime.models.references import prefix_of, split_reference

log = logging.getLogger("auto_runtime.models")

KEPT_SECONDS = 300.0
RETRY_AFTER_FAILURE_SECONDS = 60.0
LIST_DEADLINE_SECONDS = 15.0
CatalogStatus = Literal["complete", "partial"]


def iso_utc(seconds: float) -> str:
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass(frozen=True, slots=True)
class ModelList:
    """The answer of ``list_models``: entries in ``id`` order, ``catalog_status`` and ``listed_at``."""

    data: tuple[ListedModel, ...]
    catalog_status: CatalogStatus
    listed_at: str

    def as_json(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [entry.as_json() for entry in self.data],
            "catalog_status": self.catalog_status,
            "listed_at": self.listed_at,
        }


@dataclass
class _CachedList:
    models: list[ListedModel] | None = None
    fetched_at: float | None = None
    failed_at: float | None = None
    lock: trio.Lock = field(default_factory=trio.Lock)


@dataclass(frozen=True, slots=True)
class _ProviderEntries:
    models: list[ListedModel]
    partial: bool
    fetched_at: float | None


class ModelCatalog:
    """Builds ``list_models``' answer; keeps each provider's list for 5 minutes (wall clock ``clock``)."""

    def __init__(
        self,
        providers: Mapping[str, ModelProvider],
        *,
        aliases: Mapping[str, str],
        declared: Mapping[str, Sequence[str]],
        allowed: Sequence[str] | None,
        client: httpx.AsyncClient,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._providers = providers
        self._aliases = aliases
        self._declared = declared
        self._allowed = allowed
        self._client = client
        self._clock = clock
        self._cache: dict[str, _CachedList] = {prefix: _CachedList() for prefix in providers}

    async def list_models(self, provider: str | None = None) -> ModelList:
        """The catalog, or only what concerns one provider prefix or gateway name (asking no other)."""
        entries: dict[str, ListedModel] = {}
        partial = False
        fetched: list[float] = []
        for alias, target in self._aliases.items():
            target_prefix = prefix_of(target)
            if target_prefix not in self._providers:
                continue
            split = split_reference(target)
            arn = split is not None and split.model_id.startswith("arn:")
            entries[alias] = ListedModel(
                id=alias,
                owned_by=target_prefix,
                resolved_to=None if arn else target,
                pattern=alias.endswith("*"),
            )
        for prefix in self._providers:
            if provider is not None and prefix != provider:
                continue
            if f"{prefix}/*" in self._aliases:
                continue  # every model of it is behind the alias
            listed = await self._entries_of(prefix)
            partial = partial or listed.partial
            if listed.fetched_at is not None:
                fetched.append(listed.fetched_at)
            for model in listed.models:
                if model.id not in entries and find_alias(model.id, self._aliases) is None:
                    entries[model.id] = model
        kept = [
            entry
            for entry in entries.values()
            if (provider is None or prefix_of(entry.id) == provider or entry.owned_by == provider)
            and catalog_entry_allowed(self._allowed, entry.id, entry.resolved_to if entry.resolved_to else None)
        ]
        kept.sort(key=lambda entry: entry.id)
        now = self._clock()
        return ModelList(
            data=tuple(kept),
            catalog_status="partial" if partial else "complete",
            listed_at=iso_utc(min(fetched) if fetched else now),
        )

    async def context_window(self, prefix: str, reference: str) -> int | None:
        """The context window the provider's list reports for ``reference``; None when unknown.

        Uses the provider's kept list, reading it first when it is not kept (or stale); a provider without
        a list of its own, or one whose list cannot be read, knows none.
        """
        if prefix not in self._providers:
            return None
        listed = await self._entries_of(prefix)
        for model in listed.models:
            if model.id == reference:
                return model.context_window
        return None

    def _declared_entries(self, prefix: str) -> list[ListedModel]:
        return [ListedModel(id=f"{prefix}/{model}", owned_by=prefix) for model in self._declared.get(prefix, ())]

    async def _entries_of(self, prefix: str) -> _ProviderEntries:
        provider = self._providers[prefix]
        if provider.lister is None:
            declared = self._declared_entries(prefix)
            if declared:
                return _ProviderEntries(declared, False, None)
            return _ProviderEntries([ListedModel(id=f"{prefix}/*", owned_by=prefix, pattern=True)], False, None)
        cached = self._cache[prefix]
        async with cached.lock:
            now = self._clock()
            fresh = cached.fetched_at is not None and now - cached.fetched_at < KEPT_SECONDS
            waiting = cached.failed_at is not None and now - cached.failed_at < RETRY_AFTER_FAILURE_SECONDS
            if fresh and cached.models is not None:
                return _ProviderEntries(cached.models, False, cached.fetched_at)
            if not waiting:
                try:
                    with trio.fail_after(LIST_DEADLINE_SECONDS):
                        models = await provider.lister.read_models(self._client)
                except (ListingFailed, trio.TooSlowError) as error:
                    log.warning("the list of models of %s could not be read: %s", prefix, error or "timed out")
                    cached.failed_at = now
                else:
                    cached.models, cached.fetched_at, cached.failed_at = models, now, None
                    return _ProviderEntries(models, False, now)
            if cached.models is not None:
                return _ProviderEntries(cached.models, True, cached.fetched_at)
            fallback = self._declared_entries(prefix) if provider.gateway is not None else []
            return _ProviderEntries(fallback, True, None)


def catalog_words(listed: ModelList) -> str:
    """The success words of ``list_models`` over MCP: up to twenty models, the providers that take any
    model id, and a warning when the list may be incomplete."""
    concrete = [entry.id for entry in listed.data if not entry.pattern]
    patterns = [entry.id for entry in listed.data if entry.pattern]
    if not listed.data:
        sentence = "This server offers no model a function may name."
    else:
        shown = ", ".join(concrete[:20])
        more = f" and {len(concrete) - 20} more" if len(concrete) > 20 else ""
        sentence = (
            f"This server offers {len(concrete)} models: {shown}{more}." if concrete else "This server lists no model."
        )
        if patterns:
            sentence += (
                " These accept any model id after the prefix: "
                + ", ".join(patterns)
                + " (write the model id in place of *)."
            )
    if listed.catalog_status == "partial":
        sentence += " Some provider's list could not be read just now, so this list may be incomplete."
    return sentence + " Name one of them as a reasoning function's model."
