"""The fake gateway itself: it records requests and replays scripts, per script name."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.fakes.gateway_process import FakeGatewayProcess, start_fake_gateway


def test_replays_a_scripted_answer_and_records_the_request(gateway: FakeGatewayProcess) -> None:
    model = gateway.new_script({"content": "hello", "usage": {"prompt_tokens": 3, "completion_tokens": 1}})
    response = httpx.post(f"{gateway.base_url}/chat/completions", json={"model": model, "messages": []})
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "hello"
    [received] = gateway.requests(model)
    assert received["body"] == {"model": model, "messages": []}
    again = httpx.post(f"{gateway.base_url}/chat/completions", json={"model": model, "messages": []})
    assert again.status_code == 500
    assert again.json()["error"]["type"] == "script_exhausted"


def test_streams_when_asked(gateway: FakeGatewayProcess) -> None:
    model = gateway.new_script({"content": "streamed"})
    with httpx.stream(
        "POST", f"{gateway.base_url}/chat/completions", json={"model": model, "messages": [], "stream": True}
    ) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    assert any('"content": "streamed"' in line for line in lines)


def test_a_header_names_the_script(gateway: FakeGatewayProcess) -> None:
    name = gateway.new_script({"status": 503, "error": {"message": "down"}})
    response = httpx.post(f"{gateway.base_url}/responses", json={"model": "anything"}, headers={"x-fake-script": name})
    assert response.status_code == 503
    assert response.json() == {"error": {"message": "down", "type": "fake_error", "code": None}}


def test_a_script_file_given_at_start(tmp_path: Path) -> None:
    script = {
        "scripts": {"scripted-model": [{"content": "from the file"}]},
        "models": [{"data": [{"id": "scripted-model"}]}],
    }
    process = start_fake_gateway(script, tmp_path)
    try:
        answer = httpx.post(f"{process.base_url}/chat/completions", json={"model": "scripted-model", "messages": []})
        listed = httpx.get(f"{process.base_url}/models")
    finally:
        process.stop()
    assert answer.json()["choices"][0]["message"]["content"] == "from the file"
    assert listed.json() == {"object": "list", "data": [{"id": "scripted-model"}]}
