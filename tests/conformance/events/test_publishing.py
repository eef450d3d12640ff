"""Seeds, "Publishing events": every attribute, limit and rule of `publish_event`, through the real HTTP server.

Each test names the rule it checks. "Publishing the same event again" and "What the runtime keeps for itself"
have files of their own.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.conformance.events.publishing import (
    ISO_MILLISECONDS,
    events_url,
    new_playbook,
    pointers_of,
    publish,
    publish_raw,
)
from tests.e2e.server_process import ServerProcess

MONTH_CLOSED: dict[str, Any] = {
    "source": "/ledger/eu",
    "type": "com.acme.ledger.month-closed",
    "id": "2026-09",
    "subject": "september",
    "data": {"region": "eu", "revenue": 120000},
}


def test_the_seeds_example_returns_its_id_time_and_recorded_at(local_server: ServerProcess) -> None:
    """It returns 200 with the event's id and time, and recorded_at, when the playbook recorded it."""
    playbook = new_playbook(local_server)
    response = publish(local_server, playbook, MONTH_CLOSED)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"id", "time", "recorded_at"}
    assert body["id"] == "2026-09"
    assert ISO_MILLISECONDS.match(body["time"]) and ISO_MILLISECONDS.match(body["recorded_at"])
    # `time`, left out: "the runtime uses the time it records the event".
    assert body["time"] == body["recorded_at"]


def test_a_given_time_is_returned_in_utc_with_milliseconds(local_server: ServerProcess) -> None:
    """`time`: When it happened, in RFC 3339; returned as ISO 8601 UTC with milliseconds."""
    playbook = new_playbook(local_server)
    cases = {
        "2026-10-01T09:00:00Z": "2026-10-01T09:00:00.000Z",
        "2026-10-01T10:59:00+02:00": "2026-10-01T08:59:00.000Z",
        "2026-10-01T09:00:00.123456-01:30": "2026-10-01T10:30:00.123Z",
        "2026-10-01t09:00:00.5z": "2026-10-01T09:00:00.500Z",
    }
    for number, (given, shown) in enumerate(cases.items()):
        response = publish(local_server, playbook, {**MONTH_CLOSED, "id": f"t{number}", "time": given})
        assert response.status_code == 200, response.text
        assert response.json()["time"] == shown


def test_without_an_id_the_runtime_makes_one_and_every_request_records_a_new_event(
    local_server: ServerProcess,
) -> None:
    """`id`: the runtime makes one when you leave it out. "Without an id, every request records a new event"."""
    playbook = new_playbook(local_server)
    event = {key: value for key, value in MONTH_CLOSED.items() if key != "id"}
    first = publish(local_server, playbook, event)
    second = publish(local_server, playbook, event)
    assert first.status_code == second.status_code == 200
    assert first.json()["id"] and first.json()["id"] != second.json()["id"]
    with local_server.client() as client:
        listed = client.get(events_url(playbook), params={"type": "event_published"}).json()["events"]
    assert {e["data"]["event_id"] for e in listed} == {first.json()["id"], second.json()["id"]}


@pytest.mark.parametrize("missing", ["source", "type"])
def test_source_and_type_are_required(local_server: ServerProcess, missing: str) -> None:
    """`source` and `type`: Required."""
    playbook = new_playbook(local_server)
    event = {key: value for key, value in MONTH_CLOSED.items() if key != missing}
    response = publish(local_server, playbook, event)
    assert response.status_code == 422
    assert response.json()["reason"] == "invalid_input"
    assert pointers_of(response) == ["/event"]
    assert missing in response.json()["detail"]


