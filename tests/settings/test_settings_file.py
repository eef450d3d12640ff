"""The configuration file: what it may hold, and where a refusal points."""

from tests.settings.start_folder import StartFolder


def test_an_unknown_key_names_the_file_the_line_the_column_and_the_key(start: StartFolder) -> None:
    start.file("allowed_origins: [https://a.example.com]\n\nmodel_gateway:\n  - name: secret-name\n")
    message = start.refused(hidden=["secret-name"])
    assert message.startswith("auto-runtime.yaml:3:1: model_gateway: is not a key the server knows")


def test_an_unknown_key_inside_an_entry(start: StartFolder) -> None:
    start.file(
        """
        tool_servers:
          graph:
            url: https://graph.example.com/mcp
            org: acme
            timeout: 30s-secret
        """
    )
    message = start.refused(hidden=["30s-secret"])
    assert message == "auto-runtime.yaml:6:5: tool_servers.graph.timeout: is not a key the server knows"


def test_a_scalar_variable_is_not_a_file_key(start: StartFolder) -> None:
    start.file("port: 7000\n")
    assert start.refused().startswith("auto-runtime.yaml:1:1: port: is not a key the server knows")


def test_a_key_given_twice_is_refused(start: StartFolder) -> None:
    start.file("allowed_origins: [https://a.example.com]\nallowed_origins: [https://b.example.com]\n")
    assert start.refused() == "auto-runtime.yaml:2:1: allowed_origins: is given twice"


def test_yaml_that_does_not_parse_names_the_place(start: StartFolder) -> None:
    start.file("allowed_origins: [https://a.example.com\nkey: 'unclosed-secret\n")
    message = start.refused(hidden=["unclosed-secret"])
    assert message.startswith("auto-runtime.yaml:")
    assert "expects YAML" in message


def test_a_file_that_is_not_a_mapping_is_refused(start: StartFolder) -> None:
    start.file("- just\n- a list\n")
    assert start.refused() == "auto-runtime.yaml:1:1: expects a mapping of settings"


def test_an_empty_file_sets_nothing(start: StartFolder) -> None:
    start.file("# nothing yet\n")
    loaded = start.load()
    assert loaded.read_from_file == ()
    assert loaded.startup_lines()[1] == "Settings read from the configuration file: none"


def test_a_value_of_the_wrong_type_names_its_place(start: StartFolder) -> None:
    start.file("connections:\n  people_may_add: sometimes-secret\n")
    message = start.refused(hidden=["sometimes-secret"])
    assert message == "auto-runtime.yaml:2:19: connections.people_may_add: expects true or false"


def test_a_missing_required_field_is_named(start: StartFolder) -> None:
    start.file("tool_servers:\n  graph:\n    url: https://graph.example.com/mcp\n")
    assert start.refused() == "auto-runtime.yaml:3:5: tool_servers.graph.org: is required"


def test_an_error_in_an_environment_value_names_the_variable_and_the_key(start: StartFolder) -> None:
    message = start.refused({"TOOL_SERVERS": '{"graph": {"url": "https://g.example.com", "org": "acme", "x": 1}}'})
    assert message == "TOOL_SERVERS: graph.x: is not a key the server knows"
