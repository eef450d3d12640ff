"""prediction-format §4 (seeds, "Prediction functions": upload_dataset): `PUT /datasets/{sha256}`, its media
type, length and size rules, and the CSV rules with their refusals."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import httpx

from tests.conformance.helpers import pointers, problem
from tests.conformance.prediction.helpers import SALES, digest, upload, uploaded


def test_a_dataset_uploads_and_answers_its_summary(client: httpx.Client, playbook: str) -> None:
    body = uploaded(client, playbook)
    assert body == {
        "dataset": digest(SALES),
        "bytes": len(SALES),
        "rows": 48,
        "series": 2,
        "columns": [
            {"name": "period", "kind": "period"},
            {"name": "series", "kind": "series"},
            {"name": "units", "kind": "number"},
            {"name": "price", "kind": "number"},
        ],
        "period": "month",
        "first_period": "2024-01",
        "last_period": "2025-12",
    }


def test_the_same_bytes_again_answer_the_same_summary_and_record_no_event(client: httpx.Client, playbook: str) -> None:
    first = uploaded(client, playbook)
    assert uploaded(client, playbook) == first
    events = client.get(f"{playbook}/events").json()
    assert [event for event in events["events"] if "dataset" in str(event.get("data"))] == []


def test_charset_utf8_is_taken_and_other_media_types_are_415(client: httpx.Client, playbook: str) -> None:
    assert upload(client, playbook, SALES, content_type="text/csv; charset=utf-8").status_code == 200
    problem(upload(client, playbook, SALES, content_type="application/json"), 415, "unsupported_media_type")
    problem(upload(client, playbook, SALES, content_type="text/csv; charset=latin-1"), 415, "unsupported_media_type")


def _length(answer: bytes) -> int:
    for line in answer.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def _raw_request(base_url: str, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """Sends `head` (and `body`) on a socket of its own and reads the answer: its head, then as many bytes as its
    `content-length` says."""
    address = urlsplit(base_url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as connection:
        connection.sendall(head.encode() + body)
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < _length(answer):
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
    return int(answer.split(b" ", 2)[1]), answer


def test_a_body_without_its_length_is_411(client: httpx.Client, playbook: str) -> None:
    def chunks() -> object:
        yield SALES[:100]
        yield SALES[100:]

    response = client.put(
        f"{playbook}/datasets/{digest(SALES)}", content=chunks(), headers={"Content-Type": "text/csv"}
    )
    problem(response, 411, "length_required")


def test_a_length_past_64_mib_is_413_before_the_body_is_read(client: httpx.Client, playbook: str) -> None:
    head = (
        f"PUT {playbook}/datasets/{'0' * 64} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/csv\r\n"
        "Content-Length: 67108865\r\n\r\n"
    )
    status, answer = _raw_request(str(client.base_url), head)
    assert status == 413, answer
    assert b'"reason":"content_too_large"' in answer.replace(b" ", b"")


def test_a_body_whose_digest_is_not_the_path_is_refused_at_body(client: httpx.Client, playbook: str) -> None:
    body = problem(upload(client, playbook, SALES, name="a" * 64), 422, "invalid_input")
    assert pointers(body) == ["/body"]
    assert "because" not in body


def _refused(client: httpx.Client, playbook: str, text: str) -> dict[str, object]:
    return problem(upload(client, playbook, text.encode()), 422, "invalid_input")


def test_a_byte_order_mark_and_crlf_line_ends_are_read(client: httpx.Client, playbook: str) -> None:
    data = "\ufeffperiod,series,units\r\n2026-W01,a,1\r\n2026-W02,a,2\r\n2026-W03,a,3".encode()
    body = uploaded(client, playbook, data)
    assert (body["period"], body["first_period"], body["last_period"], body["rows"]) == (
        "week",
        "2026-W01",
        "2026-W03",
        3,
    )


def test_quoted_series_are_read(client: httpx.Client, playbook: str) -> None:
    data = b'period,series,units\n2026,"north, east",1\n2027,"north, east",2\n2026,"say ""hi""",3\n'
    body = uploaded(client, playbook, data)
    assert (body["series"], body["period"]) == (2, "year")


