"""Content on object storage (`CONTENT_STORE_URL`), on both stores, against a local S3 emulator process.

The ledger reaches the emulator through a forwarder process (`tests/fakes/s3_emulator.py`) that a test stops to
take the bucket away; the tests read and change the bucket with a plain boto3 client, never through our code.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import boto3
import httpx
import pytest

from auto_runtime.aws.credentials import StaticAwsCredentials
from auto_runtime.aws.signing import AwsCredentials
from auto_runtime.ledger import ContentDamaged, ContentUnavailable, Ledger, PlaybookScope, open_ledger
from auto_runtime.ledger.content import CHUNK_SIZE
from auto_runtime.ledger.object_content import S3ContentObjects
from auto_runtime.ledger.s3_requests import S3Endpoint, S3Requests
from tests.fakes.s3_emulator import ALL_OF_S3, REGION, S3Emulator, start_s3_emulator
from tests.stored_rows import stored_rows

from .conftest import Target

ACME = PlaybookScope("acme", "finance")
PREFIX = "content/prod"


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Emulator]:
    started = start_s3_emulator(tmp_path_factory.mktemp("s3"))
    yield started
    started.stop()


@pytest.fixture
def bucket(emulator: S3Emulator) -> Iterator[str]:
    """A fresh bucket, with the forwarder running (a test that stopped it has it started again)."""
    yield emulator.new_bucket()
    if emulator.forwarder.process is None or emulator.forwarder.process.poll() is not None:
        emulator.forwarder.start()


@asynccontextmanager
async def objects_of(
    emulator: S3Emulator,
    bucket: str | None,
    *,
    secret: str | None = None,
    endpoint: str | None = None,
    time_limit: float = 30.0,
) -> AsyncIterator[S3ContentObjects]:
    """Our object store for `bucket` (None: one that only reads), through the forwarder."""
    credentials = AwsCredentials(emulator.access_key_id, secret or emulator.secret_access_key)
    async with httpx.AsyncClient(trust_env=False) as client:
        requests = S3Requests(
            client,
            StaticAwsCredentials(credentials),
            S3Endpoint(REGION, endpoint or emulator.forwarder.url),
            time_limit=time_limit,
        )
        yield S3ContentObjects(requests, bucket, PREFIX)


@asynccontextmanager
async def ledger_of(target: Target, objects: S3ContentObjects | None) -> AsyncIterator[Ledger]:
    async with open_ledger(target.ledger_file, target.database_url, content_objects=objects) as ledger:
        yield ledger


async def row_of(ledger: Ledger, digest: str) -> list[dict[str, object]]:
    return await stored_rows(
        ledger, "SELECT location, size FROM ledger_content WHERE scope_key = ? AND sha256 = ?", [ACME.key, digest]
    )


async def chunks_of(ledger: Ledger, digest: str) -> int:
    rows = await stored_rows(ledger, "SELECT count(*) AS n FROM ledger_content_chunks WHERE sha256 = ?", [digest])
    return int(str(rows[0]["n"]))


async def test_content_written_with_the_setting_is_in_the_bucket_and_not_in_the_database(
    target: Target, emulator: S3Emulator, bucket: str
) -> None:
    data = os.urandom(CHUNK_SIZE + 17)
    digest = hashlib.sha256(data).hexdigest()
    async with objects_of(emulator, bucket) as objects, ledger_of(target, objects) as ledger:
        assert await ledger.put_content(ACME, data) == digest
        key = f"{PREFIX}/playbook/acme/finance/{digest}"
        assert emulator.objects(bucket) == {key: data}
        assert await row_of(ledger, digest) == [{"location": f"s3://{bucket}/{key}", "size": len(data)}]
        assert await chunks_of(ledger, digest) == 0
        assert await ledger.get_content(ACME, digest) == data
        assert await ledger.get_content(PlaybookScope("acme", "sales"), digest) is None


async def test_a_put_of_content_already_kept_asks_nothing_of_the_bucket(
    target: Target, emulator: S3Emulator, bucket: str
) -> None:
    async with objects_of(emulator, bucket) as objects, ledger_of(target, objects) as ledger:
        digest = await ledger.put_content(ACME, b"a workflow document")
        emulator.forwarder.stop()
        assert await ledger.put_content(ACME, b"a workflow document") == digest
    assert list(emulator.objects(bucket)) == [f"{PREFIX}/playbook/acme/finance/{digest}"]


async def test_content_kept_before_the_setting_is_read_where_it_is_and_never_moved(
    target: Target, emulator: S3Emulator, bucket: str
) -> None:
    async with ledger_of(target, None) as ledger:
        before = await ledger.put_content(ACME, b"kept in the ledger")
    async with objects_of(emulator, bucket) as objects, ledger_of(target, objects) as ledger:
        after = await ledger.put_content(ACME, b"kept in the bucket")
        assert await ledger.get_content(ACME, before) == b"kept in the ledger"
        assert await row_of(ledger, before) == [{"location": "ledger", "size": 18}]
        assert await ledger.put_content(ACME, b"kept in the ledger") == before
        assert await row_of(ledger, before) == [{"location": "ledger", "size": 18}]
    assert list(emulator.objects(bucket)) == [f"{PREFIX}/playbook/acme/finance/{after}"]
    async with objects_of(emulator, None) as reading, ledger_of(target, reading) as ledger:
        assert await ledger.get_content(ACME, after) == b"kept in the bucket"
        assert await ledger.get_content(ACME, before) == b"kept in the ledger"
        again = await ledger.put_content(ACME, b"the setting unset")
        assert await row_of(ledger, again) == [{"location": "ledger", "size": 17}]


async def test_content_in_the_bucket_needs_an_object_store_to_be_read(
    target: Target, emulator: S3Emulator, bucket: str
) -> None:
    async with objects_of(emulator, bucket) as objects, ledger_of(target, objects) as ledger:
        digest = await ledger.put_content(ACME, b"in the bucket")
    async with ledger_of(target, None) as ledger:
        with pytest.raises(ContentUnavailable, match="needs an object store"):
            await ledger.get_content(ACME, digest)


@pytest.mark.parametrize("replacement", [b"the same length", b"longer than what was kept", b"short"])
async def test_bytes_from_the_bucket_that_are_not_the_content_are_refused(
    target: Target, emulator: S3Emulator, bucket: str, replacement: bytes
) -> None:
    async with objects_of(emulator, bucket) as objects, ledger_of(target, objects) as ledger:
        digest = await ledger.put_content(ACME, b"what was kept.")
        key = f"{PREFIX}/playbook/acme/finance/{digest}"
        emulator.client().put_object(Bucket=bucket, Key=key, Body=replacement)
        with pytest.raises(ContentDamaged, match=f"s3://{bucket}/{key}"):
            await ledger.get_content(ACME, digest)


async def test_an_object_gone_from_the_bucket_is_damaged_content(
    target: Target, emulator: S3Emulator, bucket: str
) -> None:
    async with objects_of(emulator, bucket) as objects, ledger_of(target, objects) as ledger:
        digest = await ledger.put_content(ACME, b"soon gone")
        emulator.client().delete_object(Bucket=bucket, Key=f"{PREFIX}/playbook/acme/finance/{digest}")
        with pytest.raises(ContentDamaged, match="is not in the object store"):
            await ledger.get_content(ACME, digest)


async def test_the_bucket_down_makes_puts_and_reads_unavailable_and_loses_nothing(
    target: Target, emulator: S3Emulator, bucket: str
) -> None:
    async with objects_of(emulator, bucket) as objects, ledger_of(target, objects) as ledger:
        kept = await ledger.put_content(ACME, b"kept while up")
        emulator.forwarder.stop()
        with pytest.raises(ContentUnavailable) as refused:
            await ledger.put_content(ACME, b"put while down")
        assert "object store" in refused.value.detail
        missed = hashlib.sha256(b"put while down").hexdigest()
        assert await row_of(ledger, missed) == []
        with pytest.raises(ContentUnavailable):
            await ledger.get_content(ACME, kept)
        emulator.forwarder.start()
        assert await ledger.get_content(ACME, kept) == b"kept while up"
        assert await ledger.put_content(ACME, b"put while down") == missed
        assert await ledger.get_content(ACME, missed) == b"put while down"


@pytest.mark.parametrize("fault", ["no_bucket", "wrong_secret"])
async def test_errors_the_bucket_answers_are_unavailable_and_keep_no_row(
    target: Target, emulator: S3Emulator, bucket: str, fault: str
) -> None:
    name = "no-such-bucket-here" if fault == "no_bucket" else bucket
    secret = "not-the-secret" if fault == "wrong_secret" else None
    async with objects_of(emulator, name, secret=secret) as objects, ledger_of(target, objects) as ledger:
        with pytest.raises(ContentUnavailable, match="NoSuchBucket" if fault == "no_bucket" else "403"):
            await ledger.put_content(ACME, b"refused")
        assert await row_of(ledger, hashlib.sha256(b"refused").hexdigest()) == []
    assert emulator.objects(bucket) == {}


async def test_a_bucket_that_does_not_answer_is_unavailable_within_the_time_limit(
    target: Target, emulator: S3Emulator, bucket: str
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        async with (
            objects_of(emulator, bucket, endpoint=endpoint, time_limit=0.5) as objects,
            ledger_of(target, objects) as ledger,
        ):
            with pytest.raises(ContentUnavailable, match=r"took longer than 0\.5 s"):
                await ledger.put_content(ACME, b"never answered")
            assert await row_of(ledger, hashlib.sha256(b"never answered").hexdigest()) == []


async def test_a_staged_object_is_promoted_to_content_or_discarded(emulator: S3Emulator, bucket: str) -> None:
    candidate = b"an ONNX model, staged"
    digest = hashlib.sha256(candidate).hexdigest()
    async with objects_of(emulator, bucket) as objects:
        staged = await objects.stage(ACME.key, "build-1.candidate-2", candidate, digest)
        assert staged == f"s3://{bucket}/{PREFIX}/staging/playbook/acme/finance/build-1.candidate-2"
        other = await objects.stage(ACME.key, "build-1.candidate-3", b"another", hashlib.sha256(b"another").hexdigest())
        location = await objects.promote(staged, ACME.key, digest)
        assert location == f"s3://{bucket}/{PREFIX}/playbook/acme/finance/{digest}"
        assert await objects.get(location, len(candidate)) == candidate
        await objects.discard(other)
        await objects.discard(other)
        with pytest.raises(ValueError, match="staged object's name"):
            await objects.stage(ACME.key, "../escape", b"x", hashlib.sha256(b"x").hexdigest())
    assert emulator.objects(bucket) == {f"{PREFIX}/playbook/acme/finance/{digest}": candidate}


def test_keys_are_percent_encoded_once_for_s3() -> None:
    assert str(S3Endpoint("eu-west-1", "http://127.0.0.1:9000").url_of("b", "p/org/a:b/x")) == (
        "http://127.0.0.1:9000/b/p/org/a%3Ab/x"
    )
    assert str(S3Endpoint("eu-west-1").url_of("bucket", "k/x")) == "https://bucket.s3.eu-west-1.amazonaws.com/k/x"
    assert str(S3Endpoint("eu-west-1").url_of("my.bucket", "k")) == "https://s3.eu-west-1.amazonaws.com/my.bucket/k"


async def test_temporary_credentials_sign_with_their_session_token(
    target: Target, emulator: S3Emulator, bucket: str
) -> None:
    keys = {
        "endpoint_url": emulator.direct_url,
        "region_name": REGION,
        "aws_access_key_id": emulator.access_key_id,
        "aws_secret_access_key": emulator.secret_access_key,
    }
    iam = boto3.client("iam", **keys)
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
    }
    role = iam.create_role(RoleName=f"content-{bucket}", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
    iam.put_role_policy(RoleName=role["RoleName"], PolicyName="content", PolicyDocument=json.dumps(ALL_OF_S3))
    issued = boto3.client("sts", **keys).assume_role(RoleArn=role["Arn"], RoleSessionName="runtime")["Credentials"]
    temporary = AwsCredentials(issued["AccessKeyId"], issued["SecretAccessKey"], issued["SessionToken"])
    async with httpx.AsyncClient(trust_env=False) as client:
        requests = S3Requests(client, StaticAwsCredentials(temporary), S3Endpoint(REGION, emulator.forwarder.url))
        objects = S3ContentObjects(requests, bucket, PREFIX)
        async with ledger_of(target, objects) as ledger:
            digest = await ledger.put_content(ACME, b"signed with a session token")
            assert await ledger.get_content(ACME, digest) == b"signed with a session token"
    assert list(emulator.objects(bucket)) == [f"{PREFIX}/playbook/acme/finance/{digest}"]
