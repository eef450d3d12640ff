"""Issue 35, metrics: `GET /metrics` on a real server (METRICS=on), scraped after a run of each type
(computation; workflows that end in the request and one that waits on a call and a timer; recall; reasoning with
a model call and a tool call, through the fake gateway and tool server; an interaction asked in the inbox and
answered; a prediction function's build, answered through the inbox and scored, and a question to its version),
parsed with prometheus-client's own parser; the named metrics moved. A question whose model never finishes shows
a model process busy while it runs, and the process replaced after its time. Refusals: a key without
`playbook:read` is `403 forbidden`, no key `401 unauthenticated`; with METRICS off the path is not served."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from auto_runtime.auth.api_keys import issue_api_key
from auto_runtime.auth.caller import Permission
from tests.conformance.helpers import new_playbook, problem
from tests.conformance.interactions.documents import QUESTION
from tests.conformance.prediction.seeding import TRAINER
from tests.conformance.prediction.test_builds import _build, _function
from tests.conformance.prediction.test_candidates import _upload
from tests.conformance.prediction.test_full_cycle import _inbox
from tests.conformance.recall.documents import caught_up, counting, output_of, publish
from tests.conformance.recall.documents import run as run_recall
from tests.conformance.recall.documents import saved as saved_recall
from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.gateway_process import (
    FakeGatewayProcess,
    McpToolServerProcess,
    start_fake_gateway,
    start_mcp_tool_server,
)
from tests.functions.prediction.onnx_models import endless_past
from tests.postgres_support import fresh_database, server_on

pytestmark = pytest.mark.slow

ORG = "acme"
PLAYBOOK = f"/v1/orgs/{ORG}/playbooks/metered"
TRIVIAL = "---\nlanguage: python\n---\ndef main(x):\n    return x\n"
STEPS = """document: { dsl: '1.0.3', namespace: bench, name: steps, version: '1.0.0' }
do:
  - one: { set: '${ {"n": data["n"]} }' }
  - two: { set: '${ {"n": data["n"] + 1} }' }
  - three: { set: '${ {"n": data["n"] + 1} }' }
"""
WAITS = """document: { dsl: '1.0.3', namespace: bench, name: waits, version: '1.0.0' }
do:
  - echoed:
      call: run_definition
      with: { type: computation, name: echo, input: '${ data["n"] }' }
  - pause: { wait: PT0.05S }
  - done: { set: { done: true } }
"""
ENDED_BOUND_SECONDS = 60.0
"""The bound of every poll for a run's end: generous, never a timing claim."""
RUN_TYPES = ("computation", "workflow", "reasoning", "recall", "interaction", "prediction")
ENDLESS = endless_past(2, [[-1], [2]], 0.5, 11.5)
"""A linear candidate that answers series `c` (histories up to 3) and never finishes for series `a` (up to 12)."""
REASONING = """---
model: fake/{model}
tools: [helpdesk/get_customer]
---
Help customer {{{{ input.name }}}}.
"""

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: httpx.Client) -> Samples:
    """Every sample of `/metrics`, parsed by prometheus-client, by name and labels."""
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(value for (named, held), value in samples.items() if named == name and wanted <= held)


@pytest.fixture(scope="module")
def gateway() -> Iterator[FakeGatewayProcess]:
    process = start_fake_gateway()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def helpdesk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpToolServerProcess]:
    process = start_mcp_tool_server(Path(tmp_path_factory.mktemp("helpdesk")))
    yield process
    process.stop()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def metered(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    gateway: FakeGatewayProcess,
    helpdesk: McpToolServerProcess,
) -> Iterator[ServerProcess]:
    folder = Path(tmp_path_factory.mktemp(f"metered-{request.param}"))
    with ExitStack() as stack:
        settings = {
            "METRICS": "on",
            "MODEL_GATEWAYS": json.dumps(
                [{"name": "fake", "base_url": gateway.base_url, "api_key_env": "FAKE_GATEWAY_KEY"}]
            ),
            "FAKE_GATEWAY_KEY": "fake-gateway-key-0123456789",
            "TOOL_SERVERS": json.dumps({"helpdesk": {"url": helpdesk.url, "org": ORG}}),
            "PREDICTION_CACHE_DIR": str(folder / "models"),
        }
        if request.param == "postgres":
            settings.update(server_on(stack.enter_context(fresh_database("metrics_test"))))
        server = start_server(folder, settings)
        with server.client() as client:
            created = client.post(f"/v1/orgs/{ORG}/playbooks", json={"playbook": "metered", "name": "Metered"})
            assert created.status_code == 201, created.text
        yield server
        assert server.stop() == 0, server.log()


def define(client: httpx.Client, kind: str, name: str, source: str) -> None:
    response = client.post(f"{PLAYBOOK}/definitions/{kind}", json={"name": name, "source": source})
    assert response.status_code == 201, response.text


