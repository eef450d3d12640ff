"""The AWS default credential chain, as far as this server follows it, read when a call needs it.

In order: the environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``);
the shared credentials file (``AWS_SHARED_CREDENTIALS_FILE``, else ``~/.aws/credentials``) under
``AWS_PROFILE`` or ``default``; the container endpoint (``AWS_CONTAINER_CREDENTIALS_FULL_URI`` or
``..._RELATIVE_URI``, with ``AWS_CONTAINER_AUTHORIZATION_TOKEN``); the EC2 instance metadata service
(IMDSv2, at ``AWS_EC2_METADATA_SERVICE_ENDPOINT`` when set) unless ``AWS_EC2_METADATA_DISABLED`` is
true. Web identity (``AWS_WEB_IDENTITY_TOKEN_FILE``), SSO and ``credential_process`` are not followed.
Temporary credentials are kept until five minutes before they expire.
"""

from __future__ import annotations

import configparser
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import trio

from auto_runtime.aws.signing import AwsCredentials

log = logging.getLogger("auto_runtime.aws")

CONTAINER_HOST = "http://169.254.170.2"
IMDS = "http://169.254.169.254"
REFRESH_BEFORE_SECONDS = 300.0
ENDPOINT_SECONDS = 2.0


@dataclass(frozen=True)
class StaticAwsCredentials:
    """Credentials given whole (tests, or an embedding program); None obtains nothing."""

    value: AwsCredentials | None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> StaticAwsCredentials:
        key, secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
        if not key or not secret:
            return cls(None)
        return cls(AwsCredentials(key, secret, environ.get("AWS_SESSION_TOKEN") or None))

    async def credentials(self) -> AwsCredentials | None:
        return self.value


def shared_file_credentials(environ: Mapping[str, str]) -> AwsCredentials | None:
    path_text = environ.get("AWS_SHARED_CREDENTIALS_FILE")
    if path_text:
        path = Path(path_text).expanduser()
    elif environ.get("HOME"):
        path = Path(environ["HOME"]) / ".aws" / "credentials"
    else:
        return None
    parser = configparser.ConfigParser()
    try:
        if not parser.read(path, encoding="utf-8"):
            return None
    except configparser.Error:
        log.warning("the AWS shared credentials file %s cannot be read", path)
        return None
    profile = environ.get("AWS_PROFILE") or "default"
    if not parser.has_section(profile):
        return None
    section = parser[profile]
    key, secret = section.get("aws_access_key_id"), section.get("aws_secret_access_key")
    if not key or not secret:
        return None
    return AwsCredentials(key.strip(), secret.strip(), (section.get("aws_session_token") or "").strip() or None)


def _expiry(document: Mapping[str, Any]) -> float | None:
    text = document.get("Expiration")
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).timestamp()
    except ValueError:
        return None


def _temporary(document: Any) -> tuple[AwsCredentials, float | None] | None:
    if not isinstance(document, dict):
        return None
    key, secret = document.get("AccessKeyId"), document.get("SecretAccessKey")
    if not isinstance(key, str) or not isinstance(secret, str):
        return None
    token = document.get("Token")
    return AwsCredentials(key, secret, token if isinstance(token, str) else None), _expiry(document)


class AwsDefaultChain:
    """An :class:`~auto_runtime.aws.signing.AwsCredentialSource` following the chain above."""

    def __init__(self, client: httpx.AsyncClient, environ: Mapping[str, str]) -> None:
        self._client = client
        self._environ = dict(environ)
        self._kept: tuple[AwsCredentials, float | None] | None = None

    async def credentials(self) -> AwsCredentials | None:
        static = StaticAwsCredentials.from_environment(self._environ).value
        if static is None:
            static = await trio.to_thread.run_sync(shared_file_credentials, self._environ)
        if static is not None:
            return static
        now = datetime.now(UTC).timestamp()
        if self._kept is not None and (self._kept[1] is None or self._kept[1] - REFRESH_BEFORE_SECONDS > now):
            return self._kept[0]
        self._kept = await self._container() or await self._instance()
        return self._kept[0] if self._kept is not None else None

    async def _container(self) -> tuple[AwsCredentials, float | None] | None:
        full = self._environ.get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        relative = self._environ.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        if not full and not relative:
            return None
        url = full or CONTAINER_HOST + (relative or "")
        headers = {}
        if self._environ.get("AWS_CONTAINER_AUTHORIZATION_TOKEN"):
            headers["Authorization"] = self._environ["AWS_CONTAINER_AUTHORIZATION_TOKEN"]
        try:
            response = await self._client.get(url, headers=headers, timeout=ENDPOINT_SECONDS)
            return _temporary(response.json()) if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            log.warning("the AWS container credentials endpoint could not be read")
            return None

    async def _instance(self) -> tuple[AwsCredentials, float | None] | None:
        if self._environ.get("AWS_EC2_METADATA_DISABLED", "").lower() == "true":
            return None
        service = self._environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT", IMDS).rstrip("/")
        try:
            token = await self._client.put(
                f"{service}/latest/api/token",
                headers={"X-aws-ec2-metadata-token-ttl-seconds": "21600"},
                timeout=ENDPOINT_SECONDS,
            )
            if token.status_code != 200:
                return None
            headers = {"X-aws-ec2-metadata-token": token.text}
            base = f"{service}/latest/meta-data/iam/security-credentials/"
            roles = await self._client.get(base, headers=headers, timeout=ENDPOINT_SECONDS)
            role = roles.text.strip().splitlines()[0] if roles.status_code == 200 and roles.text.strip() else None
            if role is None:
                return None
            document = await self._client.get(base + role, headers=headers, timeout=ENDPOINT_SECONDS)
            return _temporary(document.json()) if document.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
