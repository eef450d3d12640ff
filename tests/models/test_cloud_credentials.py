"""The cloud credential chains, with their endpoints played by the fake gateway process."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from auto_runtime.aws.credentials import AwsDefaultChain
from auto_runtime.aws.signing import AwsCredentials
from auto_runtime.models.google_credentials import ApplicationDefaultCredentials
from tests.fakes.gateway_process import FakeGatewayProcess, start_fake_gateway


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False) as opened:
        yield opened


def fresh() -> str:
    return f"creds-{uuid.uuid4().hex[:10]}"


async def test_aws_environment_first_then_the_shared_file(tmp_path: Path, client: httpx.AsyncClient) -> None:
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text(
        "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = default-secret\n\n"
        "[work]\naws_access_key_id = AKIDWORK\naws_secret_access_key = work-secret\naws_session_token = tok\n"
    )
    base = {"HOME": str(tmp_path), "AWS_EC2_METADATA_DISABLED": "true"}
    assert await AwsDefaultChain(client, base).credentials() == AwsCredentials("AKIDDEFAULT", "default-secret")
    work = await AwsDefaultChain(client, {**base, "AWS_PROFILE": "work"}).credentials()
    assert work == AwsCredentials("AKIDWORK", "work-secret", "tok")
    environment = {**base, "AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "env-secret"}
    assert await AwsDefaultChain(client, environment).credentials() == AwsCredentials("AKIDENV", "env-secret")
    assert await AwsDefaultChain(client, {"AWS_EC2_METADATA_DISABLED": "true"}).credentials() is None


async def test_aws_container_credentials_are_kept_until_they_expire(
    gateway: FakeGatewayProcess, client: httpx.AsyncClient
) -> None:
    script = gateway.script(
        fresh(),
        {
            "body": {
                "AccessKeyId": "ASIATEMP",
                "SecretAccessKey": "temp-secret",
                "Token": "session-token",
                "Expiration": "2099-01-01T00:00:00Z",
            }
        },
    )
    environ = {
        "AWS_CONTAINER_CREDENTIALS_FULL_URI": f"{gateway.origin}/v2/credentials?fake_script={script}",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN": "container-auth",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    chain = AwsDefaultChain(client, environ)
    first = await chain.credentials()
    again = await chain.credentials()
    assert first == again == AwsCredentials("ASIATEMP", "temp-secret", "session-token")
    [received] = gateway.requests(script)
    assert (received["method"], received["headers"]["authorization"]) == ("GET", "container-auth")


async def test_aws_instance_metadata_service_v2(client: httpx.AsyncClient) -> None:
    """IMDSv2: a session token first, then the role, then its credentials, each read with the token. A
    gateway process of its own plays the service, so its default script is this test's alone."""
    metadata = start_fake_gateway()
    try:
        metadata.script(
            "default",
            {"raw": "imds-session-token"},
            {"raw": "runtime-role\n"},
            {
                "body": {
                    "AccessKeyId": "ASIAINSTANCE",
                    "SecretAccessKey": "instance-secret",
                    "Token": "instance-token",
                    "Expiration": "2099-01-01T00:00:00Z",
                }
            },
        )
        chain = AwsDefaultChain(client, {"AWS_EC2_METADATA_SERVICE_ENDPOINT": metadata.origin})
        assert await chain.credentials() == AwsCredentials("ASIAINSTANCE", "instance-secret", "instance-token")
        token, roles, role = metadata.requests("default")
        assert (token["method"], token["headers"]["x-aws-ec2-metadata-token-ttl-seconds"]) == ("PUT", "21600")
        assert roles["headers"]["x-aws-ec2-metadata-token"] == "imds-session-token"
        assert role["path"].endswith("/latest/meta-data/iam/security-credentials/runtime-role")
    finally:
        metadata.stop()


