"""`DATABASE_CREDENTIALS=aws-iam`: each PostgreSQL connection signs in with an RDS IAM authentication token.

The token is a Signature Version 4 presigned URL, without its scheme, for the `connect` action of the
`rds-db` service: `host:port/?Action=connect&DBUser=<user>&X-Amz-...&X-Amz-Signature=...`, signed for the
host, port and user of `DATABASE_URL` and the region in `AWS_REGION`, valid for 15 minutes. It is the
connection's password: asyncpg calls `RdsIamPassword` for each connection it opens (the pool's and the
listener's), so a token is never older than the connection it opened.

Credentials come from the AWS default chain as far as the environment (`AWS_ACCESS_KEY_ID`,
`AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`) and the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`,
else `~/.aws/credentials`, under `AWS_PROFILE` or `default`) go, read again for each connection so rotated
keys are taken up. RDS accepts IAM sign-in over TLS only: give the URL `sslmode=require` (or stronger).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal
from urllib.parse import quote, urlsplit

from auto_runtime.aws.credentials import StaticAwsCredentials, shared_file_credentials
from auto_runtime.aws.signing import AwsCredentials, sigv4_scope, sigv4_signature, sigv4_stamp

from ..errors import LedgerError, LedgerStartError

DatabaseCredentials = Literal["url", "aws-iam"]
SERVICE: Final = "rds-db"
TOKEN_SECONDS: Final = 900
DEFAULT_PORT: Final = 5432
_EMPTY_PAYLOAD: Final = hashlib.sha256(b"").hexdigest()


class NoAwsCredentials(LedgerError):
    """Neither the environment nor the shared credentials file holds AWS credentials to sign a token with."""

    def __init__(self) -> None:
        super().__init__(
            "DATABASE_CREDENTIALS=aws-iam: no AWS credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "or in the shared credentials file"
        )


def _query(pairs: Iterable[tuple[str, str]]) -> str:
    return "&".join(f"{quote(name, safe='-_.~')}={quote(value, safe='-_.~')}" for name, value in pairs)


def rds_auth_token(
    *, host: str, port: int, user: str, region: str, credentials: AwsCredentials, moment: datetime
) -> str:
    """The RDS IAM authentication token for `user` at `host:port`, signed at `moment` (see the module).

    The signature covers the query sorted by name; the token lists it in the order AWS's own signers give it
    (the session token after the signed headers), so it is the same text they would make."""
    stamp = sigv4_stamp(moment)
    query: dict[str, str] = {
        "Action": "connect",
        "DBUser": user,
        "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
        "X-Amz-Credential": f"{credentials.access_key_id}/{sigv4_scope(stamp, region, SERVICE)}",
        "X-Amz-Date": stamp,
        "X-Amz-Expires": str(TOKEN_SECONDS),
        "X-Amz-SignedHeaders": "host",
    }
    if credentials.session_token:
        query["X-Amz-Security-Token"] = credentials.session_token
    canonical_query = _query(sorted(query.items()))
    canonical = "\n".join(["GET", "/", canonical_query, f"host:{host}:{port}\n", "host", _EMPTY_PAYLOAD])
    signature = sigv4_signature(canonical, stamp=stamp, region=region, service=SERVICE, credentials=credentials)
    return f"{host}:{port}/?{_query(query.items())}&X-Amz-Signature={signature}"


def chain_credentials(environ: Mapping[str, str]) -> AwsCredentials | None:
    """AWS credentials from the environment, else from the shared credentials file, else None."""
    return StaticAwsCredentials.from_environment(environ).value or shared_file_credentials(environ)


@dataclass(frozen=True, slots=True)
class RdsIamPassword:
    """asyncpg's `password` for `DATABASE_CREDENTIALS=aws-iam`: a fresh token for each connection.

    asyncpg calls it on the ledger's asyncio loop (never Trio's) and awaits it; the token is made in a worker
    thread, since reading the shared credentials file is file I/O."""

    host: str
    port: int
    user: str
    region: str
    environ: Mapping[str, str]

    async def __call__(self) -> str:
        return await asyncio.to_thread(self.token)

    def token(self) -> str:
        """A token signed now with the credentials the chain gives now; `NoAwsCredentials` when it gives none."""
        credentials = chain_credentials(self.environ)
        if credentials is None:
            raise NoAwsCredentials
        return rds_auth_token(
            host=self.host,
            port=self.port,
            user=self.user,
            region=self.region,
            credentials=credentials,
            moment=datetime.now(UTC),
        )


def sign_in_options(url: str, credentials: DatabaseCredentials, environ: Mapping[str, str]) -> dict[str, Any]:
    """The keyword arguments asyncpg connects with beside the URL: none for `url` (the URL's own password),
    a per-connection `password` for `aws-iam`.

    `LedgerStartError` when `aws-iam` cannot sign: the URL names no host (a socket folder) or several, or
    no user; `AWS_REGION` is not set; no credentials can be found."""
    if credentials == "url":
        return {}
    parts = urlsplit(url)
    if "," in parts.netloc or not parts.hostname or parts.hostname.startswith("/"):
        raise LedgerStartError(
            "DATABASE_URL: DATABASE_CREDENTIALS=aws-iam signs its token for one host, which the URL must name"
        )
    if not parts.username:
        raise LedgerStartError(
            "DATABASE_URL: DATABASE_CREDENTIALS=aws-iam signs its token for the user the URL names, and it names none"
        )
    region = environ.get("AWS_REGION")
    if not region:
        raise LedgerStartError("DATABASE_CREDENTIALS=aws-iam: AWS_REGION is not set; set the region of the database")
    if chain_credentials(environ) is None:
        raise LedgerStartError(str(NoAwsCredentials()))
    password = RdsIamPassword(parts.hostname, parts.port or DEFAULT_PORT, parts.username, region, dict(environ))
    return {"password": password}
