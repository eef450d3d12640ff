"""The providers this server can call, built once from the settings (reasoning-format §4.2).

A provider counts as configured once every setting of its Required column is set. Each configured one
becomes a :class:`ModelProvider`: its wire protocol, the URL for a model id, how requests are
authenticated, whether the caller may see its own error words (§4.7), and how its list is read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from urllib.parse import quote

import httpx

from auto_runtime.aws.signing import AwsCredentialSource
from auto_runtime.models.answers import ModelAnswer
from auto_runtime.models.auth import (
    AwsSigV4Auth,
    GoogleBearerAuth,
    GoogleTokenSource,
    HeaderAuth,
    RequestAuth,
    bearer,
)
from auto_runtime.models.conversation import ModelRequest
from auto_runtime.models.deadlines import RetryPolicy, call_deadline_seconds
from auto_runtime.models.protocols.anthropic_messages import ANTHROPIC_VERSION, AnthropicMessages
from auto_runtime.models.protocols.bedrock_converse import BedrockConverse
from auto_runtime.models.protocols.common import WireProtocol
from auto_runtime.models.protocols.gemini import Gemini
from auto_runtime.models.protocols.openai_chat import OpenAIChat
from auto_runtime.models.protocols.openai_responses import OpenAIResponses
from auto_runtime.models.provider_lists import (
    AnthropicModelsList,
    GeminiModelsList,
    ModelLister,
    OpenAIModelsList,
)
from auto_runtime.models.provider_words import Scrubber
from auto_runtime.models.sending import send_with_retries
from auto_runtime.settings import ModelGateway, Settings

log = logging.getLogger("auto_runtime.models")

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com/v1"
GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
AZURE_DEFAULT_API_VERSION = "v1"


@dataclass(frozen=True)
class ModelProvider:
    """One configured provider prefix.

    ``url_for`` gives the URL of one call for a model id. ``expose_words`` is §4.7's rule: a built-in
    provider on its standard endpoint, or a gateway whose entry sets ``expose_provider_messages``.
    ``lister`` None means the provider has no list of its own (declared models, else ``<prefix>/*``).
    """

    prefix: str
    protocol: WireProtocol
    url_for: Callable[[str], str]
    auth: RequestAuth | None
    expose_words: bool
    headers: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    lister: ModelLister | None = None
    gateway: ModelGateway | None = None

    async def call(
        self,
        client: httpx.AsyncClient,
        model_id: str,
        request: ModelRequest,
        *,
        scrub: Scrubber,
        retry: RetryPolicy,
        deadline_seconds: float | None = None,
        run_id: str | None = None,
    ) -> ModelAnswer:
        """One model call within its deadline (default §4.6's), retried as §4.6 says."""
        body, warnings = self.protocol.body(model_id, request)
        scrub = scrub.with_prompts(request.prompt_texts)
        url = self.url_for(model_id)

        async def build() -> httpx.Request:
            built = client.build_request(
                "POST",
                url,
                json=body,
                headers={**self.headers, "Content-Type": "application/json"},
                params=dict(self.params) or None,
            )
            if self.auth is not None:
                await self.auth.apply(built)
            return built

        deadline = deadline_seconds or call_deadline_seconds(request.settings.max_output_tokens)
        log.debug("model call to %s, model %s (run %s)", self.prefix, model_id, run_id or "-")
        response = await send_with_retries(
            client,
            build,
            provider=self.prefix,
            expose_words=self.expose_words,
            scrub=scrub,
            deadline_seconds=deadline,
            retry=retry,
            run_id=run_id,
        )
        answer = self.protocol.answer(response.body, scrub, request)
        if warnings:
            answer = replace(answer, warnings=warnings + answer.warnings)
        return answer


@dataclass(frozen=True)
class CloudCredentials:
    """Where the cloud providers' credentials come from; pluggable, since tests cannot reach a cloud."""

    aws: AwsCredentialSource
    google: GoogleTokenSource


def _model_path(model_id: str) -> str:
    return quote(model_id, safe="")


def gateway_provider(gateway: ModelGateway, api_key: str | None) -> ModelProvider:
    auth = bearer(api_key) if api_key else None
    return ModelProvider(
        prefix=gateway.name,
        protocol=OpenAIChat(gateway.name, gateway=gateway),
        url_for=lambda _model: f"{gateway.base_url}/chat/completions",
        auth=auth,
        expose_words=gateway.expose_provider_messages,
        headers=dict(gateway.headers),
        params=dict(gateway.query_params),
        lister=OpenAIModelsList(
            gateway.name,
            f"{gateway.base_url}/models",
            headers=dict(gateway.headers),
            params=dict(gateway.query_params),
            auth=auth,
        ),
        gateway=gateway,
    )


def _openai(settings: Settings) -> ModelProvider | None:
    if not settings.openai_api_key:
        return None
    base = (settings.openai_base_url or OPENAI_BASE_URL).rstrip("/")
    auth = bearer(settings.openai_api_key)
    chat = settings.openai_api == "chat_completions"
    protocol: WireProtocol = OpenAIChat("openai") if chat else OpenAIResponses("openai")
    path = "/chat/completions" if chat else "/responses"
    return ModelProvider(
        prefix="openai",
        protocol=protocol,
        url_for=lambda _model: base + path,
        auth=auth,
        expose_words=settings.openai_base_url is None,
        lister=OpenAIModelsList("openai", f"{base}/models", auth=auth),
    )


def _anthropic(settings: Settings) -> ModelProvider | None:
    if settings.anthropic_api_key:
        auth = HeaderAuth({"x-api-key": settings.anthropic_api_key})
    elif settings.anthropic_auth_token:
        auth = bearer(settings.anthropic_auth_token)
    else:
        return None
    base = (settings.anthropic_base_url or ANTHROPIC_BASE_URL).rstrip("/")
    headers = {"anthropic-version": ANTHROPIC_VERSION}
    return ModelProvider(
        prefix="anthropic",
        protocol=AnthropicMessages("anthropic"),
        url_for=lambda _model: f"{base}/messages",
        auth=auth,
        expose_words=settings.anthropic_base_url is None,
        headers=headers,
        lister=AnthropicModelsList("anthropic", f"{base}/models", headers=headers, auth=auth),
    )


def _google(settings: Settings) -> ModelProvider | None:
    if not settings.google_generative_ai_api_key:
        return None
    auth = HeaderAuth({"x-goog-api-key": settings.google_generative_ai_api_key})
    return ModelProvider(
        prefix="google",
        protocol=Gemini("google"),
        url_for=lambda model: f"{GEMINI_BASE_URL}/models/{_model_path(model)}:generateContent",
        auth=auth,
        expose_words=True,
        lister=GeminiModelsList("google", f"{GEMINI_BASE_URL}/models", auth=auth),
    )


def bedrock_endpoint(settings: Settings) -> str:
    """``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, else ``AWS_ENDPOINT_URL``, else the region's own endpoint."""
    override = settings.aws_endpoint_url_bedrock_runtime or settings.aws_endpoint_url
    return (override or f"https://bedrock-runtime.{settings.aws_region}.amazonaws.com").rstrip("/")


def _bedrock(settings: Settings, cloud: CloudCredentials, prefix: str) -> ModelProvider | None:
    if not settings.aws_region:
        return None
    endpoint = bedrock_endpoint(settings)
    auth: RequestAuth
    if settings.aws_bearer_token_bedrock:
        auth = bearer(settings.aws_bearer_token_bedrock)
    else:
        auth = AwsSigV4Auth(prefix, settings.aws_region, cloud.aws)
    expose = settings.aws_endpoint_url_bedrock_runtime is None and settings.aws_endpoint_url is None
    if prefix == "bedrock":
        return ModelProvider(
            prefix=prefix,
            protocol=BedrockConverse(prefix),
            url_for=lambda model: f"{endpoint}/model/{_model_path(model)}/converse",
            auth=auth,
            expose_words=expose,
        )
    return ModelProvider(
        prefix=prefix,
        protocol=AnthropicMessages(prefix, flavor="bedrock"),
        url_for=lambda model: f"{endpoint}/model/{_model_path(model)}/invoke",
        auth=auth,
        expose_words=expose,
    )


def azure_base(settings: Settings) -> str | None:
    if settings.azure_base_url:
        return settings.azure_base_url.rstrip("/")
    if settings.azure_resource_name:
        return f"https://{settings.azure_resource_name}.openai.azure.com/openai"
    return None


def _azure(settings: Settings) -> ModelProvider | None:
    base = azure_base(settings)
    if base is None or not settings.azure_api_key:
        return None
    return ModelProvider(
        prefix="azure",
        protocol=OpenAIResponses("azure", options_provider="azure"),
        url_for=lambda _deployment: f"{base}/v1/responses",
        auth=HeaderAuth({"api-key": settings.azure_api_key}),
        expose_words=settings.azure_base_url is None,
        params={"api-version": settings.azure_api_version or AZURE_DEFAULT_API_VERSION},
    )


def vertex_base(project: str, location: str) -> str:
    host = "aiplatform.googleapis.com" if location == "global" else f"{location}-aiplatform.googleapis.com"
    return f"https://{host}/v1/projects/{quote(project, safe='')}/locations/{quote(location, safe='')}"


def _vertex(settings: Settings, cloud: CloudCredentials, prefix: str) -> ModelProvider | None:
    if not settings.google_vertex_project or not settings.google_vertex_location:
        return None
    base = vertex_base(settings.google_vertex_project, settings.google_vertex_location)
    auth = GoogleBearerAuth(prefix, cloud.google)
    if prefix == "vertex":
        return ModelProvider(
            prefix=prefix,
            protocol=Gemini(prefix),
            url_for=lambda model: f"{base}/publishers/google/models/{_model_path(model)}:generateContent",
            auth=auth,
            expose_words=True,
        )
    return ModelProvider(
        prefix=prefix,
        protocol=AnthropicMessages(prefix, flavor="vertex"),
        url_for=lambda model: f"{base}/publishers/anthropic/models/{_model_path(model)}:rawPredict",
        auth=auth,
        expose_words=True,
    )


def configured_providers(
    settings: Settings, cloud: CloudCredentials, gateway_keys: Mapping[str, str]
) -> dict[str, ModelProvider]:
    """Every configured provider by prefix. ``gateway_keys`` holds each gateway's key by name, whether
    the entry gave it as ``api_key`` or through ``api_key_env``."""
    built = {
        "anthropic": _anthropic(settings),
        "openai": _openai(settings),
        "google": _google(settings),
        "bedrock": _bedrock(settings, cloud, "bedrock"),
        "bedrock-anthropic": _bedrock(settings, cloud, "bedrock-anthropic"),
        "azure": _azure(settings),
        "vertex": _vertex(settings, cloud, "vertex"),
        "vertex-anthropic": _vertex(settings, cloud, "vertex-anthropic"),
    }
    providers = {prefix: provider for prefix, provider in built.items() if provider is not None}
    for gateway in settings.model_gateways:
        providers[gateway.name] = gateway_provider(gateway, gateway_keys.get(gateway.name))
    return providers


def partly_configured(settings: Settings) -> list[str]:
    """Start-up log lines for providers with some but not all of their required settings; names, never values."""
    lines: list[str] = []
    if settings.anthropic_base_url and not (settings.anthropic_api_key or settings.anthropic_auth_token):
        lines.append("anthropic is not configured: ANTHROPIC_BASE_URL is set but ANTHROPIC_API_KEY is not")
    if (settings.openai_base_url or settings.openai_api != "responses") and not settings.openai_api_key:
        lines.append("openai is not configured: OPENAI_API_KEY is not set")
    if (settings.aws_bearer_token_bedrock or settings.aws_endpoint_url_bedrock_runtime) and not settings.aws_region:
        lines.append("bedrock is not configured: AWS_REGION is not set")
    if (settings.azure_resource_name or settings.azure_base_url or settings.azure_api_key) and _azure(settings) is None:
        missing = "AZURE_API_KEY" if azure_base(settings) else "AZURE_RESOURCE_NAME or AZURE_BASE_URL"
        lines.append(f"azure is not configured: {missing} is not set")
    if bool(settings.google_vertex_project) != bool(settings.google_vertex_location):
        missing = "GOOGLE_VERTEX_LOCATION" if settings.google_vertex_project else "GOOGLE_VERTEX_PROJECT"
        lines.append(f"vertex is not configured: {missing} is not set")
    return lines
