"""Google application default credentials, as far as this server follows them, for Vertex AI.

In order: the key file ``GOOGLE_APPLICATION_CREDENTIALS`` names, else gcloud's
``~/.config/gcloud/application_default_credentials.json``; then the metadata server of the Google Cloud
machine the server runs on. A key file of type ``authorized_user`` is exchanged for an access token
with its refresh token; one of type ``service_account`` with an assertion signed by its private key
(RS256, the JWT bearer grant of RFC 7523), for the ``cloud-platform`` scope. Tokens are kept until a
minute before they expire.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import jwt
import trio

log = logging.getLogger("auto_runtime.models")

TOKEN_URI = "https://oauth2.googleapis.com/token"
METADATA_TOKEN_URL = "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ASSERTION_SECONDS = 3600
REFRESH_BEFORE_SECONDS = 60.0
ENDPOINT_SECONDS = 5.0


def _now() -> float:
    return datetime.now(UTC).timestamp()


def _token_of(response: httpx.Response) -> tuple[str, float] | None:
    if response.status_code != 200:
        return None
    try:
        document: Any = response.json()
    except ValueError:
        return None
    token = document.get("access_token") if isinstance(document, dict) else None
    if not isinstance(token, str) or not token:
        return None
    expires_in = document.get("expires_in")
    lifetime = float(expires_in) if isinstance(expires_in, int | float) else 3600.0
    return token, _now() + lifetime


def _signed_assertion(document: Mapping[str, Any]) -> str | None:
    """The JWT a service account signs to ask its token endpoint for an access token; None when the key
    file lacks what it takes, or its key cannot sign."""
    email, key = document.get("client_email"), document.get("private_key")
    if not isinstance(email, str) or not isinstance(key, str):
        return None
    issued = int(_now())
    claims = {
        "iss": email,
        "scope": CLOUD_PLATFORM_SCOPE,
        "aud": str(document.get("token_uri") or TOKEN_URI),
        "iat": issued,
        "exp": issued + ASSERTION_SECONDS,
    }
    key_id = document.get("private_key_id")
    headers = {"kid": key_id} if isinstance(key_id, str) else None
    try:
        return jwt.encode(claims, key, algorithm="RS256", headers=headers)
    except (ValueError, TypeError, jwt.PyJWTError):
        return None


class ApplicationDefaultCredentials:
    """A :class:`~auto_runtime.models.auth.GoogleTokenSource` following the chain above."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        environ: Mapping[str, str],
        *,
        metadata_client: httpx.AsyncClient | None = None,
        metadata_url: str = METADATA_TOKEN_URL,
    ) -> None:
        """``client`` reaches the token endpoint (through the proxy, if any); ``metadata_client`` the
        metadata server directly."""
        self._client = client
        self._metadata_client = metadata_client or client
        self._environ = dict(environ)
        self._metadata_url = metadata_url
        self._kept: tuple[str, float] | None = None

    def key_file(self) -> Path | None:
        named = self._environ.get("GOOGLE_APPLICATION_CREDENTIALS")
        if named:
            return Path(named).expanduser()
        home = self._environ.get("HOME")
        if home:
            well_known = Path(home) / ".config" / "gcloud" / "application_default_credentials.json"
            if well_known.is_file():
                return well_known
        return None

    async def access_token(self) -> str | None:
        if self._kept is not None and self._kept[1] - REFRESH_BEFORE_SECONDS > _now():
            return self._kept[0]
        path = await trio.to_thread.run_sync(self.key_file)
        self._kept = await self._from_file(path) if path is not None else await self._from_metadata_server()
        return self._kept[0] if self._kept is not None else None

    async def _from_file(self, path: Path) -> tuple[str, float] | None:
        try:
            document = json.loads(await trio.Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            log.warning("the Google credentials file %s cannot be read", path)
            return None
        kind = document.get("type") if isinstance(document, dict) else None
        if kind == "authorized_user":
            form = {
                "grant_type": "refresh_token",
                "client_id": str(document.get("client_id", "")),
                "client_secret": str(document.get("client_secret", "")),
                "refresh_token": str(document.get("refresh_token", "")),
            }
        elif kind == "service_account":
            assertion = _signed_assertion(document)
            if assertion is None:
                log.warning("the Google service account key file %s cannot sign a token request", path)
                return None
            form = {"grant_type": JWT_BEARER_GRANT, "assertion": assertion}
        else:
            log.warning("the Google credentials file %s is of a type this server does not read", path)
            return None
        try:
            response = await self._client.post(
                str(document.get("token_uri") or TOKEN_URI), data=form, timeout=ENDPOINT_SECONDS
            )
        except httpx.HTTPError as error:
            log.warning("the Google token endpoint could not be reached: %s", type(error).__name__)
            return None
        return _token_of(response)

    async def _from_metadata_server(self) -> tuple[str, float] | None:
        try:
            response = await self._metadata_client.get(
                self._metadata_url, headers={"Metadata-Flavor": "Google"}, timeout=ENDPOINT_SECONDS
            )
        except httpx.HTTPError:
            return None
        return _token_of(response)
