"""`DATABASE_CREDENTIALS=aws-iam` (issue 21): the RDS IAM token, signed for each connection.

The token is checked against a vector made with AWS's own signer (botocore, a test-only dependency) and
against botocore itself for other inputs; the sign-in is checked end to end against a fake PostgreSQL
server process (`password_server`) that records the password each connection gives. No cloud is reached.
"""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import botocore.auth
import botocore.session
import pytest
import trio

from auto_runtime.aws.signing import AwsCredentials
from auto_runtime.ledger import LedgerStartError, open_ledger
from auto_runtime.ledger.postgres.iam_auth import RdsIamPassword, rds_auth_token, sign_in_options
from tests.e2e.server_process import free_port, run_forked

from .children import ROOT, child_command
from .test_host_processes import LineReader

MOMENT = datetime(2026, 12, 4, 21, 30, 5, tzinfo=UTC)
DOCS_KEY = AwsCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
SESSION = AwsCredentials("ASIAEXAMPLE", "secret/with+chars=", "FwoGZXIvYXdzE//session/token+==")

# Made once with botocore 1.44.8 (`generate_db_auth_token`, its clock fixed at MOMENT), kept as text.
VECTORS = [
    (
        ("ledger.cluster-abc123.eu-west-1.rds.amazonaws.com", 5432, "auto_runtime", "eu-west-1", DOCS_KEY),
        "ledger.cluster-abc123.eu-west-1.rds.amazonaws.com:5432/?Action=connect&DBUser=auto_runtime"
        "&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20261204%2Feu-west-1%2Frds-db%2Faws4_request"
        "&X-Amz-Date=20261204T213005Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host"
        "&X-Amz-Signature=6a21e9b7a9c6fc897029117f5660b6ddb3e77de9a8da9fa156f0453d0285720b",
    ),
    (
        ("db.example.internal", 6543, "iam.user@org+x", "us-gov-west-1", SESSION),
        "db.example.internal:6543/?Action=connect&DBUser=iam.user%40org%2Bx"
        "&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=ASIAEXAMPLE%2F20261204%2Fus-gov-west-1%2Frds-db%2Faws4_request"
        "&X-Amz-Date=20261204T213005Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host"
        "&X-Amz-Security-Token=FwoGZXIvYXdzE%2F%2Fsession%2Ftoken%2B%3D%3D"
        "&X-Amz-Signature=002dcf0561808a619c8ddeb28a4be1c1ce9bd1522774818fe311d1bbc1fd0f93",
    ),
]

ENVIRON = {
    "AWS_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": DOCS_KEY.secret_access_key,
}


def _token(host: str, port: int, user: str, region: str, credentials: AwsCredentials, moment: datetime) -> str:
    return rds_auth_token(host=host, port=port, user=user, region=region, credentials=credentials, moment=moment)


@pytest.mark.parametrize(("inputs", "expected"), VECTORS)
def test_the_token_is_the_one_aws_signers_make(
    inputs: tuple[str, int, str, str, AwsCredentials], expected: str
) -> None:
    assert _token(*inputs, MOMENT) == expected


def _botocore_token(host: str, port: int, user: str, region: str, credentials: AwsCredentials, moment: datetime) -> str:
    client = botocore.session.Session().create_client(
        "rds",
        region_name=region,
        aws_access_key_id=credentials.access_key_id,
        aws_secret_access_key=credentials.secret_access_key,
        aws_session_token=credentials.session_token,
    )
    token: str = client.generate_db_auth_token(DBHostname=host, Port=port, DBUsername=user, Region=region)
    return token


@pytest.mark.parametrize(
    "inputs",
    [
        ("a.rds.amazonaws.com", 5432, "u", "ap-southeast-2", DOCS_KEY),
        ("10.0.0.7", 15432, "name with space/and~tilde", "eu-central-1", SESSION),
        ("proxy.example", 5432, "\u00e9l\u00e8ve", "cn-north-1", AwsCredentials("K", "s", "t")),
    ],
)
def test_the_token_is_the_one_botocore_makes(
    inputs: tuple[str, int, str, str, AwsCredentials], monkeypatch: pytest.MonkeyPatch
) -> None:
    moment = datetime(2027, 2, 28, 23, 59, 59, tzinfo=UTC)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *_, **__: moment.replace(tzinfo=None))
    assert _token(*inputs, moment) == _botocore_token(*inputs, moment)


def test_the_credentials_may_come_from_the_shared_file(tmp_path: Path) -> None:
    shared = tmp_path / "credentials"
    shared.write_text(
        "[default]\naws_access_key_id = WRONG\naws_secret_access_key = x\n\n"
        "[ledger]\naws_access_key_id = AKIDFILE\naws_secret_access_key = file-secret\n"
    )
    environ = {"AWS_REGION": "eu-west-1", "AWS_SHARED_CREDENTIALS_FILE": str(shared), "AWS_PROFILE": "ledger"}
    options = sign_in_options("postgresql://iam@db.example:5432/ledger", "aws-iam", environ)
    password = options["password"]
    assert isinstance(password, RdsIamPassword)
    token = password.token()
    assert "X-Amz-Credential=AKIDFILE%2F" in token
    stamp = parse_qs(urlsplit(f"//{token}").query)["X-Amz-Date"][0]
    moment = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    assert token == _token("db.example", 5432, "iam", "eu-west-1", AwsCredentials("AKIDFILE", "file-secret"), moment)