def run(client: httpx.Client, kind: str, name: str, value: object) -> dict[str, object]:
    response = client.post(f"{PLAYBOOK}/definitions/{kind}/{name}/run", json={"input": value})
    assert response.status_code in (200, 202), response.text
    body: dict[str, object] = response.json()
    return body


def ended(client: httpx.Client, playbook: str, run_id: object) -> str:
    """The run's status once it is no longer `started` (polled within a bound, not timed)."""
    deadline = time.monotonic() + ENDED_BOUND_SECONDS
    while (status := str(client.get(f"{playbook}/runs/{run_id}").json()["status"])) == "started":
        assert time.monotonic() < deadline, f"the run {run_id} did not end"
        time.sleep(0.1)
    return status


def answered_interaction(client: httpx.Client) -> None:
    """An interaction run asked in the inbox, answered there, ended `succeeded`."""
    define(client, "interaction", "deploy", QUESTION)
    run_id = str(uuid.uuid4())
    asked = client.post(
        f"{PLAYBOOK}/definitions/interaction/deploy/run",
        json={"input": {"lead": "ana@example.com", "service": "billing"}, "run_id": run_id},
    )
    assert asked.status_code == 200 and asked.json()["status"] == "started", asked.text
    reply = client.post(f"{PLAYBOOK}/runs/{run_id}/answer", json={"answer": {"decision": "go"}})
    assert reply.status_code == 200, reply.text
    assert ended(client, PLAYBOOK, run_id) == "succeeded"


def built_prediction(client: httpx.Client, playbook: str) -> str:
    """A prediction function of `playbook` whose build took `ENDLESS` through the inbox and was scored
    (`succeeded`), and a question to its active version that a model process answered; the function's URL."""
    trainer = client.post(f"{playbook}/definitions/interaction", json={"name": "train-forecasts", "source": TRAINER})
    assert trainer.status_code == 201, trainer.text
    function = _function(client, playbook)
    build = _build(client, function)
    assert build.status_code == 200, build.text
    run_id = build.json()["run_id"]
    candidate = _upload(client, playbook, run_id, ENDLESS)
    assert candidate.status_code == 200, candidate.text
    _inbox(client, playbook, run_id, {"candidates": [candidate.json()["candidate"]]})
    assert ended(client, playbook, run_id) == "succeeded"
    question = client.post(f"{function}/run", json={"input": {"series": "c"}})
    assert question.status_code == 200, question.text
    return function


