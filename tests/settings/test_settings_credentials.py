"""Each way a value counts as a credential written out, from the configuration reference."""

import pytest

from auto_runtime.settings.credentials import argument_problem, names_a_credential, written_out_problem
from auto_runtime.settings.references import parse_template
from tests.settings.start_folder import StartFolder


def _tool_server(field_lines: str) -> str:
    return "tool_servers:\n  graph:\n    org: acme\n" + field_lines


def _header(name: str, value: str) -> str:
    return _tool_server(f"    url: https://graph.example.com/mcp\n    headers:\n      {name}: {value}\n")


def _gateway(base_url: str, more: str = "") -> str:
    return f"model_gateways:\n  - name: gw\n    base_url: {base_url}\n{more}"


def _command(args: str) -> str:
    return _tool_server(f"    command: /usr/bin/notes\n    args: {args}\n")


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("api_key", "plain-value-1"),
        ("Authorization", "letmein-now"),
        ("client_secret", "hunter2-hunter2"),
        ("password", "correct-horse"),
        ("token", "tok-en-value"),
        ("X-Api-Key", "some-value-9"),
    ],
)
def test_a_key_that_names_a_credential_needs_a_reference(start: StartFolder, header: str, value: str) -> None:
    start.file(_header(header, value))
    message = start.refused(hidden=[value])
    place = f"auto-runtime.yaml:6:{len(header) + 9}: tool_servers.graph.headers.{header}: "
    assert message.startswith(place)
    assert "names a credential" in message


def test_a_credential_named_key_with_a_reference_is_fine(start: StartFolder) -> None:
    start.file(_header("api_key", "${KEY}"))
    headers = start.load({"KEY": "value-of-key"}).settings.tool_servers["graph"].headers
    assert headers == {"api_key": "value-of-key"}


def test_a_credential_named_key_holding_a_number_is_written_out(start: StartFolder) -> None:
    start.file(_gateway("https://gw.example.com", "    headers:\n      password: 123456789\n"))
    assert "names a credential" in start.refused(hidden=["123456789"])


@pytest.mark.parametrize(
    "value",
    [
        "Bearer abcdefgh12345678",
        "bearer abcdefgh12345678",
        "sk-live-abcdef123456",
        "sk-proj-1234567890abcdef",
        "abk_0123456789abcdef",
    ],
)
def test_text_shaped_like_a_credential_is_written_out(start: StartFolder, value: str) -> None:
    start.file(_header("X-Custom", value))
    message = start.refused(hidden=[value])
    assert message.startswith("auto-runtime.yaml:6:17: tool_servers.graph.headers.X-Custom: holds text shaped")


def test_a_bearer_scheme_before_a_reference_is_fine(start: StartFolder) -> None:
    start.file(_header("Authorization", "Bearer ${K}"))
    assert start.load({"K": "k-12345678"}).settings.tool_servers["graph"].headers == {
        "Authorization": "Bearer k-12345678"
    }


def test_a_url_with_a_password_is_written_out(start: StartFolder) -> None:
    start.file(_gateway("https://ada:pass-secret-1@gw.example.com/v1"))
    message = start.refused(hidden=["pass-secret-1"])
    assert message == (
        "auto-runtime.yaml:3:15: model_gateways[0].base_url: is a URL with a password written out; "
        "refer to a variable that holds it, as ${NAME}"
    )


def test_a_url_whose_user_is_shaped_like_a_credential_is_written_out(start: StartFolder) -> None:
    start.file(_gateway("https://sk-abcdefghijkl@gw.example.com/v1"))
    message = start.refused(hidden=["sk-abcdefghijkl"])
    assert "is a URL whose user is shaped like a credential" in message


def test_a_url_whose_query_value_is_shaped_like_a_credential_is_written_out(start: StartFolder) -> None:
    start.file(_gateway("https://gw.example.com/v1?x=abk_0123456789ab"))
    message = start.refused(hidden=["abk_0123456789ab"])
    assert "is a URL whose query value is shaped like a credential" in message


def test_a_url_whose_query_names_a_credential_parameter_is_written_out(start: StartFolder) -> None:
    start.file(_gateway("https://gw.example.com/v1?api_key=plainvalue"))
    message = start.refused(hidden=["plainvalue"])
    assert "query parameter api_key names a credential" in message


def test_a_credential_named_query_parameter_with_a_reference_is_fine(start: StartFolder) -> None:
    start.file(_gateway("https://gw.example.com/v1?api_key=${GW_KEY}"))
    gateway = start.load({"GW_KEY": "gw-key-12345"}).settings.model_gateways[0]
    assert gateway.base_url.endswith("api_key=gw-key-12345")


@pytest.mark.parametrize(
    ("argument", "secret"),
    [
        ("--key=sk-live-abcdef123456", "sk-live-abcdef123456"),
        ("--header=Bearer abcdefgh12345678", "abcdefgh12345678"),
    ],
)
def test_an_argument_whose_value_has_the_shape_is_written_out(start: StartFolder, argument: str, secret: str) -> None:
    start.file(_command(f"[--read-only, '{argument}']"))
    message = start.refused(hidden=[secret])
    assert message.startswith("auto-runtime.yaml:5:25: tool_servers.graph.args[1]: the value of this argument")


def test_an_argument_is_judged_by_its_value_never_its_name(start: StartFolder) -> None:
    args = ("--api-key-file=/etc/notes/key", "--token=short")
    start.file(_command(f"[{', '.join(args)}]"))
    assert start.load().settings.tool_servers["graph"].args == args


def test_credential_kinds_are_judged_by_shape_only(start: StartFolder) -> None:
    kinds = ("none", "reference", "secret", "client_credentials")
    start.file(f"connections:\n  credential_kinds: [{', '.join(kinds)}]\n")
    assert start.load().settings.connections.credential_kinds == kinds


def test_a_credential_in_a_key_the_environment_replaces_still_stops_the_start(start: StartFolder) -> None:
    start.file(_gateway("https://gw.example.com", "    api_key: plain-secret-1\n"))
    message = start.refused({"MODEL_GATEWAYS": "[]"}, hidden=["plain-secret-1"])
    assert message.startswith("auto-runtime.yaml:4:14: model_gateways[0].api_key: its key names a credential")


@pytest.mark.parametrize(
    ("key", "named"),
    [
        ("api_key", True),
        ("Authorization", True),
        ("client_secret", True),
        ("password", True),
        ("token", True),
        ("X-Auth-Token", True),
        ("private_key", True),
        ("api_key_env", False),
        ("max_tokens", False),
        ("credential_kinds", False),
        ("client_id", False),
        ("X-Tenant", False),
    ],
)
def test_which_keys_name_a_credential(key: str, named: bool) -> None:
    assert names_a_credential(key) is named


def test_the_shapes_are_judged_in_the_text_written_out_only() -> None:
    assert written_out_problem(parse_template("Bearer ${TOKEN}"), "X-Custom") is None
    assert written_out_problem(parse_template("task-runner-12345678"), "X-Custom") is None
    assert argument_problem(parse_template("--sk-abcdefghijkl=value")) is None
