"""``ModelDirectory``: what the rest of the runtime calls. Built once at start from the settings."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from auto_runtime.aws.credentials import AwsDefaultChain
from auto_runtime.models.answers import ModelAnswer
from auto_runtime.models.conversation import ModelRequest
from auto_runtime.models.deadlines import RetryPolicy
from auto_runtime.models.google_credentials import ApplicationDefaultCredentials
from auto_runtime.models.http_client import model_http_client, ssl_context
from auto_runtime.models.listing import ModelCatalog, ModelList
from auto_runtime.models.provider_options import check_gateway_options
from auto_runtime.models.provider_words import Scrubber
from auto_runtime.models.providers import CloudCredentials, ModelProvider, configured_providers
from auto_runtime.models.resolution import ResolvedModel, resolve_reference
from auto_runtime.settings import Settings
from auto_runtime.settings.model_settings import BUILT_IN_PROVIDERS
from auto_runtime.telemetry import model_call_span


def gateway_keys(settings: Settings, environ: Mapping[str, str]) -> dict[str, str]:
    """Each gateway's key: its ``api_key`` (the file's reference already taken), or the variable its
    ``api_key_env`` names (MODEL_GATEWAYS only; the settings checked at start that it is set)."""
    keys: dict[str, str] = {}
    for gateway in settings.model_gateways:
        if gateway.api_key:
            keys[gateway.name] = gateway.api_key
        elif gateway.api_key_env and environ.get(gateway.api_key_env):
            keys[gateway.name] = environ[gateway.api_key_env]
    return keys


class ModelDirectory:
    """The configured providers, aliases, allow list and catalog of this server.

    * :meth:`resolve` admits a reference without calling anything, or raises ``ModelNotOffered``.
    * :meth:`check_provider_options` refuses gateway options the entry does not allow
      (``ProviderOptionRefused``), also without calling anything.
    * :meth:`call` makes one model call within its deadline, or raises ``ModelCallFailure``.
    * :meth:`list_models` answers ``list_models``.
    """

    def __init__(
        self,
        settings: Settings,
        providers: Mapping[str, ModelProvider],
        *,
        client: httpx.AsyncClient,
        local_client: httpx.AsyncClient | None = None,
        secrets: frozenset[str] = frozenset(),
        retry: RetryPolicy | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._providers = dict(providers)
        self._client = client
        self._local_client = local_client
        self._scrub = Scrubber.of(secrets)
        self._retry = retry or RetryPolicy()
        self._catalog = ModelCatalog(
            self._providers,
            aliases=settings.model_aliases,
            declared=settings.declared_models,
            allowed=settings.allowed_models,
            client=client,
            clock=clock,
        )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        secrets: frozenset[str] = frozenset(),
        environ: Mapping[str, str] | None = None,
        cloud: CloudCredentials | None = None,
        retry: RetryPolicy | None = None,
        clock: Callable[[], float] = time.time,
    ) -> ModelDirectory:
        """``secrets`` are the values to scrub from provider words (``LoadedSettings.secret_values``);
        ``environ`` is read here for a gateway's ``api_key_env``, and kept by the cloud credential chains
        (AWS default chain, Google application default credentials), which read their files and
        endpoints when a call needs them. ``cloud`` replaces those sources."""
        environ = environ or {}
        client = model_http_client(settings)
        # metadata endpoints: link-local, never proxied
        local_client = httpx.AsyncClient(trust_env=False, verify=ssl_context(None))
        if cloud is None:
            cloud = CloudCredentials(
                aws=AwsDefaultChain(local_client, environ),
                google=ApplicationDefaultCredentials(client, environ, metadata_client=local_client),
            )
        keys = gateway_keys(settings, environ)
        provider_secrets = {
            value
            for value in (
                settings.anthropic_api_key,
                settings.anthropic_auth_token,
                settings.openai_api_key,
                settings.google_generative_ai_api_key,
                settings.aws_bearer_token_bedrock,
                settings.azure_api_key,
            )
            if value
        }
        all_secrets = frozenset(secrets | provider_secrets | set(keys.values()))
        providers = configured_providers(settings, cloud, keys)
        return cls(
            settings,
            providers,
            client=client,
            local_client=local_client,
            secrets=all_secrets,
            retry=retry,
            clock=clock,
        )

    @property
    def configured(self) -> frozenset[str]:
        """The prefixes of configured providers and gateways."""
        return frozenset(self._providers)

    def resolve(self, reference: str) -> ResolvedModel:
        """Aliases, allow list, provider configured (§4.1); raises ``ModelNotOffered``."""
        known = BUILT_IN_PROVIDERS | {gateway.name for gateway in self._settings.model_gateways}
        return resolve_reference(
            reference,
            aliases=self._settings.model_aliases,
            allowed=self._settings.allowed_models,
            configured=self.configured,
            known_prefixes=known,
        )

    def check_provider_options(self, options: Mapping[str, Mapping[str, Any]]) -> None:
        """Gateway namespaces and their options (§4.5); raises ``ProviderOptionRefused``."""
        check_gateway_options(options, self._settings.model_gateways)

    async def call(
        self,
        model: ResolvedModel,
        request: ModelRequest,
        *,
        run_id: str | None = None,
        deadline_seconds: float | None = None,
    ) -> ModelAnswer:
        """One model call; ``deadline_seconds`` defaults to §4.6's (60 s + 25 ms per output token)."""
        provider = self._providers[model.provider]
        with model_call_span(model.provider, model.model_id, run_id, request) as span:
            return span.output(
                await provider.call(
                    self._client,
                    model.model_id,
                    request,
                    scrub=self._scrub,
                    retry=self._retry,
                    deadline_seconds=deadline_seconds,
                    run_id=run_id,
                )
            )

    async def context_window(self, model: ResolvedModel) -> int | None:
        """The model's context window in tokens when its provider's list reports one (§7.3 sizes tool
        results by it; "whole when the window is unknown"). May read the provider's list, kept 5 minutes."""
        return await self._catalog.context_window(model.provider, model.resolved)

    async def list_models(self, provider: str | None = None) -> ModelList:
        return await self._catalog.list_models(provider)

    async def aclose(self) -> None:
        await self._client.aclose()
        if self._local_client is not None:
            await self._local_client.aclose()
