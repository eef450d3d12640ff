"""Reasoning runs without tools, end to end: the real server calls the fake gateway (reasoning-format §6, §8, §9)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx

from tests.conformance.helpers import new_playbook, pointers, problem
from tests.e2e.server_process import ServerProcess
from tests.fakes.gateway_process import FakeGatewayProcess

TRIAGE = """---
description: Sorts a support ticket into a queue
model: fake/{model}
config:
  max_output_tokens: 600
  temperature: 0.2
input:
  schema:
    type: object
    properties:
      ticket: {{ type: string }}
      customer_id: {{ type: string }}
      language: {{ type: string }}
    required: [ticket, customer_id]
    additionalProperties: false
  default:
    language: en
output:
  format: json
  schema:
    type: object
    properties:
      queue: {{ type: string, enum: [billing, outage, how_to, other] }}
      urgent: {{ type: boolean }}
    required: [queue, urgent]
    additionalProperties: false
---
{{% system %}}You triage tickets. Write in {{{{ input.language }}}}.{{% endsystem %}}
Customer {{{{ input.customer_id }}}} wrote on {{{{ today }}}}:

{{{{ input.ticket | clip: 10 }}}}
"""

TEXT = """---
model: fake/{model}
---
Say hello to {{{{ input.name }}}}{{% if input.title %}}, {{{{ input.title }}}}{{% endif %}}.
"""


def _create(client: httpx.Client, playbook: str, name: str, source: str) -> httpx.Response:
    return client.post(f"{playbook}/definitions/reasoning", json={"name": name, "source": source})


def _run(client: httpx.Client, playbook: str, name: str, body: dict[str, Any]) -> httpx.Response:
    return client.post(f"{playbook}/definitions/reasoning/{name}/run", json=body)


def _usage(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def test_a_json_run_renders_calls_the_gateway_and_records_the_run(
    reasoning_server: ServerProcess, reasoning_gateway: FakeGatewayProcess
) -> None:
    model = reasoning_gateway.new_script(
        {"content": json.dumps({"queue": "billing", "urgent": True}), "usage": _usage(120, 30, 20), "id": "r-1"}
    )
    with reasoning_server.client() as client:
        playbook = new_playbook(client)
        created = _create(client, playbook, "triage", TRIAGE.format(model=model))
        assert created.status_code == 201, created.text
        definition = created.json()
        assert definition["media_type"] == "text/markdown"
        assert definition["input_schema"]["required"] == ["ticket", "customer_id"]
        assert definition["output_schema"]["properties"]["queue"]["enum"][0] == "billing"
        assert "## What it needs" in definition["overview"] and f"fake/{model}" in definition["overview"]
        response = _run(client, playbook, "triage", {"input": {"ticket": "I was charged twice!", "customer_id": "c-7"}})
        assert response.status_code == 200, response.text
        run = response.json()
        assert run["status"] == "succeeded"
        assert run["output"] == {"queue": "billing", "urgent": True}
        record = client.get(f"{playbook}/runs/{run['run_id']}").json()["record"]
    assert record["model"] == {"requested": f"fake/{model}", "resolved": f"fake/{model}", "answered": model}
    assert record["settings"] == {"max_output_tokens": 600, "temperature": 0.2}
    assert record["output_format"] == "json"
    assert record["finish_reason"] == "stop"
    assert record["usage"]["input"]["total"] == 120 and record["usage"]["input"]["cache_read"] == 20
    assert record["usage"]["output"]["total"] == 30
    assert (record["usage"]["input"]["total"], record["usage"]["output"]["total"]) == (120, 30)
    assert record["usage"]["input"]["cache_read"] == 20
    assert record["response_id"] == "r-1"
    assert record["prompt"]["instructions"] == "You triage tickets. Write in en."
    assert "Customer c-7 wrote on" in record["prompt"]["message"]
    assert "I was char…" in record["prompt"]["message"]
    assert record["prompt"]["truncated"] is False
    sent = reasoning_gateway.requests(model)[-1]["body"]
    assert sent["messages"][0] == {"role": "system", "content": "You triage tickets. Write in en."}
    assert sent["messages"][1]["role"] == "user"
    assert sent["max_tokens"] == 600 and sent["temperature"] == 0.2
    assert sent["response_format"] == {"type": "json_object"}
    assert "tools" not in sent


def test_a_text_run_and_an_alias(reasoning_server: ServerProcess, reasoning_gateway: FakeGatewayProcess) -> None:
    model = reasoning_gateway.new_script({"content": "Hello Ada!", "finish_reason": "length"})
    reasoning_gateway.script(f"anthropic/{model}", {"content": "Hi via alias"})
    with reasoning_server.client() as client:
        playbook = new_playbook(client)
        assert _create(client, playbook, "hello", TEXT.format(model=model)).status_code == 201
        run = _run(client, playbook, "hello", {"input": {"name": "Ada"}}).json()
        assert run["output"] == "Hello Ada!"
        record = client.get(f"{playbook}/runs/{run['run_id']}").json()["record"]
        assert record["finish_reason"] == "length" and "instructions" not in record["prompt"]
        source = TEXT.format(model=model).replace(f"fake/{model}", f"anthropic/{model}")
        assert _create(client, playbook, "aliased", source).status_code == 201
        aliased = _run(client, playbook, "aliased", {"input": {"name": "Ada"}})
        assert aliased.status_code == 200, aliased.text
        record = client.get(f"{playbook}/runs/{aliased.json()['run_id']}").json()["record"]
        assert record["model"]["resolved"] == f"fake/anthropic/{model}"


KEYWORD_PROPERTIES = """---
model: fake/{model}
input:
  schema:
    type: object
    properties:
      limit: {{ type: integer }}
      offset: {{ type: integer }}
      for: {{ type: string }}
      with: {{ type: string }}
      items: {{ type: array, items: {{ type: string }} }}
    additionalProperties: false
