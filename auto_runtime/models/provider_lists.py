"""Reading a provider's own list of models: gateways and OpenAI (``GET <base>/models``), Anthropic
(``GET <base>/models``, paged) and Gemini (``GET .../v1beta/models``, paged). Only ids, names, release
times and token limits are kept; never an owner, price or anything else the provider reports."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import httpx

from auto_runtime.models.auth import RequestAuth
from auto_runtime.models.listed import ListedModel
from auto_runtime.models.protocols.common import number, text_or_none

MOST_PAGES = 20


class ListingFailed(Exception):
    """The list could not be read; the message is for the operator's log only."""


class ModelLister(Protocol):
    async def read_models(self, client: httpx.AsyncClient) -> list[ListedModel]: ...


async def _get_json(
    client: httpx.AsyncClient,
    url: str,
    *,
    headers: Mapping[str, str],
    params: Mapping[str, str],
    auth: RequestAuth | None,
) -> Any:
    request = client.build_request("GET", url, headers=dict(headers), params=dict(params))
    if auth is not None:
        try:
            await auth.apply(request)
        except Exception as error:
            raise ListingFailed(f"no credential for the list: {error}") from error
    try:
        response = await client.send(request)
        body = await response.aread()
    except httpx.HTTPError as error:
        raise ListingFailed(f"{type(error).__name__}: {error}") from error
    if response.status_code != 200:
        raise ListingFailed(f"HTTP {response.status_code}: {body[:2000].decode('utf-8', errors='replace')}")
    try:
        return response.json()
    except ValueError as error:
        raise ListingFailed("the list is not JSON") from error


async def _pages(
    client: httpx.AsyncClient,
    url: str,
    *,
    headers: Mapping[str, str],
    auth: RequestAuth | None,
    params: Mapping[str, str],
    following: Callable[[Any], Mapping[str, str] | None],
) -> AsyncIterator[Any]:
    """Each page of a paged list, at most :data:`MOST_PAGES`; ``following`` gives the next page's
    parameters from the page just read, or None when it was the last."""
    next_params: Mapping[str, str] | None = params
    for _ in range(MOST_PAGES):
        if next_params is None:
            return
        document = await _get_json(client, url, headers=headers, params=next_params, auth=auth)
        yield document
        next_params = following(document)


def _entries(document: Any, member: str) -> list[Any]:
    """The list's array of entries, ``document[member]``."""
    entries = document.get(member) if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise ListingFailed(f"the list has no {member} array")
    return entries


def _created(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())
        except ValueError:
            return 0
    return 0


@dataclass(frozen=True)
class OpenAIModelsList:
    """``{data: [{id, created?, type?}]}``; entries whose ``type`` is not ``language`` are skipped."""

    prefix: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    auth: RequestAuth | None = None

    async def read_models(self, client: httpx.AsyncClient) -> list[ListedModel]:
        document = await _get_json(client, self.url, headers=self.headers, params=self.params, auth=self.auth)
        models: list[ListedModel] = []
        for item in _entries(document, "data"):
            if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
                continue
            if "type" in item and item["type"] != "language":
                continue
            models.append(
                ListedModel(
                    id=f"{self.prefix}/{item['id']}",
                    owned_by=self.prefix,
                    created=_created(item.get("created")),
                    name=text_or_none(item.get("name")),
                    context_window=number(item.get("context_window")),
                    max_tokens=number(item.get("max_tokens")),
                )
            )
        return models


@dataclass(frozen=True)
class AnthropicModelsList:
    """``{data: [{id, display_name, created_at}], has_more, last_id}``, read page after page."""

    prefix: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    auth: RequestAuth | None = None

    async def read_models(self, client: httpx.AsyncClient) -> list[ListedModel]:
        models: list[ListedModel] = []
        pages = _pages(
            client, self.url, headers=self.headers, auth=self.auth, params={"limit": "1000"}, following=_after_last
        )
        async for document in pages:
            models.extend(
                ListedModel(
                    id=f"{self.prefix}/{item['id']}",
                    owned_by=self.prefix,
                    created=_created(item.get("created_at")),
                    name=text_or_none(item.get("display_name")),
                )
                for item in _entries(document, "data")
                if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"]
            )
        return models


def _after_last(document: Any) -> Mapping[str, str] | None:
    last = document.get("last_id")
    if document.get("has_more") is not True or not isinstance(last, str):
        return None
    return {"limit": "1000", "after_id": last}


@dataclass(frozen=True)
class GeminiModelsList:
    """``{models: [{name: "models/<id>", displayName, inputTokenLimit, outputTokenLimit,
    supportedGenerationMethods}], nextPageToken}``; models that cannot ``generateContent`` are skipped."""

    prefix: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    auth: RequestAuth | None = None

    async def read_models(self, client: httpx.AsyncClient) -> list[ListedModel]:
        models: list[ListedModel] = []
        pages = _pages(
            client, self.url, headers=self.headers, auth=self.auth, params={"pageSize": "1000"}, following=_next_page
        )
        async for document in pages:
            for item in _entries(document, "models"):
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    continue
                methods = item.get("supportedGenerationMethods")
                if isinstance(methods, list) and "generateContent" not in methods:
                    continue
                model_id = item["name"].removeprefix("models/")
                models.append(
                    ListedModel(
                        id=f"{self.prefix}/{model_id}",
                        owned_by=self.prefix,
                        name=text_or_none(item.get("displayName")),
                        context_window=number(item.get("inputTokenLimit")),
                        max_tokens=number(item.get("outputTokenLimit")),
                    )
                )
        return models


def _next_page(document: Any) -> Mapping[str, str] | None:
    token = document.get("nextPageToken")
    if not isinstance(token, str) or not token:
        return None
    return {"pageSize": "1000", "pageToken": token}