async def test_google_authorized_user_file(
    tmp_path: Path, gateway: FakeGatewayProcess, client: httpx.AsyncClient
) -> None:
    script = gateway.script(fresh(), {"body": {"access_token": "ya29.user", "expires_in": 3599}})
    key_file = tmp_path / "adc.json"
    key_file.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": "client-1",
                "client_secret": "client-secret",
                "refresh_token": "refresh-1",
                "token_uri": f"{gateway.origin}/token?fake_script={script}",
            }
        )
    )
    source = ApplicationDefaultCredentials(client, {"GOOGLE_APPLICATION_CREDENTIALS": str(key_file)})
    assert await source.access_token() == "ya29.user"
    assert await source.access_token() == "ya29.user"
    [received] = gateway.requests(script)
    assert received["method"] == "POST"
    assert "grant_type=refresh_token" in received["body"]
    assert "refresh_token=refresh-1" in received["body"]


async def test_google_gcloud_well_known_file(
    tmp_path: Path, gateway: FakeGatewayProcess, client: httpx.AsyncClient
) -> None:
    script = gateway.script(fresh(), {"body": {"access_token": "ya29.gcloud", "expires_in": 3599}})
    folder = tmp_path / ".config" / "gcloud"
    folder.mkdir(parents=True)
    document = {"type": "authorized_user", "token_uri": f"{gateway.origin}/token?fake_script={script}"}
    (folder / "application_default_credentials.json").write_text(json.dumps(document))
    assert await ApplicationDefaultCredentials(client, {"HOME": str(tmp_path)}).access_token() == "ya29.gcloud"


async def test_google_service_account_file_signs_a_jwt_bearer_assertion(
    tmp_path: Path, gateway: FakeGatewayProcess, client: httpx.AsyncClient
) -> None:
    private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    script = gateway.script(fresh(), {"body": {"access_token": "ya29.service", "expires_in": 3599}})
    token_uri = f"{gateway.origin}/token?fake_script={script}"
    key_file = tmp_path / "sa.json"
    key_file.write_text(
        json.dumps(
            {
                "type": "service_account",
                "client_email": "runtime@project.iam.gserviceaccount.com",
                "private_key_id": "key-1",
                "private_key": pem,
                "token_uri": token_uri,
            }
        )
    )
    source = ApplicationDefaultCredentials(client, {"GOOGLE_APPLICATION_CREDENTIALS": str(key_file)})
    assert await source.access_token() == "ya29.service"
    [received] = gateway.requests(script)
    form = parse_qs(received["body"])
    assert form["grant_type"] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
    assertion = form["assertion"][0]
    assert jwt.get_unverified_header(assertion)["kid"] == "key-1"
    claims = jwt.decode(assertion, private_key.public_key(), algorithms=["RS256"], audience=token_uri)
    assert claims["iss"] == "runtime@project.iam.gserviceaccount.com"
    assert claims["scope"] == "https://www.googleapis.com/auth/cloud-platform"
    assert claims["exp"] - claims["iat"] == 3600


async def test_google_service_account_file_that_cannot_sign_obtains_nothing(
    tmp_path: Path, client: httpx.AsyncClient
) -> None:
    key_file = tmp_path / "sa.json"
    key_file.write_text(json.dumps({"type": "service_account", "client_email": "x@y", "private_key": "..."}))
    source = ApplicationDefaultCredentials(client, {"GOOGLE_APPLICATION_CREDENTIALS": str(key_file)})
    assert await source.access_token() is None


async def test_google_metadata_server(gateway: FakeGatewayProcess, client: httpx.AsyncClient) -> None:
    script = gateway.script(fresh(), {"body": {"access_token": "ya29.metadata", "expires_in": 100}})
    source = ApplicationDefaultCredentials(
        client, {}, metadata_url=f"{gateway.origin}/computeMetadata/v1/token?fake_script={script}"
    )
    assert await source.access_token() == "ya29.metadata"
    assert gateway.requests(script)[0]["headers"]["metadata-flavor"] == "Google"
