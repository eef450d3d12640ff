import pytest

from auto_runtime.settings.references import MalformedReferenceError, Reference, parse_template
from tests.settings.start_folder import StartFolder

GATEWAY = """
model_gateways:
  - name: gateway
    base_url: https://gateway.example.com/v1
    api_key: {api_key}
"""


def test_a_reference_takes_the_value_of_the_variable(start: StartFolder) -> None:
    start.file(GATEWAY.format(api_key="${GATEWAY_KEY}"))
    loaded = start.load({"GATEWAY_KEY": "gateway-secret-1"})
    assert loaded.settings.model_gateways[0].api_key == "gateway-secret-1"
    assert "gateway-secret-1" in loaded.secret_values


def test_a_default_is_taken_when_the_variable_is_not_set(start: StartFolder) -> None:
    start.file(
        """
        tool_servers:
          graph:
            url: https://graph.example.com/mcp
            headers:
              X-Region: ${REGION:-eu-west}
            org: acme
        """
    )
    loaded = start.load()
    assert loaded.settings.tool_servers["graph"].headers == {"X-Region": "eu-west"}
    assert "eu-west" not in loaded.secret_values


def test_a_default_gives_way_to_a_variable_that_is_set(start: StartFolder) -> None:
    start.file(GATEWAY.format(api_key="${GATEWAY_KEY:-fallback}"))
    assert start.load({"GATEWAY_KEY": "from-the-env"}).settings.model_gateways[0].api_key == "from-the-env"


def test_dollar_dollar_stands_for_a_literal_dollar(start: StartFolder) -> None:
    start.file(
        """
        tool_servers:
          graph:
            url: https://graph.example.com/mcp
            headers:
              X-Price: $$5 and ${NAME}$$
            org: acme
        """
    )
    headers = start.load({"NAME": "x"}).settings.tool_servers["graph"].headers
    assert headers == {"X-Price": "$5 and x$"}


def test_a_reference_to_an_unset_variable_stops_the_start(start: StartFolder) -> None:
    start.file(GATEWAY.format(api_key="${GATEWAY_KEY}"))
    message = start.refused()
    assert message == ("auto-runtime.yaml:5:14: model_gateways[0].api_key: refers to GATEWAY_KEY, which is not set")


def test_an_empty_variable_counts_as_not_set(start: StartFolder) -> None:
    start.file(GATEWAY.format(api_key="${GATEWAY_KEY}"))
    assert "which is not set" in start.refused({"GATEWAY_KEY": ""})


def test_a_malformed_reference_stops_the_start(start: StartFolder) -> None:
    start.file(GATEWAY.format(api_key="${GATEWAY KEY}"))
    message = start.refused()
    assert message.startswith("auto-runtime.yaml:5:14: model_gateways[0].api_key: expects ${NAME}")


def test_the_template_parts() -> None:
    assert parse_template("a $b ${C} ${D:-e f} $$").segments == (
        "a $b ",
        Reference("C", None),
        " ",
        Reference("D", "e f"),
        " $",
    )
    with pytest.raises(MalformedReferenceError):
        parse_template("${unclosed")


def test_the_scheme_and_the_credential_of_a_referenced_header_are_secrets_each(start: StartFolder) -> None:
    start.file(
        """
        tool_servers:
          graph:
            url: https://graph.example.com/mcp
            headers:
              Authorization: ${GRAPH_HEADER}
            org: acme
        """
    )
    loaded = start.load({"GRAPH_HEADER": "Bearer graph-key-123"})
    assert {"Bearer graph-key-123", "graph-key-123"} <= loaded.secret_values


def test_a_header_written_out_is_not_a_secret(start: StartFolder) -> None:
    start.file(
        """
        tool_servers:
          billing:
            document: https://billing.example.com/openapi.json
            security:
              basicAuth: ada:${BILLING_PASSWORD}
            headers:
              X-Tenant: acme-eu
            org: acme
        """
    )
    loaded = start.load({"BILLING_PASSWORD": "pass-word-1"})
    assert loaded.secret_values == {"pass-word-1", "ada:pass-word-1"}


def test_the_repr_of_the_settings_shows_no_secret(start: StartFolder) -> None:
    start.file(
        GATEWAY.format(api_key="${GATEWAY_KEY}")
        + "tool_servers:\n  graph:\n    url: https://graph.example.com/mcp\n"
        + "    headers:\n      Authorization: Bearer ${GRAPH_KEY}\n    org: acme\n"
    )
    env = {
        "GATEWAY_KEY": "gateway-secret-1",
        "GRAPH_KEY": "graph-secret-1",
        "ANTHROPIC_API_KEY": "anthropic-secret-1",
        "SECRETS_KEY": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
    }
    shown = repr(start.load(env).settings)
    assert "graph.example.com" in shown
    for value in ("gateway-secret-1", "graph-secret-1", "anthropic-secret-1", "\\x00\\x01\\x02"):
        assert value not in shown