def test_the_url_setting_adds_nothing_to_the_connection() -> None:
    assert sign_in_options("postgresql://u:pw@db.example/ledger", "url", {}) == {}


@pytest.mark.parametrize(
    ("url", "environ", "line"),
    [
        (
            "postgresql://iam@db.example/ledger",
            {"AWS_ACCESS_KEY_ID": "K", "AWS_SECRET_ACCESS_KEY": "s"},
            "DATABASE_CREDENTIALS=aws-iam: AWS_REGION is not set; set the region of the database",
        ),
        (
            "postgresql://db.example/ledger",
            ENVIRON,
            "DATABASE_URL: DATABASE_CREDENTIALS=aws-iam signs its token for the user the URL names, and it names none",
        ),
        (
            "postgresql://iam@db-1.example,db-2.example/ledger",
            ENVIRON,
            "DATABASE_URL: DATABASE_CREDENTIALS=aws-iam signs its token for one host, which the URL must name",
        ),
        (
            "postgresql://iam@db.example/ledger",
            {"AWS_REGION": "eu-west-1", "HOME": "/nonexistent"},
            "DATABASE_CREDENTIALS=aws-iam: no AWS credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "or in the shared credentials file",
        ),
    ],
)
def test_what_aws_iam_cannot_sign_with_is_one_line_at_start(url: str, environ: dict[str, str], line: str) -> None:
    with pytest.raises(LedgerStartError) as refused:
        sign_in_options(url, "aws-iam", environ)
    assert str(refused.value) == line


@asynccontextmanager
async def password_server() -> AsyncIterator[tuple[int, LineReader]]:
    """The fake PostgreSQL server's port and its lines (one per password received)."""
    process = await trio.lowlevel.open_process(child_command("password_server"), cwd=ROOT, stdout=-1)
    try:
        assert process.stdout is not None
        reader = LineReader(process.stdout)
        with trio.fail_after(60):
            word, port = (await reader.line()).split()
        assert word == "port"
        yield int(port), reader
    finally:
        process.kill()
        await process.wait()


def assert_fresh_token(received: str, port: int, credentials: AwsCredentials, region: str) -> datetime:
    """The password was a token for the fake server's host and port, signed at the moment it names."""
    entry = json.loads(received)
    assert entry["user"] == "auto_runtime"
    stamp = parse_qs(urlsplit(f"//{entry['password']}").query)["X-Amz-Date"][0]
    moment = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    assert entry["password"] == _token("127.0.0.1", port, "auto_runtime", region, credentials, moment)
    return moment


async def test_each_connection_signs_in_with_a_token_signed_for_it() -> None:
    async with password_server() as (port, reader):
        url = f"postgresql://auto_runtime@127.0.0.1:{port}/ledger"
        started = datetime.now(UTC).replace(microsecond=0)
        for _ in range(2):
            with pytest.raises(LedgerStartError) as refused:
                async with open_ledger(database_url=url, database_credentials="aws-iam", environ=ENVIRON):
                    pass
            assert str(refused.value) == (
                f"DATABASE_URL: 127.0.0.1:{port} refused the credentials "
                "(the fake server records passwords and accepts none)"
            )
            with trio.fail_after(30):
                signed_at = assert_fresh_token(await reader.line(), port, DOCS_KEY, "eu-west-1")
            assert signed_at >= started


async def test_the_server_signs_in_with_a_token_and_a_refusal_is_one_line(tmp_path: Path) -> None:
    async with password_server() as (port, reader):
        settings = {
            "PORT": str(free_port()),
            "LOG_LEVEL": "error",
            "DATABASE_URL": f"postgresql://auto_runtime@127.0.0.1:{port}/ledger",
            "DATABASE_CREDENTIALS": "aws-iam",
            "AWS_REGION": "us-east-2",
            "AWS_ACCESS_KEY_ID": SESSION.access_key_id,
            "AWS_SECRET_ACCESS_KEY": SESSION.secret_access_key,
            "AWS_SESSION_TOKEN": SESSION.session_token or "",
            "SECRETS_KEY": base64.b64encode(secrets.token_bytes(32)).decode("ascii"),
        }
        result = await trio.to_thread.run_sync(lambda: run_forked(tmp_path, "serve", settings=settings))
        assert result.returncode == 1, result.stdout + result.stderr
        assert (result.stdout + result.stderr).strip() == (
            f"DATABASE_URL: 127.0.0.1:{port} refused the credentials "
            "(the fake server records passwords and accepts none)"
        )
        with trio.fail_after(30):
            assert_fresh_token(await reader.line(), port, SESSION, "us-east-2")
