"""Starting the fake model gateway as its own process, and driving it from a test."""

from __future__ import annotations

import json
import signal
import ssl
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
START_LINE_TIMEOUT_SECONDS = 30.0


def _started(command: list[str], what: str) -> tuple[subprocess.Popen[str], str]:
    """Start ``command`` from the repository root and wait for its ``listening on <url>`` line."""
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("listening on "):
        process.kill()
        process.wait()
        process.stdout.close()
        raise AssertionError(f"{what} did not start: {line!r}")
    return process, line.removeprefix("listening on ").strip()


def _interrupt(process: subprocess.Popen[str]) -> None:
    """SIGINT, then SIGKILL if it has not ended within 10 seconds; then the pipe of its first line is closed (left
    to the garbage collector, it would be an unclosed file, which `filterwarnings = error` fails)."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()


@dataclass
class FakeGatewayProcess:
    process: subprocess.Popen[str]
    origin: str
    verify: ssl.SSLContext | bool = True

    @property
    def base_url(self) -> str:
        """What a gateway entry's ``base_url`` names: ``http://127.0.0.1:<port>/v1``."""
        return f"{self.origin}/v1"

    def script(self, name: str, *replies: dict[str, Any]) -> str:
        """Append replies to the script ``name`` (a model id the test sends); returns the name."""
        response = httpx.post(
            f"{self.origin}/_fake/scripts", json={name: list(replies)}, timeout=10, verify=self.verify
        )
        response.raise_for_status()
        return name

    def new_script(self, *replies: dict[str, Any], prefix: str = "model") -> str:
        """A script under a fresh name, so tests running side by side never share replies."""
        return self.script(f"{prefix}-{uuid.uuid4().hex[:12]}", *replies)

    def models(self, *replies: dict[str, Any], script: str = "default") -> None:
        """Replace the replies of ``GET /v1/models`` for requests whose ``x-fake-script`` header names ``script``."""
        response = httpx.post(
            f"{self.origin}/_fake/models", params={"script": script}, json=list(replies), timeout=10, verify=self.verify
        )
        response.raise_for_status()

    def requests(self, script: str | None = None) -> list[dict[str, Any]]:
        params = {"script": script} if script is not None else {}
        response = httpx.get(f"{self.origin}/_fake/requests", params=params, timeout=10, verify=self.verify)
        response.raise_for_status()
        received: list[dict[str, Any]] = response.json()
        return received

    def stop(self) -> None:
        _interrupt(self.process)


def start_fake_gateway(
    script: dict[str, Any] | None = None, folder: Path | None = None, tls: tuple[Path, Path] | None = None
) -> FakeGatewayProcess:
    """``python -m tests.fakes.model_gateway --port 0``; waits for its ``listening on`` line."""
    command = [sys.executable, "-m", "tests.fakes.model_gateway", "--port", "0"]
    if tls is not None:
        command += ["--certfile", str(tls[0]), "--keyfile", str(tls[1])]
    if script is not None:
        assert folder is not None, "a script file needs a folder to live in"
        path = folder / "gateway-script.json"
        path.write_text(json.dumps(script))
        command += ["--script", str(path)]
    process, origin = _started(command, "the fake gateway")
    verify = ssl.create_default_context(cafile=str(tls[0])) if tls is not None else True
    return FakeGatewayProcess(process, origin, verify)


@dataclass
class McpToolServerProcess:
    process: subprocess.Popen[str]
    url: str
    log: Path

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        _interrupt(self.process)


def start_mcp_tool_server(folder: Path, *options: str, port: int = 0) -> McpToolServerProcess:
    """``python -m tests.fakes.mcp_tool_server --port 0``; waits for its ``listening on`` line. ``options`` are
    more of its arguments (``--require-header``, ``--issuer``...)."""
    log = folder / "mcp-calls.jsonl"
    command = [sys.executable, "-m", "tests.fakes.mcp_tool_server", "--port", str(port), "--log", str(log), *options]
    process, url = _started(command, "the MCP tool server")
    return McpToolServerProcess(process, url, log)


@dataclass
class HttpFakeProcess:
    """A fake served on loopback: its process and its origin (``http://127.0.0.1:<port>``)."""

    process: subprocess.Popen[str]
    origin: str

    def get(self, path: str) -> Any:
        response = httpx.get(f"{self.origin}{path}", timeout=10)
        response.raise_for_status()
        return response.json()

    def stop(self) -> None:
        _interrupt(self.process)


def start_openapi_service(signing_key: str, audience: str) -> HttpFakeProcess:
    """``python -m tests.fakes.openapi_service --port 0``; waits for its ``listening on`` line."""
    command = [sys.executable, "-m", "tests.fakes.openapi_service", "--port", "0"]
    command += ["--signing-key", signing_key, "--audience", audience]
    process, origin = _started(command, "the OpenAPI service")
    return HttpFakeProcess(process, origin)


def start_oauth_server(
    signing_key: str,
    audience: str,
    mode: str = "normal",
    redirect_to: str | None = None,
    expires_in: int = 3600,
    client_public_key: Path | None = None,
) -> HttpFakeProcess:
    """``python -m tests.fakes.oauth_server --port 0``; waits for its ``listening on`` line."""
    command = [sys.executable, "-m", "tests.fakes.oauth_server", "--port", "0", "--mode", mode]
    command += ["--signing-key", signing_key, "--audience", audience, "--expires-in", str(expires_in)]
    if redirect_to is not None:
        command += ["--redirect-to", redirect_to]
    if client_public_key is not None:
        command += ["--client-public-key", str(client_public_key)]
    process, origin = _started(command, "the OAuth server")
    return HttpFakeProcess(process, origin)
