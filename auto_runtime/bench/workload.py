"""What the benchmark drives: a playbook of its own (`bench-` and random digits) with a computation function
that returns its input and a three-step `set` workflow, created before and retired after (a playbook id is
never removed, so retiring is how it goes); and the three paths measured, `/health` first (the floor)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping

import httpx

from auto_runtime.bench.load import Route

TRIVIAL = "---\nlanguage: python\n---\ndef main(x):\n    return x\n"
STEPS = """document: { dsl: '1.0.3', namespace: bench, name: steps, version: '1.0.0' }
do:
  - one: { set: '${ {"n": data["n"]} }' }
  - two: { set: '${ {"n": data["n"] + 1} }' }
  - three: { set: '${ {"n": data["n"] + 1} }' }
"""
SETUP_TIMEOUT_SECONDS = 60.0
HEALTH = "GET /health"
COMPUTATION = "computation run"
WORKFLOW = "3-step workflow run"


class SetupFailed(RuntimeError):
    """The server refused what the benchmark needs (a key without the permissions, an org it may not use)."""


def _expect(response: httpx.Response, status: int) -> None:
    if response.status_code != status:
        raise SetupFailed(
            f"{response.request.method} {response.request.url.path}: {response.status_code} {response.text[:400]}"
        )


class BenchPlaybook:
    """The benchmark's own playbook on one server; `create` before the load, `retire` after."""

    def __init__(self, base_url: str, org: str, key: str | None) -> None:
        self.org = org
        self.id = f"bench-{secrets.token_hex(4)}"
        self.path = f"/v1/orgs/{org}/playbooks/{self.id}"
        self.headers: dict[str, str] = {"Authorization": f"Bearer {key}"} if key else {}
        self.client = httpx.Client(base_url=base_url, headers=self.headers, timeout=SETUP_TIMEOUT_SECONDS)

    def create(self) -> None:
        body = {"playbook": self.id, "name": "Benchmark", "description": "Made by auto-runtime bench; retired after."}
        _expect(self.client.post(f"/v1/orgs/{self.org}/playbooks", json=body), 201)
        for kind, name, source in (("computation", "trivial", TRIVIAL), ("workflow", "steps", STEPS)):
            _expect(self.client.post(f"{self.path}/definitions/{kind}", json={"name": name, "source": source}), 201)

    def retire(self) -> None:
        _expect(self.client.post(f"/v1/orgs/{self.org}/playbooks/{self.id}/retire"), 200)
        self.client.close()

    def routes(self) -> tuple[Route, ...]:
        headers: Mapping[str, str] = self.headers
        run = f"{self.path}/definitions"
        return (
            Route(HEALTH, "GET", "/health", b"", 200),
            Route(
                COMPUTATION, "POST", f"{run}/computation/trivial/run", json.dumps({"input": 1}).encode(), 200, headers
            ),
            Route(
                WORKFLOW, "POST", f"{run}/workflow/steps/run", json.dumps({"input": {"n": 1}}).encode(), 200, headers
            ),
        )
