"""Signed S3 requests over httpx: put, get, copy and delete one object, each within a time limit.

The requests are signed with AWS Signature Version 4 (`auto_runtime.aws.signing`: `sigv4_signature`,
`sigv4_scope`, `sigv4_stamp`) for the `s3` service, with the payload's SHA-256 in `x-amz-content-sha256` (S3
refuses a body that does not match it). Credentials come from an `AwsCredentialSource` (the server passes the
AWS default chain, `aws.credentials.AwsDefaultChain`), asked for each request so rotated keys are taken
up.

Addressing: with an endpoint (`AWS_ENDPOINT_URL`, an S3-compatible server) the bucket is the path's first
segment (`http://host:port/bucket/key`); on AWS itself the bucket is the host's first label
(`https://bucket.s3.region.amazonaws.com/key`), or the path's for a bucket name with a dot, which no
wildcard certificate covers.

Every request runs on the calling Trio task (httpx is async; nothing blocks the thread) and ends within
`REQUEST_SECONDS`, besides httpx's own connect and read limits. What goes wrong is an `S3Failure` naming the
cause: unreachable, too slow, no credentials, or the error S3 answered (status and `Code`).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final
from urllib.parse import quote

import httpx
import trio

from auto_runtime.aws.signing import AwsCredentialSource, sigv4_scope, sigv4_signature, sigv4_stamp

SERVICE: Final = "s3"
REQUEST_SECONDS: Final = 120.0
"""The most one request may take, body included (64 MiB at a slow link's pace)."""
TIMEOUT: Final = httpx.Timeout(30.0, connect=5.0, pool=10.0)
ERROR_BODY_BYTES: Final = 64 * 1024
_CODE = re.compile(rb"<Code>([A-Za-z0-9.]{1,64})</Code>")
_EMPTY_SHA256: Final = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

Body = bytes | AsyncIterable[bytes]
"""A request's body: bytes, or chunks sent as they come (with a `content-length` header given)."""


class S3Failure(Exception):
    """A request S3 did not carry out. `status` is S3's answer (None when none came); `code` its error `Code`."""

    def __init__(self, cause: str, status: int | None = None, code: str | None = None) -> None:
        super().__init__(cause)
        self.cause = cause
        self.status = status
        self.code = code

    @property
    def missing(self) -> bool:
        """S3 answered that the object (or its bucket) does not exist."""
        return self.status == 404


@dataclass(frozen=True)
class S3Endpoint:
    """Where the buckets are: the region requests are signed for, and `AWS_ENDPOINT_URL` when set."""

    region: str
    endpoint_url: str | None = None

    def url_of(self, bucket: str, key: str) -> httpx.URL:
        """The object's URL, its key percent-encoded once (S3's canonical form; `/` kept)."""
        path = quote(key, safe="/")
        if self.endpoint_url is not None:
            base = httpx.URL(self.endpoint_url.rstrip("/"))
            return base.copy_with(raw_path=f"{base.raw_path.decode('ascii').rstrip('/')}/{bucket}/{path}".encode())
        if "." in bucket:
            return httpx.URL(f"https://s3.{self.region}.amazonaws.com").copy_with(raw_path=f"/{bucket}/{path}".encode())
        return httpx.URL(f"https://{bucket}.s3.{self.region}.amazonaws.com").copy_with(raw_path=f"/{path}".encode())


class S3Requests:
    """The four object requests the content store makes. `client` is the server's outbound client (proxy and
    certificate authorities of the settings); it is not closed here."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        credentials: AwsCredentialSource,
        endpoint: S3Endpoint,
        time_limit: float = REQUEST_SECONDS,
    ) -> None:
        self._client = client
        self._credentials = credentials
        self.endpoint = endpoint
        self._time_limit = time_limit

    async def put_object(self, bucket: str, key: str, data: bytes, sha256: str) -> None:
        """Write the object (`sha256` is the hex SHA-256 of `data`, which S3 checks)."""
        headers = {"content-type": "application/octet-stream"}
        async with self._sent("PUT", bucket, key, headers, data, sha256) as response:
            await _check(response)

    async def put_object_streamed(
        self, bucket: str, key: str, chunks: AsyncIterable[bytes], size: int, sha256: str
    ) -> None:
        """Write the object from `chunks` as they come, with `Content-Length: size` (`sha256`: the hex SHA-256 of
        the whole body, which S3 checks, so a body that is not it is refused and nothing is written)."""
        headers = {"content-type": "application/octet-stream", "content-length": str(size)}
        async with self._sent("PUT", bucket, key, headers, chunks, sha256) as response:
            await _check(response)

    async def get_object(self, bucket: str, key: str, limit: int) -> bytes:
        """The object's bytes, read up to `limit` bytes (a longer object comes back cut at `limit`)."""
        async with self._sent("GET", bucket, key, {}, b"", _EMPTY_SHA256) as response:
            await _check(response)
            kept = bytearray()
            async for chunk in response.aiter_bytes():
                kept += chunk[: limit - len(kept)]
                if len(kept) >= limit:
                    break
            return bytes(kept)

    async def copy_object(self, bucket: str, source_key: str, key: str) -> None:
        """Copy an object of the bucket to `key`, within S3."""
        headers = {"x-amz-copy-source": f"/{bucket}/{quote(source_key, safe='/')}"}
        async with self._sent("PUT", bucket, key, headers, b"", _EMPTY_SHA256) as response:
            await _check(response)
            # A copy can fail after S3 sent its 200: the body then holds an <Error>.
            body = await _start_of(response)
            if b"<Error>" in body:
                raise S3Failure(f"the copy of {source_key} failed: {_code_of(body)}", 200, _code_of(body))

    async def delete_object(self, bucket: str, key: str) -> None:
        """Delete the object (deleting one that is not there succeeds)."""
        async with self._sent("DELETE", bucket, key, {}, b"", _EMPTY_SHA256) as response:
            await _check(response)

    @asynccontextmanager
    async def _sent(
        self, method: str, bucket: str, key: str, headers: dict[str, str], body: Body, sha256: str
    ) -> AsyncIterator[httpx.Response]:
        """One signed request and its streamed response, within the time limit (`REQUEST_SECONDS` unless given):
        transport errors and the time limit become `S3Failure`."""
        url = self.endpoint.url_of(bucket, key)
        with trio.move_on_after(self._time_limit) as limit:
            try:
                request = await self._signed(method, url, headers, body, sha256)
                response = await self._client.send(request, stream=True)
                try:
                    yield response
                finally:
                    with trio.CancelScope(shield=True):
                        await response.aclose()
            except httpx.HTTPError as error:
                raise S3Failure(f"{method} {url} failed: {type(error).__name__} {error}".rstrip()) from error
        if limit.cancelled_caught:
            raise S3Failure(f"{method} {url} took longer than {self._time_limit:g} s")

    async def _signed(
        self, method: str, url: httpx.URL, headers: dict[str, str], body: Body, sha256: str
    ) -> httpx.Request:
        """The request with its Signature Version 4 headers (`S3Failure` when no credentials are found)."""
        credentials = await self._credentials.credentials()
        if credentials is None:
            raise S3Failure("no AWS credentials were found in the environment, the shared file or the endpoints")
        stamp = sigv4_stamp(datetime.now(UTC))
        signed = {name.lower(): value.strip() for name, value in headers.items()}
        signed["host"] = url.netloc.decode("ascii")
        signed["x-amz-content-sha256"] = sha256
        signed["x-amz-date"] = stamp
        if credentials.session_token:
            signed["x-amz-security-token"] = credentials.session_token
        names = sorted(signed)
        canonical = "\n".join(
            [
                method,
                url.raw_path.decode("ascii").split("?")[0] or "/",
                "",
                "".join(f"{name}:{signed[name]}\n" for name in names),
                ";".join(names),
                sha256,
            ]
        )
        region = self.endpoint.region
        signature = sigv4_signature(canonical, stamp=stamp, region=region, service=SERVICE, credentials=credentials)
        sent = {name: value for name, value in signed.items() if name != "host"}
        sent["authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={credentials.access_key_id}/{sigv4_scope(stamp, region, SERVICE)}, "
            f"SignedHeaders={';'.join(names)}, Signature={signature}"
        )
        return self._client.build_request(method, url, headers=sent, content=body, timeout=TIMEOUT)


async def _start_of(response: httpx.Response) -> bytes:
    kept = bytearray()
    async for chunk in response.aiter_bytes():
        kept += chunk
        if len(kept) >= ERROR_BODY_BYTES:
            break
    return bytes(kept[:ERROR_BODY_BYTES])


def _code_of(body: bytes) -> str | None:
    found = _CODE.search(body)
    return found[1].decode("ascii") if found else None


async def _check(response: httpx.Response) -> None:
    """`S3Failure` for any answer but a 2xx, with S3's error `Code` when its body names one."""
    if 200 <= response.status_code < 300:
        return
    code = _code_of(await _start_of(response))
    answered = f"{response.request.method} {response.request.url} answered {response.status_code}"
    raise S3Failure(f"{answered} {code}" if code else answered, response.status_code, code)