def test_a_gap_a_repeat_and_a_step_back_are_not_in_order(client: httpx.Client, playbook: str) -> None:
    text = (
        "period,series,units\n2026-07-01,a,1\n2026-07-03,a,2\n2026-07-03,a,3\n2026-07-02,a,4\n"
        "2026-07-01,b,1\n2026-07-02,b,2\n"
    )
    body = _refused(client, playbook, text)
    assert body["because"] == "not_in_order"
    assert pointers(body) == ["/body/3/period", "/body/4/period", "/body/5/period"]
    assert "2026-07-02" in body["errors"][0]["detail"]  # names the period expected
    assert body["errors"][0]["detail"].startswith("Line 3: ")
    assert "2026-07-04" in body["errors"][1]["detail"]  # the check goes on from the refused row's period


def test_values_that_are_not_finite(client: httpx.Client, playbook: str) -> None:
    text = "period,series,units\n2026-Q1,a,NaN\n2026-Q2,a,-Infinity\n2026-Q3,a,1e999\n2026-Q4,a,+inf\n"
    body = _refused(client, playbook, text)
    assert body["because"] == "not_finite"
    assert pointers(body) == ["/body/2/units", "/body/3/units", "/body/4/units", "/body/5/units"]


def test_because_follows_the_first_error_only(client: httpx.Client, playbook: str) -> None:
    body = _refused(client, playbook, "period,series,units\n2026,a,x\n2027,a,nan\n")
    assert "because" not in body
    assert pointers(body) == ["/body/2/units", "/body/3/units"]


def test_header_rules(client: httpx.Client, playbook: str) -> None:
    for header in (
        "period,units\n",
        "series,units\n",
        "period,series\n",
        "period,series,Units\n",
        "period,series,a,a\n",
    ):
        body = _refused(client, playbook, header + "2026,a,1\n")
        assert pointers(body)[0] == "/body/1", (header, body)
    many = ",".join(["period", "series"] + [f"c{index}" for index in range(63)])
    assert pointers(_refused(client, playbook, many + "\n"))[0] == "/body/1"


def test_row_and_cell_rules(client: httpx.Client, playbook: str) -> None:
    text = (
        "period,series,units\n"
        "2026-07,a,1\n"
        "\n"
        "2026-08,a\n"
        '2026-09,"a,1\n'
        "2026-13,b,1\n"
        "2026-07,,1\n"
        "2026-07, c,1\n"
        "2026-07,d,\n"
        "2026-07,e,1.2.3\n"
        "2026-07-01,f,1\n"
    )
    body = _refused(client, playbook, text)
    assert pointers(body) == [
        "/body/3",
        "/body/4",
        "/body/5",
        "/body/6/period",
        "/body/7/series",
        "/body/8/series",
        "/body/9/units",
        "/body/10/units",
        "/body/11/period",
    ]
    assert "because" not in body


def test_at_most_twenty_errors_in_line_order(client: httpx.Client, playbook: str) -> None:
    text = "period,series,units\n" + "".join(f"2026-{month:02d},a,x\n" for month in range(1, 13)) * 3
    body = _refused(client, playbook, text)
    assert len(body["errors"]) == 20
    lines = [int(pointer.split("/")[2]) for pointer in pointers(body)]
    assert lines == sorted(lines)


def test_a_week_that_does_not_exist_is_refused(client: httpx.Client, playbook: str) -> None:
    body = _refused(client, playbook, "period,series,units\n2025-W53,a,1\n")
    assert pointers(body) == ["/body/2/period"]


def test_a_header_without_rows_is_refused(client: httpx.Client, playbook: str) -> None:
    assert pointers(_refused(client, playbook, "period,series,units\n")) == ["/body/1"]


def test_upload_needs_a_playbook_the_org_has(client: httpx.Client) -> None:
    problem(upload(client, "/v1/orgs/acme/playbooks/no-such-playbook", SALES), 404, "not_found")