def test_the_event_is_a_json_object(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    with local_server.client() as client:
        for value in ([], "event", 1, None):
            response = client.post(events_url(playbook), json={"event": value})
            assert response.status_code == 422, response.text
            assert pointers_of(response) == ["/event"]
        response = client.post(events_url(playbook), json={})
        assert response.status_code == 422
        assert pointers_of(response) == [""]


@pytest.mark.parametrize(("attribute", "limit"), [("source", 1024), ("type", 256), ("id", 256), ("subject", 1024)])
def test_attribute_limits(local_server: ServerProcess, attribute: str, limit: int) -> None:
    """The limits column: source 1,024 characters, type 256, id 256, subject 1,024."""
    playbook = new_playbook(local_server)
    fill = "/" + "a" * (limit - 1) if attribute == "source" else "é" * limit
    accepted = publish(local_server, playbook, {**MONTH_CLOSED, attribute: fill})
    assert accepted.status_code == 200, accepted.text
    refused = publish(local_server, playbook, {**MONTH_CLOSED, attribute: fill + "a"})
    assert refused.status_code == 422
    assert pointers_of(refused) == [f"/event/{attribute}"]


@pytest.mark.parametrize("attribute", ["source", "type", "id", "subject", "time", "specversion", "datacontenttype"])
def test_attributes_are_strings(local_server: ServerProcess, attribute: str) -> None:
    playbook = new_playbook(local_server)
    for value in (1, True, None, ["x"], {"x": 1}):
        response = publish(local_server, playbook, {**MONTH_CLOSED, attribute: value})
        assert response.status_code == 422, (value, response.text)
        assert pointers_of(response) == [f"/event/{attribute}"]


@pytest.mark.parametrize("attribute", ["source", "type", "id", "subject"])
def test_an_empty_attribute_is_refused(local_server: ServerProcess, attribute: str) -> None:
    playbook = new_playbook(local_server)
    response = publish(local_server, playbook, {**MONTH_CLOSED, attribute: ""})
    assert response.status_code == 422
    assert pointers_of(response) == [f"/event/{attribute}"]


def test_source_is_a_uri_reference(local_server: ServerProcess) -> None:
    """`source`: a URI reference such as `/ledger/eu` or `https://acme.example/ledger`."""
    playbook = new_playbook(local_server)
    good = ["/ledger/eu", "https://acme.example/ledger", "urn:acme:ledger", "ledger", "//acme.example/x?y=1#z"]
    for number, source in enumerate(good):
        response = publish(local_server, playbook, {**MONTH_CLOSED, "id": f"s{number}", "source": source})
        assert response.status_code == 200, (source, response.text)
    for source in ("/ledger eu", "/ledger/%zz", "1http://x", "a:b:c d", "/ledger/é", "http://[::1/x", "a b:c"):
        response = publish(local_server, playbook, {**MONTH_CLOSED, "source": source})
        assert response.status_code == 422, source
        assert pointers_of(response) == ["/event/source"]


def test_specversion_is_1_0(local_server: ServerProcess) -> None:
    """`specversion`: `1.0`."""
    playbook = new_playbook(local_server)
    assert publish(local_server, playbook, {**MONTH_CLOSED, "specversion": "1.0"}).status_code == 200
    for value in ("0.3", "1", "1.0 ", "2.0"):
        response = publish(local_server, playbook, {**MONTH_CLOSED, "specversion": value})
        assert response.status_code == 422, value
        assert pointers_of(response) == ["/event/specversion"]


def test_datacontenttype_is_a_media_type(local_server: ServerProcess) -> None:
    """`datacontenttype` is a media type, such as `application/json`."""
    playbook = new_playbook(local_server)
    good = ["application/json", "text/plain; charset=utf-8", "application/cloudevents+json", 'text/csv;a="b c"']
    for number, value in enumerate(good):
        response = publish(local_server, playbook, {**MONTH_CLOSED, "id": f"m{number}", "datacontenttype": value})
        assert response.status_code == 200, (value, response.text)
    for value in ("json", "application/", "/json", "application json", "text/plain; charset", "a/b/c"):
        response = publish(local_server, playbook, {**MONTH_CLOSED, "datacontenttype": value})
        assert response.status_code == 422, value
        assert pointers_of(response) == ["/event/datacontenttype"]


def test_dataschema_is_an_absolute_uri(local_server: ServerProcess) -> None:
    """`dataschema`: the absolute URI of a schema `data` follows."""
    playbook = new_playbook(local_server)
    for number, value in enumerate(["https://acme.example/schemas/month", "urn:acme:schema:month"]):
        response = publish(local_server, playbook, {**MONTH_CLOSED, "id": f"d{number}", "dataschema": value})
        assert response.status_code == 200, (value, response.text)
    for value in ("/schemas/month", "schemas/month", "https://acme.example/a b", "//acme.example/s"):
        response = publish(local_server, playbook, {**MONTH_CLOSED, "dataschema": value})
        assert response.status_code == 422, value
        assert pointers_of(response) == ["/event/dataschema"]


def test_time_is_rfc_3339_on_a_real_date(local_server: ServerProcess) -> None:
    """`time`: RFC 3339, such as `2026-10-01T09:00:00Z`."""
    playbook = new_playbook(local_server)
    refused = [
        "2026-10-01",
        "2026-10-01T09:00:00",
        "2026-10-01 09:00:00Z",
        "2026-10-01T09:00Z",
        "2026-10-01T9:00:00Z",
        "2026-02-30T09:00:00Z",
        "2026-13-01T09:00:00Z",
        "2026-10-01T24:00:00Z",
        "2026-10-01T09:60:00Z",
        "2026-10-01T09:00:00+24:00",
        "2026-10-01T09:00:00.Z",
        "yesterday",
    ]
    for value in refused:
        response = publish(local_server, playbook, {**MONTH_CLOSED, "time": value})
        assert response.status_code == 422, value
        assert pointers_of(response) == ["/event/time"]
    assert publish(local_server, playbook, {**MONTH_CLOSED, "id": "leap", "time": "2024-02-29T00:00:00Z"}).is_success


def test_a_second_of_60_only_at_the_end_of_a_day_in_utc(local_server: ServerProcess) -> None:
    """ "A `time` has a second of 60 only at the end of a day in UTC"; it counts as the next day's first second."""
    playbook = new_playbook(local_server)
    accepted = {
        "2016-12-31T23:59:60Z": "2017-01-01T00:00:00.000Z",
        "2017-01-01T00:59:60+01:00": "2017-01-01T00:00:00.000Z",
        "2016-12-31T23:59:60.25Z": "2017-01-01T00:00:00.250Z",
    }
    for number, (given, shown) in enumerate(accepted.items()):
        response = publish(local_server, playbook, {**MONTH_CLOSED, "id": f"l{number}", "time": given})
        assert response.status_code == 200, (given, response.text)
        assert response.json()["time"] == shown
    for value in ("2016-12-31T12:00:60Z", "2016-12-31T23:59:60+01:00", "2016-12-31T23:58:60Z"):
        response = publish(local_server, playbook, {**MONTH_CLOSED, "time": value})
        assert response.status_code == 422, value
        assert pointers_of(response) == ["/event/time"]


@pytest.mark.parametrize("attribute", ["id", "type", "subject"])
def test_id_type_and_subject_need_a_character_that_is_not_a_space(local_server: ServerProcess, attribute: str) -> None:
    """ "`id`, `type` and `subject` need a character that is not a space"."""
    playbook = new_playbook(local_server)
    for value in (" ", "   "):
        response = publish(local_server, playbook, {**MONTH_CLOSED, attribute: value})
        assert response.status_code == 422
        assert pointers_of(response) == [f"/event/{attribute}"]
    assert publish(local_server, playbook, {**MONTH_CLOSED, "id": "x", attribute: " a "}).status_code == 200


@pytest.mark.parametrize("attribute", ["source", "type", "id", "subject", "time", "datacontenttype", "region"])
def test_no_string_holds_a_control_character_a_lone_surrogate_or_a_noncharacter(
    local_server: ServerProcess, attribute: str
) -> None:
    """ "No string may contain a control character, a lone surrogate or a noncharacter"."""
    playbook = new_playbook(local_server)
    good = {"source": "/l", "type": "t", "id": "i", "subject": "s", "datacontenttype": "a/b", "region": "e"}
    good["time"] = "2026-10-01T09:00:00Z"
    for bad in ("\\u0000", "\\n", "\\t", "\\u007f", "\\u0085", "\\ud800", "\\udfff", "\\ufdd0", "\\ufffe"):
        body = json.dumps({"event": {**good, attribute: "PLACE"}}).replace('"PLACE"', f'"{good[attribute]}{bad}"')
        response = publish_raw(local_server, playbook, body)
        assert response.status_code == 422, (bad, response.text)
        assert pointers_of(response) == [f"/event/{attribute}"], bad
    if attribute in ("type", "id", "subject", "region"):
        # A pair of surrogates is one character; text beyond ASCII is fine.
        body = json.dumps({"event": {**good, attribute: "PLACE"}}).replace('"PLACE"', '"x\\ud83d\\ude00 \\u00e9"')
        assert publish_raw(local_server, playbook, body).status_code == 200


def test_data_is_any_json_value(local_server: ServerProcess) -> None:
    """`data`: Any JSON value, kept in full (control characters included: the text rules are the attributes')."""
    playbook = new_playbook(local_server)
    values: list[Any] = [{"a": [1, 2.5, None, True]}, [1, "two"], "text\nwith a newline", 0, 1.5, False, None]
    for number, value in enumerate(values):
        response = publish(local_server, playbook, {**MONTH_CLOSED, "id": f"v{number}", "data": value})
        assert response.status_code == 200, (value, response.text)
    with local_server.client() as client:
        events = client.get(events_url(playbook), params={"type": "event_published", "order": "asc"}).json()["events"]
    assert [e["data"]["data"] for e in events] == values


def test_data_nests_at_most_510_levels(local_server: ServerProcess) -> None:
    """ "A deeper one returns `invalid_input` at `/event/data`"."""
    playbook = new_playbook(local_server)
    deepest = json.loads("[" * 510 + "]" * 510)
    assert publish(local_server, playbook, {**MONTH_CLOSED, "data": deepest}).status_code == 200
    for deeper in (json.loads("[" * 511 + "]" * 511), json.loads('{"a":' * 511 + "1" + "}" * 511)):
        response = publish(local_server, playbook, {**MONTH_CLOSED, "id": "deeper", "data": deeper})
        assert response.status_code == 422
        assert pointers_of(response) == ["/event/data"]


def test_data_holds_no_lone_surrogate(local_server: ServerProcess) -> None:
    """A lone surrogate is refused at its place in the data, in the words of every text."""
    playbook = new_playbook(local_server)
    for body, pointer in (
        ('{"event":{"source":"/s","type":"t","data":{"a":"\\ud800"}}}', "/event/data/a"),
        ('{"event":{"source":"/s","type":"t","data":{"\\udc00":1}}}', "/event/data/\udc00"),
        ('{"event":{"source":"/s","type":"t","data":"\\udfff"}}', "/event/data"),
    ):
        response = publish_raw(local_server, playbook, body)
        assert response.status_code == 422
        assert pointers_of(response) == [pointer]
        assert response.json()["detail"].endswith(": expected text that is valid Unicode, without a lone surrogate.")


def test_the_whole_event_with_id_and_time_is_at_most_240_kib(local_server: ServerProcess) -> None:
    """ "The event, with its id and time filled in, may be at most 240 KiB as JSON"."""
    playbook = new_playbook(local_server)
    limit = 240 * 1024
    event: dict[str, Any] = {"source": "/s", "type": "t", "id": "big", "time": "2026-10-01T09:00:00.000Z", "data": ""}
    event["data"] = "x" * (limit - len(json.dumps(event, separators=(",", ":"))))
    assert len(json.dumps(event, separators=(",", ":"))) == limit
    assert publish(local_server, playbook, event).status_code == 200
    response = publish(local_server, playbook, {**event, "id": "bigger", "data": event["data"] + "é"})
    assert response.status_code == 422
    assert pointers_of(response) == ["/event"]
    # Left out, the id and time the runtime fills in count: a made id is a 36-character UUID, a time 24 characters.
    unfilled = {"source": "/s", "type": "t", "data": ""}
    filled_size = len(json.dumps({**unfilled, "id": "0" * 36, "time": "0" * 24}, separators=(",", ":")))
    unfilled["data"] = "x" * (limit - filled_size + 1)
    response = publish(local_server, playbook, unfilled)
    assert response.status_code == 422
    assert pointers_of(response) == ["/event"]
    unfilled["data"] = "x" * (limit - filled_size)
    assert publish(local_server, playbook, unfilled).status_code == 200


def test_extensions_are_kept_as_given(local_server: ServerProcess) -> None:
    """ "Any other attribute is an extension ... Its value is a string, a boolean or an integer, kept as given"."""
    playbook = new_playbook(local_server)
    extensions = {"region": "eu", "audited": True, "closed": False, "count": 3, "negative": -7, "big": 2**53, "x1": ""}
    response = publish(local_server, playbook, {**MONTH_CLOSED, **extensions})
    assert response.status_code == 200, response.text
    with local_server.client() as client:
        listed = client.get(events_url(playbook)).json()["events"][0]
        full = client.get(f"{events_url(playbook)}/{listed['id']}").json()
    assert listed["data"]["extensions"] == extensions
    assert full["data"]["extensions"] == extensions
    assert all(type(full["data"]["extensions"][k]) is type(v) for k, v in extensions.items())


def test_an_extension_value_is_a_string_a_boolean_or_an_integer(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    for value in (1.5, 1.0, None, [1], {"a": 1}):
        response = publish(local_server, playbook, {**MONTH_CLOSED, "region": value})
        assert response.status_code == 422, value
        assert pointers_of(response) == ["/event/region"]


def test_an_extension_name_is_1_to_20_lowercase_letters_and_digits(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    assert publish(local_server, playbook, {**MONTH_CLOSED, "a" * 20: 1, "0": 2, "abc123": 3}).status_code == 200
    for name in ("a" * 21, "Region", "re-gion", "re_gion", "région", "data_base64", "a b"):
        response = publish(local_server, playbook, {**MONTH_CLOSED, name: "x"})
        assert response.status_code == 422, name
        assert pointers_of(response) == [f"/event/{name}"]


def test_an_event_has_at_most_32_extensions(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    thirty_two = {f"e{n}": n for n in range(32)}
    assert publish(local_server, playbook, {**MONTH_CLOSED, **thirty_two}).status_code == 200
    response = publish(local_server, playbook, {**MONTH_CLOSED, "id": "more", **thirty_two, "e32": 32})
    assert response.status_code == 422
    assert pointers_of(response) == ["/event"]


def test_every_refusal_is_a_sentence_naming_its_attribute(local_server: ServerProcess) -> None:
    """ "Responses and errors": each entry of `errors` holds one sentence and the field's pointer."""
    playbook = new_playbook(local_server)
    response = publish(local_server, playbook, {**MONTH_CLOSED, "time": "2016-12-31T12:00:60Z"})
    problem = response.json()
    assert problem["type"] == "https://on.auto/problems/invalid_input"
    (error,) = problem["errors"]
    assert error["detail"].startswith("event, then time") and error["detail"].endswith(".")
    assert "60" in error["detail"] and error["detail"] in problem["detail"]


def test_a_playbook_that_does_not_exist_is_not_found_and_a_retired_one_refuses(local_server: ServerProcess) -> None:
    """Playbooks: "Commands inside it return `conflict` with the kind `retired`"."""
    response = publish(local_server, "no-such-playbook", MONTH_CLOSED)
    assert response.status_code == 404
    playbook = new_playbook(local_server)
    with local_server.client() as client:
        assert client.post(f"/v1/orgs/acme/playbooks/{playbook}/retire").status_code == 200
    response = publish(local_server, playbook, MONTH_CLOSED)
    assert response.status_code == 409
    assert response.json()["kind"] == "retired"


def test_the_id_is_uuid_shaped_when_the_runtime_makes_it(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    response = publish(local_server, playbook, {"source": "/s", "type": "t"})
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", response.json()["id"])
