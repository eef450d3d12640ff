"""Reading a provider's own list of models: gateways and OpenAI (``GET <base>/models``), Anthropic
(``GET <base>/models``, paged) and Gemini (``GET .../v1beta/models``, paged). Only ids, names, release
times and token limits are kept; never an owner, price or anything else the provider reports."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import httpx

from auto_runtime.models.auth import RequestAuth
from auto_runtime.models.listed import ListedModel
from auto_runtime.models.protocols.common import number

MOST_PAGES = 20


class ListingFailed(Exception):
    """The list could not be read; the message is for the operator's log only."""


class ModelLister(Protocol):
    async def fetch(self, client: httpx.AsyncClient) -> list[ListedModel]: ...


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

    async def fetch(self, client: httpx.AsyncClient) -> list[ListedModel]:
        document = await _get_json(client, self.url, headers=self.headers, params=self.params, auth=self.auth)
        data = document.get("data") if isinstance(document, dict) else None
        if not isinstance(data, list):
            raise ListingFailed("the list has no data array")
        models: list[ListedModel] = []
        for item in data:
            if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
                continue
            if "type" in item and item["type"] != "language":
                continue
            name = item.get("name")
            models.append(
                ListedModel(
                    id=f"{self.prefix}/{item['id']}",
                    owned_by=self.prefix,
                    created=_created(item.get("created")),
                    name=name if isinstance(name, str) else None,
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

    async def fetch(self, client: httpx.AsyncClient) -> list[ListedModel]:
        models: list[ListedModel] = []
        params = {"limit": "1000"}
        for _ in range(MOST_PAGES):
            document = await _get_json(client, self.url, headers=self.headers, params=params, auth=self.auth)
            data = document.get("data") if isinstance(document, dict) else None
            if not isinstance(data, list):
                raise ListingFailed("the list has no data array")
            for item in data:
                if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"]:
                    name = item.get("display_name")
                    models.append(
                        ListedModel(
                            id=f"{self.prefix}/{item['id']}",
                            owned_by=self.prefix,
                            created=_created(item.get("created_at")),
                            name=name if isinstance(name, str) else None,
                        )
                    )
            last = document.get("last_id")
            if document.get("has_more") is not True or not isinstance(last, str):
                break
            params = {"limit": "1000", "after_id": last}
        return models


@dataclass(frozen=True)
class GeminiModelsList:
    """``{models: [{name: "models/<id>", displayName, inputTokenLimit, outputTokenLimit,
    supportedGenerationMethods}], nextPageToken}``; models that cannot ``generateContent`` are skipped."""

    prefix: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    auth: RequestAuth | None = None

    async def fetch(self, client: httpx.AsyncClient) -> list[ListedModel]:
        models: list[ListedModel] = []
        params = {"pageSize": "1000"}
        for _ in range(MOST_PAGES):
            document = await _get_json(client, self.url, headers=self.headers, params=params, auth=self.auth)
            items = document.get("models") if isinstance(document, dict) else None
            if not isinstance(items, list):
                raise ListingFailed("the list has no models array")
            for item in items:
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    continue
                methods = item.get("supportedGenerationMethods")
                if isinstance(methods, list) and "generateContent" not in methods:
                    continue
                model_id = item["name"].removeprefix("models/")
                name = item.get("displayName")
                models.append(
                    ListedModel(
                        id=f"{self.prefix}/{model_id}",
                        owned_by=self.prefix,
                        name=name if isinstance(name, str) else None,
                        context_window=number(item.get("inputTokenLimit")),
                        max_tokens=number(item.get("outputTokenLimit")),
                    )
                )
            token = document.get("nextPageToken")
            if not isinstance(token, str) or not token:
                break
            params = {"pageSize": "1000", "pageToken": token}
        return models
