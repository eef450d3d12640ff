"""What the server checks in each entry of tool_servers at start, without the network."""

import textwrap

import pytest

from tests.settings.start_folder import StartFolder


def _entry(lines: str, name: str = "graph") -> str:
    return f"tool_servers:\n  {name}:\n" + textwrap.indent(textwrap.dedent(lines), "    ")


def test_the_three_types_are_taken_from_the_field_that_names_them(start: StartFolder) -> None:
    start.file(
        _entry("url: https://graph.example.com/mcp\norg: acme\n")
        + "  notes:\n    command: /usr/bin/notes\n    org: '*'\n"
        + "  billing:\n    document: openapi/billing.yaml\n    base_url: https://billing.example.com/v2\n"
        + "    org: [acme, globex]\n    record_content: false\n"
    )
    servers = start.load().settings.tool_servers
    assert {name: server.type for name, server in servers.items()} == {
        "graph": "mcp",
        "notes": "stdio",
        "billing": "openapi",
    }
    assert servers["notes"].orgs is None
    assert servers["billing"].orgs == ("acme", "globex")
    assert servers["graph"].orgs == ("acme",)
    assert servers["billing"].record_content is False
    assert servers["graph"].record_content is True


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ("org: acme\n", "tool_servers.graph: expects exactly one of url, command and document"),
        (
            "url: https://g.example.com\ncommand: /bin/x\norg: acme\n",
            "tool_servers.graph: expects exactly one of url, command and document",
        ),
        (
            "type: mcp\ncommand: /bin/x\norg: acme\n",
            "tool_servers.graph.type: expects url for a server of type mcp",
        ),
        (
            "url: https://g.example.com\nargs: [--x]\norg: acme\n",
            "tool_servers.graph.args: is a field of another type; a server of type mcp does not take it",
        ),
        (
            "command: /bin/x\nheaders: {X-A: b}\norg: acme\n",
            "tool_servers.graph.headers: is a field of another type",
        ),
        ("url: https://g.example.com\n", "tool_servers.graph.org: is required"),
        (
            "url: https://g.example.com\norg: '*'\nplaybooks: [sales]\n",
            "tool_servers.graph.playbooks: expects no playbooks beside org *",
        ),
        (
            "url: https://g.example.com/${PATH_SECRET}\norg: acme\n",
            "tool_servers.graph.url: expects no reference here; only headers, query_params, security, env",
        ),
        ("command: ${CMD}\norg: acme\n", "tool_servers.graph.command: expects no reference here"),
        (
            "command: /bin/x\nargs: ['--key=${KEY}']\norg: acme\n",
            "tool_servers.graph.args[0]: expects no reference",
        ),
        (
            "document: https://b.example.com/openapi.json\nsecurity: {apiKeyAuth: written-out}\norg: acme\n",
            "tool_servers.graph.security.apiKeyAuth: expects a ${NAME} reference",
        ),
        (
            "url: https://g.example.com\nheaders: {Authorization: '${H}'}\n"
            "auth: {issuer: https://id.example.com, client_id: c, client_secret: '${S}'}\norg: acme\n",
            "tool_servers.graph.headers.Authorization: expects no Authorization header beside an auth block",
        ),
        (
            "url: https://g.example.com\nheaders: {Mcp-Session-Id: abc}\norg: acme\n",
            "tool_servers.graph.headers.Mcp-Session-Id: is a header the runtime sets itself",
        ),
        (
            "url: https://g.example.com\nheaders: {Content-Type: text/plain}\norg: acme\n",
            "tool_servers.graph.headers.Content-Type: is a header the runtime sets itself",
        ),
        (
            "url: https://g.example.com\n"
            "auth: {issuer: http://id.example.com, client_id: c, client_secret: '${S}'}\norg: acme\n",
            "tool_servers.graph.auth.issuer: expects an https URL, or an http URL on a loopback address",
        ),
        (
            "url: https://g.example.com\nauth: {issuer: https://id.example.com, client_id: c}\norg: acme\n",
            "tool_servers.graph.auth: expects client_secret, or private_key with algorithm",
        ),
        (
            "url: https://g.example.com\n"
            "auth: {issuer: https://id.example.com, client_id: c, private_key: '${K}'}\norg: acme\n",
            "tool_servers.graph.auth.algorithm: expects algorithm beside private_key",
        ),
        (
            "document: https://b.example.com/o.json\nbase_url: http://b.example.com\norg: acme\n",
            "tool_servers.graph.base_url: expects an https URL, or an http URL on a loopback address",
        ),
        (
            "document: https://b.example.com/o.json\nbase_url: https://b.example.com/v2?x=1\norg: acme\n",
            "tool_servers.graph.base_url: expects a URL with no query and no fragment",
        ),
        (
            "document: http://b.example.com/o.json\norg: acme\n",
            "tool_servers.graph.document: expects an https URL, or an http URL on a loopback address",
        ),
        ("document: ../outside.yaml\norg: acme\n", "tool_servers.graph.document: expects a path relative to"),
        (
            "document: /etc/openapi.yaml\norg: acme\n",
            "tool_servers.graph.document: expects a path relative to",
        ),
        (
            "url: https://g.example.com\norg: acme\nallowed: []\n",
            "tool_servers.graph.allowed: expects at least one",
        ),
        (
            "url: https://g.example.com\norg: acme\nallowed: [a, a]\n",
            "tool_servers.graph.allowed[1]: expects each tool once",
        ),
        (
            "url: https://g.example.com\norg: acme\nallowed: ['*']\n",
            "tool_servers.graph.allowed[0]: expects tool names without *",
        ),
        (
            "url: https://g.example.com\norg: acme\nallowed: [graph/search]\n",
            "tool_servers.graph.allowed[0]: expects a tool name of 1 to 128",
        ),
        (
            "url: https://g.example.com\norg: [acme, acme]\n",
            "tool_servers.graph.org: expects a list of different org ids",
        ),
        (
            "url: https://g.example.com\norg: acme\nplaybooks: [Sales]\n",
            "tool_servers.graph.playbooks[0]: expects a playbook id",
        ),
        ("url: ftp://g.example.com\norg: acme\n", "tool_servers.graph.url: expects an http or https URL"),
        (
            "url: https://g.example.com\norg: acme\nplaybooks: []\n",
            "tool_servers.graph.playbooks: expects at least 1",
        ),
    ],
)
def test_an_entry_the_server_refuses(start: StartFolder, lines: str, expected: str) -> None:
    start.file(_entry(lines))
    message = start.refused({"S": "client-secret-1", "H": "Bearer header-secret-1", "K": "private-key-1"})
    assert message.split(": ", 1)[1].startswith(expected), message
    for value in ("written-out", "client-secret-1", "header-secret-1", "private-key-1", "PATH_SECRET"):
        assert value not in message.split(": ", 2)[-1]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Graph", "expects a name of 1 to 32 lowercase letters"),
        ("9graph", "expects a name of 1 to 32"),
        ("graph--search", "expects a name of 1 to 32"),
        ("graph-", "expects a name of 1 to 32"),
        ("a" * 33, "expects a name of 1 to 32"),
        ("anthropic", "expects a name that is not the name of a model provider or gateway"),
        ("gw", "expects a name that is not the name of a model provider or gateway"),
    ],
)
def test_a_name_the_server_refuses(start: StartFolder, name: str, expected: str) -> None:
    start.file(
        "model_gateways:\n  - name: gw\n    base_url: https://gw.example.com\n"
        + _entry("url: https://g.example.com\norg: acme\n", name)
    )
    message = start.refused()
    assert message == f"auto-runtime.yaml:5:3: tool_servers.{name}: {expected}" or expected in message


