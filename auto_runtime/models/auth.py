"""How a request proves who sends it: a small pluggable piece per provider.

Keys and tokens the settings hold are plain headers. Bedrock without ``AWS_BEARER_TOKEN_BEDROCK`` signs
with AWS Signature Version 4 from credentials an :class:`AwsCredentialSource` gives (see
``aws_credentials``); Vertex sends a bearer token a :class:`GoogleTokenSource` gives (see
``google_credentials``). A source that can obtain no credential raises
``credentials_rejected`` (reasoning-format §5.5: "no credential obtainable from a cloud chain").
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol
from urllib.parse import quote

import httpx

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
class AwsCredentials:
    access_key_id: str
    secret_access_key: str
    session_token: str | None = None


class AwsCredentialSource(Protocol):
    async def credentials(self) -> AwsCredentials | None: ...


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def sigv4_stamp(moment: datetime) -> str:
    """The time a Signature Version 4 signature names: ``YYYYMMDDTHHMMSSZ`` in UTC."""
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def sigv4_scope(stamp: str, region: str, service: str) -> str:
    """The credential scope of a signature made at ``stamp``: ``day/region/service/aws4_request``."""
    return f"{stamp[:8]}/{region}/{service}/aws4_request"


def sigv4_signature(
    canonical_request: str, *, stamp: str, region: str, service: str, credentials: AwsCredentials
) -> str:
    """The hex Signature Version 4 signature of a canonical request, made at ``stamp`` (see ``sigv4_stamp``),
    whether the signature then travels in a header (``sigv4_headers``) or in a presigned URL's query."""
    scope = sigv4_scope(stamp, region, service)
    digest = hashlib.sha256(canonical_request.encode("utf-8")).hexdigest()
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, digest])
    key = _hmac(("AWS4" + credentials.secret_access_key).encode("utf-8"), stamp[:8])
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    return hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def sigv4_headers(
    *,
    method: str,
    url: httpx.URL,
    headers: Mapping[str, str],
    body: bytes,
    credentials: AwsCredentials,
    region: str,
    service: str,
    moment: datetime,
) -> dict[str, str]:
    """The headers AWS Signature Version 4 adds: ``x-amz-date``, the session token, ``Authorization``.

    Signs ``host``, ``x-amz-date``, the session token and the headers given (lower-cased). The path is
    URI-encoded once more, as every service but S3 expects.
    """
    stamp = sigv4_stamp(moment)
    signed: dict[str, str] = {name.lower(): " ".join(value.split()) for name, value in headers.items()}
    signed["host"] = url.netloc.decode("ascii")
    signed["x-amz-date"] = stamp
    if credentials.session_token:
        signed["x-amz-security-token"] = credentials.session_token
    names = sorted(signed)
    canonical_headers = "".join(f"{name}:{signed[name]}\n" for name in names)
    signed_names = ";".join(names)
    path = quote(url.raw_path.decode("ascii").split("?")[0] or "/", safe="/-_.~%")
    path = quote(path, safe="/-_.~")
    query = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in sorted(url.params.multi_items()))
    canonical = "\n".join(
        [method.upper(), path, query, canonical_headers, signed_names, hashlib.sha256(body).hexdigest()]
    )
    scope = sigv4_scope(stamp, region, service)
    signature = sigv4_signature(canonical, stamp=stamp, region=region, service=service, credentials=credentials)
    added = {"x-amz-date": stamp}
    if credentials.session_token:
        added["x-amz-security-token"] = credentials.session_token
    added["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={credentials.access_key_id}/{scope}, "
        f"SignedHeaders={signed_names}, Signature={signature}"
    )
    return added


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
