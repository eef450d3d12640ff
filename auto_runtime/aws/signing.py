"""AWS Signature Version 4: the credentials a request is signed with and the signature itself.

Below both rooms that sign: the models (Bedrock's requests, `models.auth.AwsSigV4Auth`) and the ledger (S3
requests for content, `ledger.s3_requests`, and RDS IAM sign-in tokens, `ledger.postgres.iam_auth`). Where the
credentials come from is `aws.credentials`.
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
