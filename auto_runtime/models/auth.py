"""How a request proves who sends it: a small pluggable piece per provider.

Keys and tokens the settings hold are plain headers. Bedrock without ``AWS_BEARER_TOKEN_BEDROCK`` signs
with AWS Signature Version 4 (``auto_runtime.aws.signing``) from credentials an ``AwsCredentialSource`` gives (see
``auto_runtime.aws.credentials``); Vertex sends a bearer token a :class:`GoogleTokenSource` gives (see
``google_credentials``). A source that can obtain no credential raises
``credentials_rejected`` (reasoning-format §5.5: "no credential obtainable from a cloud chain").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import httpx

from auto_runtime.aws.signing import AwsCredentialSource, sigv4_headers
from auto_runtime.models.failures import ModelCallFailure


class RequestAuth(Protocol):
    async def apply(self, request: httpx.Request) -> None:
        """Add the credential to ``request`` (headers only); raise ``credentials_rejected`` when there is none."""
        ...


@dataclass(frozen=True)
class HeaderAuth:
    """Fixed headers: ``x-api-key``, ``api-key``, ``x-goog-api-key`` or ``Authorization: Bearer``."""

    headers: Mapping[str, str]

    async def apply(self, request: httpx.Request) -> None:
        request.headers.update(self.headers)


def bearer(token: str) -> HeaderAuth:
    return HeaderAuth({"Authorization": f"Bearer {token}"})


def no_credential(provider: str, what: str) -> ModelCallFailure:
    return ModelCallFailure(
        "credentials_rejected",
        provider,
        f"The server could not obtain {what} for the provider {provider}",
    )


# --- AWS -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AwsSigV4Auth:
    provider: str
    region: str
    source: AwsCredentialSource
    service: str = "bedrock"

    async def apply(self, request: httpx.Request) -> None:
        credentials = await self.source.credentials()
        if credentials is None:
            raise no_credential(self.provider, "AWS credentials from the default chain")
        request.headers.update(
            sigv4_headers(
                method=request.method,
                url=request.url,
                headers={"content-type": request.headers.get("content-type", "application/json")},
                body=request.content,
                credentials=credentials,
                region=self.region,
                service=self.service,
                moment=datetime.now(UTC),
            )
        )


# --- Google ----------------------------------------------------------------------------------------


class GoogleTokenSource(Protocol):
    async def access_token(self) -> str | None: ...


@dataclass(frozen=True)
class GoogleBearerAuth:
    provider: str
    source: GoogleTokenSource

    async def apply(self, request: httpx.Request) -> None:
        token = await self.source.access_token()
        if token is None:
            raise no_credential(self.provider, "Google application default credentials")
        request.headers["Authorization"] = f"Bearer {token}"
