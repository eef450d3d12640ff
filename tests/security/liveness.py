"""Liveness while an attack runs: `/health` and another org's trivial run keep answering.

`kept_live(server)` starts a probe thread that, until the block ends, asks `/health` and runs a trivial
computation in an org of its own (`bystander`), each with a generous client timeout. The block waits for at
least one whole round of probes that began after the block was entered, so the probes overlap the attack, then
checks that every probe answered as it should. It checks liveness, not speed: the only bound is the client
timeout, which a server whose event loop is blocked by one request exceeds.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx

from tests.client_tls import tls_context
from tests.e2e.server_process import ServerProcess

PROBE_TIMEOUT_SECONDS = 30.0
BYSTANDER_ORG = "bystander"
ECHO_SOURCE = "---\nlanguage: python\n---\ndef main(input):\n    return input\n"


@dataclass
class _Probes:
    failures: list[str] = field(default_factory=list)
    rounds: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    round_done: threading.Condition = field(default_factory=threading.Condition)


def _bystander_run_url(client: httpx.Client) -> str:
    playbook = f"pb-{uuid.uuid4().hex[:10]}"
    created = client.post(f"/v1/orgs/{BYSTANDER_ORG}/playbooks", json={"playbook": playbook, "name": "Bystander"})
    assert created.status_code == 201, created.text
    url = f"/v1/orgs/{BYSTANDER_ORG}/playbooks/{playbook}/definitions/computation"
    saved = client.post(url, json={"name": "echo", "source": ECHO_SOURCE})
    assert saved.status_code == 201, saved.text
    return f"{url}/echo/run"


def _probe_round(client: httpx.Client, run_url: str, probes: _Probes) -> None:
    try:
        health = client.get("/health")
        if health.status_code != 200:
            probes.failures.append(f"/health answered {health.status_code}: {health.text[:200]}")
        ran = client.post(run_url, json={"input": {"n": probes.rounds}})
        if ran.status_code != 200 or ran.json().get("output") != {"n": probes.rounds}:
            probes.failures.append(f"the bystander's run answered {ran.status_code}: {ran.text[:200]}")
    except httpx.HTTPError as error:
        probes.failures.append(f"a probe got no answer: {error!r}")


@contextmanager
def kept_live(server: ServerProcess, timeout: float = PROBE_TIMEOUT_SECONDS) -> Iterator[None]:
    """Probes `/health` and a bystander org's run while the block runs; fails when any probe did not answer."""
    with httpx.Client(base_url=server.base_url, timeout=timeout, verify=tls_context()) as client:
        run_url = _bystander_run_url(client)
        probes = _Probes()

        def probe_until_stopped() -> None:
            while not probes.stop.is_set():
                _probe_round(client, run_url, probes)
                with probes.round_done:
                    probes.rounds += 1
                    probes.round_done.notify_all()

        thread = threading.Thread(target=probe_until_stopped, name="liveness-probe", daemon=True)
        with probes.round_done:
            entered = probes.rounds
        thread.start()
        try:
            yield
        finally:
            with probes.round_done:
                target = max(entered + 2, probes.rounds + 1)
                probes.round_done.wait_for(lambda: probes.rounds >= target or not thread.is_alive())
            probes.stop.set()
            thread.join()
    assert not probes.failures, probes.failures