---
Show {{{{ input.limit }}}} from {{{{ input.offset }}}} for {{{{ input.for }}}} with {{{{ input.with }}}}:
{{% for item in input.items limit: input.limit offset: input.offset %}}{{{{ item }}}};{{% endfor %}}
"""


def test_a_property_named_like_a_keyword_is_read_after_a_dot(
    reasoning_server: ServerProcess, reasoning_gateway: FakeGatewayProcess
) -> None:
    model = reasoning_gateway.new_script({"content": "done"})
    value = {"limit": 2, "offset": 1, "for": "Ada", "with": "care", "items": ["a", "b", "c", "d"]}
    with reasoning_server.client() as client:
        playbook = new_playbook(client)
        created = _create(client, playbook, "keywords", KEYWORD_PROPERTIES.format(model=model))
        assert created.status_code == 201, created.text
        run = _run(client, playbook, "keywords", {"input": value})
        assert run.status_code == 200, run.text
    sent = reasoning_gateway.requests(model)[-1]["body"]["messages"][-1]["content"]
    assert sent == "Show 2 from 1 for Ada with care:\nb;c;\n"


def test_input_endings_keep_no_record(reasoning_server: ServerProcess, reasoning_gateway: FakeGatewayProcess) -> None:
    model = reasoning_gateway.new_script()
    with reasoning_server.client() as client:
        playbook = new_playbook(client)
        assert _create(client, playbook, "triage", TRIAGE.format(model=model)).status_code == 201
        body = problem(
            _run(client, playbook, "triage", {"input": {"ticket": 3, "customer_id": "c"}}), 422, "invalid_input"
        )
        assert pointers(body) == ["/input/ticket"]
        body = problem(_run(client, playbook, "triage", {"input": [1]}), 422, "invalid_input")
        assert pointers(body) == ["/input"]
        assert _create(client, playbook, "hello", TEXT.format(model=model)).status_code == 201
        body = problem(_run(client, playbook, "hello", {"input": {}}), 422, "invalid_input")
        assert pointers(body) == ["/input/name"]
        assert "Line 4" in body["detail"] and "input.name" in body["detail"]
    assert reasoning_gateway.requests(model) == []


def test_models_not_offered_and_provider_failures(
    reasoning_server: ServerProcess, reasoning_gateway: FakeGatewayProcess
) -> None:
    limited = reasoning_gateway.new_script(
        {"status": 429, "error": {"message": "slow down"}, "headers": {"retry-after": "0"}},
        {"status": 429, "error": {"message": "slow down"}, "headers": {"retry-after": "0"}},
        {"status": 429, "error": {"message": "slow down"}, "headers": {"retry-after": "0"}},
    )
    refused = reasoning_gateway.new_script({"status": 400, "error": {"message": "bad request"}})
    filtered = reasoning_gateway.new_script({"content": "", "finish_reason": "content_filter"})
    with reasoning_server.client() as client:
        playbook = new_playbook(client)
        assert (
            _create(client, playbook, "nowhere", TEXT.format(model="x").replace("fake/x", "mistral/x")).status_code
            == 201
        )
        body = problem(
            _run(client, playbook, "nowhere", {"input": {"name": "A"}}), 503, "unavailable", "model_not_offered"
        )
        assert body["because"] == "provider_not_configured"
        assert "There is no provider named mistral" in body["detail"]
        assert _create(client, playbook, "limited", TEXT.format(model=limited)).status_code == 201
        response = _run(client, playbook, "limited", {"input": {"name": "A"}})
        problem(response, 503, "unavailable")
        assert response.headers["retry-after"] == "5"
        assert _create(client, playbook, "refused", TEXT.format(model=refused)).status_code == 201
        problem(_run(client, playbook, "refused", {"input": {"name": "A"}}), 409, "conflict", "unworkable")
        assert _create(client, playbook, "filtered", TEXT.format(model=filtered)).status_code == 201
        run_id = str(uuid.uuid4())
        body = problem(
            _run(client, playbook, "filtered", {"input": {"name": "A"}, "run_id": run_id}), 422, "invalid_input"
        )
        assert pointers(body) == ["/input"]
        record = client.get(f"{playbook}/runs/{run_id}").json()["record"]
        assert set(record) == {"usage", "duration_ms"}
        assert (record["usage"]["input"]["total"], record["usage"]["output"]["total"]) == (10, 5)


def test_json_answers_that_do_not_fit(reasoning_server: ServerProcess, reasoning_gateway: FakeGatewayProcess) -> None:
    model = reasoning_gateway.new_script(
        {"content": "not json at all"},
        {"content": json.dumps({"queue": "nowhere", "urgent": True})},
        {"content": '{"queue": "bill', "finish_reason": "length"},
    )
    with reasoning_server.client() as client:
        playbook = new_playbook(client)
        assert _create(client, playbook, "triage", TRIAGE.format(model=model)).status_code == 201
        ticket = {"input": {"ticket": "t", "customer_id": "c"}}
        response = _run(client, playbook, "triage", ticket)
        body = problem(response, 503, "unavailable")
        assert "not JSON" in body["detail"] and "try again" in body["detail"]
        assert response.headers["retry-after"] == "5"
        body = problem(_run(client, playbook, "triage", ticket), 503, "unavailable")
        assert "queue" in body["detail"]
        body = problem(_run(client, playbook, "triage", ticket), 409, "conflict", "unworkable")
        assert "raise config.max_output_tokens" in body["detail"]


def test_tokens_of_reasoning_runs_reach_analytics(
    reasoning_server: ServerProcess, reasoning_gateway: FakeGatewayProcess
) -> None:
    model = reasoning_gateway.new_script(
        {"content": "one", "usage": _usage(100, 10, 40)}, {"content": "two", "usage": _usage(50, 5)}
    )
    with reasoning_server.client() as client:
        playbook = new_playbook(client)
        assert _create(client, playbook, "hello", TEXT.format(model=model)).status_code == 201
        for _ in range(2):
            assert _run(client, playbook, "hello", {"input": {"name": "A"}}).status_code == 200
        runs = client.get(f"{playbook}/runs", params={"type": "reasoning"}).json()["runs"]
        assert len(runs) == 2
        analytics = client.get(f"{playbook}/analytics")
    assert analytics.status_code == 200, analytics.text
    assert analytics.json()["tokens"] == {"input": 150, "output": 15, "cached": 40}


SERIES = """---
model: fake/{model}
output:
  shape: series
---
Forecast {{{{ input.what }}}}.
"""


def test_an_output_shape_is_the_definitions_schema_and_its_rules_apply(
    reasoning_server: ServerProcess, reasoning_gateway: FakeGatewayProcess
) -> None:
    good = {"period": "month", "lines": [{"name": "sales", "points": [{"period": "2026-01", "value": 3}]}]}
    unordered = {
        "period": "month",
        "lines": [{"name": "sales", "points": [{"period": "2026-02", "value": 3}, {"period": "2026-01", "value": 1}]}],
    }
    model = reasoning_gateway.new_script({"content": json.dumps(good)}, {"content": json.dumps(unordered)})
    with reasoning_server.client() as client:
        playbook = new_playbook(client)
        created = _create(client, playbook, "forecast", SERIES.format(model=model))
        assert created.status_code == 201, created.text
        assert created.json()["details"] == {"shape": "series"}
        assert created.json()["output_schema"]["title"] == "series"
        run = _run(client, playbook, "forecast", {"input": {"what": "sales"}}).json()
        assert run["output"] == good and run["output_shape"] == "series"
        body = problem(_run(client, playbook, "forecast", {"input": {"what": "sales"}}), 503, "unavailable")
        assert "strictly ascend" in body["detail"]