def test_a_document_inside_the_directory_of_the_file_and_a_loopback_url(start: StartFolder) -> None:
    start.file(
        _entry("document: ./apis/billing.yaml\nbase_url: http://127.0.0.1:8080/v1\norg: acme\n", "billing")
        + "  local:\n    url: http://localhost:9000/mcp\n    org: acme\n"
        + "  loopdoc:\n    document: http://[::1]:8000/openapi.json\n    org: acme\n"
    )
    assert set(start.load().settings.tool_servers) == {"billing", "local", "loopdoc"}


def test_tool_servers_from_the_environment_resolve_references_and_are_checked(start: StartFolder) -> None:
    env = {
        "TOOL_SERVERS": '{"graph": {"url": "https://g.example.com", "org": "acme", '
        '"headers": {"Authorization": "Bearer ${GRAPH_KEY}"}}}',
        "GRAPH_KEY": "graph-key-123",
    }
    loaded = start.load(env)
    assert loaded.settings.tool_servers["graph"].headers == {"Authorization": "Bearer graph-key-123"}
    assert "graph-key-123" in loaded.secret_values
    written = '{"graph": {"url": "https://g.example.com", "org": "acme", "headers": {"Authorization": "plain-1"}}}'
    message = start.refused({"TOOL_SERVERS": written}, hidden=["plain-1"])
    assert message.startswith("TOOL_SERVERS: graph.headers.Authorization: its key names a credential")
