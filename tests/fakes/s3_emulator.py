"""A local S3-compatible server for tests: moto's server (`moto[server]`) as its own process on loopback, with
signatures checked, and a TCP forwarder process in front of it that a test stops to take the bucket away and
starts again to bring it back, while the emulator behind keeps every object.

The emulator starts offline. Its first `UNSIGNED_SETUP` requests are taken without a signature: they make an
IAM user with an access key and a policy allowing `s3:*` (and `iam:*` and `sts:AssumeRole`, for a test that
signs with a role's temporary credentials); from then on moto checks every request's AWS Signature Version 4
and session token against the keys it issued (it signs with botocore to compare), so the server's own signer
is checked by an independent one.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import httpx

from tests.e2e.server_process import free_port

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-east-1"
START_SECONDS = 60.0
UNSIGNED_SETUP = 3
"""create_user, put_user_policy, create_access_key."""
ALL_OF_S3 = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": ["s3:*", "iam:*", "sts:AssumeRole"], "Resource": "*"}],
}


def _stop(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()


@dataclass
class Forwarder:
    """`tests.fakes.tcp_forwarder` from `port` to `target`; `stop` takes the address away, `start` brings it
    back on the same port."""

    port: int
    target: int
    process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        assert self.process is None or self.process.poll() is not None, "the forwarder runs already"
        command = [sys.executable, "-m", "tests.fakes.tcp_forwarder", str(self.port), str(self.target)]
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("listening on "):
            _stop(process)
            raise AssertionError(f"the forwarder did not start: {line!r}")
        self.process = process

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)


@dataclass
class S3Emulator:
    """The emulator process, the key it checks signatures against, and the forwarder in front of it."""

    process: subprocess.Popen[bytes]
    port: int
    access_key_id: str
    secret_access_key: str
    forwarder: Forwarder
    log_path: Path
    buckets: list[str] = field(default_factory=list)

    @property
    def direct_url(self) -> str:
        """The emulator itself, for the tests' own S3 client (not through the forwarder)."""
        return f"http://127.0.0.1:{self.port}"

    def client(self) -> Any:
        """A plain boto3 S3 client of the emulator, signing with the emulator's key."""
        return boto3.client(
            "s3",
            endpoint_url=self.direct_url,
            region_name=REGION,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
        )

    def new_bucket(self) -> str:
        name = f"content-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        self.buckets.append(name)
        return name

    def environment(self) -> dict[str, str]:
        """The AWS settings a server needs to reach the emulator through the forwarder."""
        return {
            "AWS_ENDPOINT_URL": self.forwarder.url,
            "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
        }

    def objects(self, bucket: str) -> dict[str, bytes]:
        """Every object of the bucket, read with the plain client."""
        client = self.client()
        listed = client.list_objects_v2(Bucket=bucket).get("Contents", [])
        return {item["Key"]: client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read() for item in listed}

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        self.forwarder.stop()
        _stop(self.process)


def start_s3_emulator(folder: Path) -> S3Emulator:
    """Start moto's server on a free loopback port, make its key, and start the forwarder in front of it."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_path = folder / "moto.log"
    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(folder),
        "INITIAL_NO_AUTH_ACTION_COUNT": str(UNSIGNED_SETUP),
        "MOTO_ALLOW_NONEXISTENT_REGION": "false",
    }
    with log_path.open("ab") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            cwd=folder,
            env=environment,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + START_SECONDS
    while True:
        if process.poll() is not None:
            raise AssertionError(f"the S3 emulator exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            httpx.get(f"http://127.0.0.1:{port}/moto-api/data.json", timeout=1.0)
            break
        except httpx.TransportError:
            if time.monotonic() > deadline:
                _stop(process)
                raise AssertionError(f"the S3 emulator did not answer within {START_SECONDS} s") from None
            time.sleep(0.1)
    iam = boto3.client(
        "iam",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name=REGION,
        aws_access_key_id="setup",
        aws_secret_access_key="setup",
    )
    iam.create_user(UserName="runtime")
    iam.put_user_policy(UserName="runtime", PolicyName="content", PolicyDocument=json.dumps(ALL_OF_S3))
    key = iam.create_access_key(UserName="runtime")["AccessKey"]
    forwarder = Forwarder(free_port(), port)
    forwarder.start()
    return S3Emulator(process, port, key["AccessKeyId"], key["SecretAccessKey"], forwarder, log_path)
