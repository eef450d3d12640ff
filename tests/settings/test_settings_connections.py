"""The connections section: its defaults and what stops the start."""

import pytest

from tests.settings.start_folder import StartFolder


def test_the_example_section_is_read(start: StartFolder) -> None:
    start.file(
        """
        connections:
          people_may_add: true
          allowed_hosts: ['*.example.com', 'crm.example.com']
          credential_kinds: [none, reference, secret, client_credentials]
          variables: [CRM_API_KEY]
        """
    )
    policy = start.load().settings.connections
    assert policy.allowed_hosts == ("*.example.com", "crm.example.com")
    assert policy.variables == ("CRM_API_KEY",)


def test_every_rule_has_a_default(start: StartFolder) -> None:
    policy = start.load().settings.connections
    assert (policy.people_may_add, policy.allowed_hosts, policy.credential_kinds, policy.variables) == (
        True,
        None,
        None,
        (),
    )


def test_connections_from_the_environment_win_whole(start: StartFolder) -> None:
    start.file("connections:\n  variables: [CRM_API_KEY]\n")
    policy = start.load({"CONNECTIONS": '{"people_may_add": false}'}).settings.connections
    assert (policy.people_may_add, policy.variables) == (False, ())


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            "  people_may: true\n",
            "auto-runtime.yaml:2:3: connections.people_may: is not a key the server knows",
        ),
        ("  allowed_hosts: ['*']\n", "connections.allowed_hosts[0]: expects a host, or *. and a host"),
        ("  allowed_hosts: ['a.*.example.com']\n", "connections.allowed_hosts[0]: expects a host"),
        ("  allowed_hosts: ['https://crm.example.com']\n", "connections.allowed_hosts[0]: expects a host"),
        ("  credential_kinds: [password]\n", "connections.credential_kinds[0]: expects 'none', 'reference'"),
        (
            "  variables: [SECRETS_KEY]\n",
            "connections.variables[0]: expects a variable the runtime does not read",
        ),
        (
            "  variables: [API_KEYS]\n",
            "connections.variables[0]: expects a variable the runtime does not read",
        ),
        (
            "  variables: [PUBLIC_URL]\n",
            "connections.variables[0]: expects a variable the runtime does not read",
        ),
        ("  variables: [ANTHROPIC_API_KEY]\n", "connections.variables[0]: expects a variable"),
        ("  variables: [AWS_SECRET_ACCESS_KEY]\n", "connections.variables[0]: expects a variable"),
        (
            "  variables: [AZURE_CLIENT_CERTIFICATE_PASSWORD]\n",
            "connections.variables[0]: expects a variable",
        ),
        ("  variables: [OK, 1BAD]\n", "connections.variables[1]: expects a variable name"),
    ],
)
def test_what_stops_the_start(start: StartFolder, lines: str, expected: str) -> None:
    start.file("connections:\n" + lines)
    assert expected in start.refused()


def test_a_variable_a_reference_of_the_file_names_is_reserved(start: StartFolder) -> None:
    start.file(
        """
        tool_servers:
          graph:
            url: https://graph.example.com/mcp
            headers:
              Authorization: Bearer ${GRAPH_KEY}
            org: acme
        connections:
          variables: [CRM_KEY, GRAPH_KEY]
        """
    )
    message = start.refused({"GRAPH_KEY": "graph-key-1234"}, hidden=["graph-key-1234"])
    assert message.startswith("auto-runtime.yaml:9:24: connections.variables[1]: expects a variable the runtime")


def test_a_gateways_api_key_env_is_reserved(start: StartFolder) -> None:
    start.file("connections:\n  variables: [GW_KEY]\n")
    env = {
        "MODEL_GATEWAYS": '[{"name": "gw", "base_url": "https://gw.example.com", "api_key_env": "GW_KEY"}]',
        "GW_KEY": "gw-key-12345",
    }
    assert "connections.variables[0]: expects a variable the runtime" in start.refused(env)