def test_the_named_metrics_move_after_a_run_of_each_type(
    metered: ServerProcess, gateway: FakeGatewayProcess, request: pytest.FixtureRequest
) -> None:
    with metered.client() as client:
        before = scrape(client)
        define(client, "computation", "echo", TRIVIAL)
        define(client, "workflow", "steps", STEPS)
        define(client, "workflow", "waits", WAITS)
        saved_recall(client, PLAYBOOK, "tally", counting("com.acme.metered"))
        publish(client, PLAYBOOK, "com.acme.metered", {"n": 1})
        model = gateway.new_script(
            {
                "tool_calls": [
                    {"id": "call-1", "name": "helpdesk__get_customer", "arguments": json.dumps({"id": "cust-zq"})}
                ],
                "usage": {"prompt_tokens": 50},
            },
            {"content": "Done.", "usage": {"prompt_tokens": 80, "completion_tokens": 2}},
        )
        define(client, "reasoning", "helper", REASONING.format(model=model))
        assert run(client, "computation", "echo", 7)["output"] == 7
        assert run(client, "workflow", "steps", {"n": 1})["status"] == "succeeded"
        assert run(client, "reasoning", "helper", {"name": "Zed"})["status"] == "succeeded"
        caught_up(client, PLAYBOOK, "tally", 1)  # a view not built yet answers 503, "try again shortly"
        assert output_of(run_recall(client, PLAYBOOK, "tally"))["count"] == 1
        waiting = run(client, "workflow", "waits", {"n": 1})
        assert waiting["status"] == "started", waiting
        assert ended(client, PLAYBOOK, waiting["run_id"]) == "succeeded"
        answered_interaction(client)
        built_prediction(client, PLAYBOOK)
        after = scrape(client)

    def moved(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    for kind in RUN_TYPES:
        assert moved("auto_runtime_runs_started_total", auto_runtime_definition_type=kind) >= 1, kind
        assert (
            moved(
                "auto_runtime_runs_ended_total", auto_runtime_definition_type=kind, auto_runtime_run_outcome="succeeded"
            )
            >= 1
        ), kind
        assert moved("auto_runtime_run_duration_seconds_count", auto_runtime_definition_type=kind) >= 1, kind
    assert moved("auto_runtime_runs_started_total", auto_runtime_definition_type="workflow") >= 2
    assert moved("auto_runtime_runs_started_total", auto_runtime_definition_type="prediction") >= 2  # build, question
    assert moved("auto_runtime_workflow_inputs_applied_total") >= 2  # the call's answer and the timer
    assert moved("auto_runtime_due_work_entries_total") >= 1
    assert moved("auto_runtime_due_work_lateness_seconds_count") >= 1
    assert moved("auto_runtime_sandbox_jobs_total", auto_runtime_sandbox_ending="returned") >= 1
    assert moved("auto_runtime_sandbox_queue_wait_seconds_count") >= 1
    assert moved("auto_runtime_sandbox_queue_org_share_count") >= 1
    assert moved("auto_runtime_sandbox_work_count") >= 1
    assert moved("auto_runtime_ledger_appends_total") >= 8
    assert moved("auto_runtime_ledger_records_total") >= 8
    assert moved("auto_runtime_ledger_commit_batch_size_count") >= 1
    assert moved("auto_runtime_ledger_commit_duration_seconds_count") >= 1
    store = {"auto_runtime_ledger_store": request.node.callspec.params["metered"]}
    assert moved("auto_runtime_ledger_commit_batch_size_count", **store) >= 1
    assert moved("auto_runtime_tool_calls_total", auto_runtime_call_outcome="ok") == 1
    assert moved("auto_runtime_model_calls_total", gen_ai_provider_name="fake", auto_runtime_call_outcome="ok") == 2
    assert (
        moved(
            "http_server_request_duration_seconds_count",
            auto_runtime_operation="run_definition",
            http_response_status_code="200",
            http_request_method="POST",
        )
        >= 3
    )
    assert total(after, "http_server_request_duration_seconds_count", auto_runtime_operation="metrics") >= 1
    assert total(after, "auto_runtime_actors_live", auto_runtime_actor_kind="playbook-actors") >= 1
    assert total(after, "auto_runtime_sandbox_workers_busy") == 0
    names = {name for name, _ in after}
    assert {"auto_runtime_model_processes_live", "auto_runtime_model_processes_busy"} <= names
    assert "auto_runtime_actors_mailbox_high_water" in names
    labels = {label for (_, held) in after for label, _ in held}
    assert not labels & {"org", "playbook", "run_id", "auto_runtime_org", "auto_runtime_run_id"}


def test_a_model_process_is_busy_while_a_question_runs_and_replaced_after_its_time(metered: ServerProcess) -> None:
    """The question to series `a` never finishes: while it runs, a scrape sees a model process live and busy;
    past the model's 10 s it ends `unavailable`, its process is ended and replaced. The scrapes stop at the
    event (a busy process seen) or when the question ended without one being seen, which fails."""
    with metered.client() as client:
        function = built_prediction(client, new_playbook(client, ORG))
        before = scrape(client)
        answers: list[httpx.Response] = []
        asking = threading.Thread(
            target=lambda: answers.append(client.post(f"{function}/run", json={"input": {"series": "a"}}))
        )
        asking.start()
        during: Samples = {}
        while asking.is_alive():
            during = scrape(client)
            if total(during, "auto_runtime_model_processes_busy") >= 1:
                break
        asking.join()
        assert total(during, "auto_runtime_model_processes_busy") >= 1, "no scrape saw the question's process busy"
        assert total(during, "auto_runtime_model_processes_live") >= 1
        problem(answers[0], 503, "unavailable")
        after = scrape(client)
    replaced = total(after, "auto_runtime_model_processes_replaced_total") - total(
        before, "auto_runtime_model_processes_replaced_total"
    )
    assert replaced == 1
    assert total(after, "auto_runtime_model_processes_busy") == 0


def test_an_mcp_call_is_counted_by_its_operation(metered: ServerProcess) -> None:
    with metered.client() as client:
        before = scrape(client)
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "list_playbooks", "arguments": {}},
        }
        answered = client.post(
            "/mcp",
            json=initialize,
            headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"},
        )
        assert answered.status_code == 200, answered.text
        after = scrape(client)
    moved = total(after, "http_server_request_duration_seconds_count", auto_runtime_surface="mcp") - total(
        before, "http_server_request_duration_seconds_count", auto_runtime_surface="mcp"
    )
    assert moved == 1


def test_a_scrape_needs_playbook_read(tmp_path: Path) -> None:
    reader = issue_api_key(ORG, [Permission.PLAYBOOK_READ], None)
    writer = issue_api_key(ORG, [Permission.ORG_WRITE], None)
    keys = json.dumps([json.loads(reader.entry_json()), json.loads(writer.entry_json())])
    server = start_server(tmp_path, {"METRICS": "on", "API_KEYS": keys})
    try:
        with server.client() as client:
            refused = problem(client.get("/metrics"), 401, "unauthenticated")
            assert refused["detail"]
            forbidden = problem(
                client.get("/metrics", headers={"Authorization": f"Bearer {writer.secret}"}), 403, "forbidden"
            )
            assert "playbook:read" in forbidden["detail"]
            served = client.get("/metrics", headers={"Authorization": f"Bearer {reader.secret}"})
            assert served.status_code == 200
            assert list(text_string_to_metric_families(served.text))
    finally:
        assert server.stop() == 0, server.log()


def test_with_metrics_off_the_path_is_not_served(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        problem(client.get("/metrics"), 404, "not_found")
