"""The files shipped at the root of the repository: the example configuration and its JSON Schema."""

import json
from pathlib import Path

import jsonschema
import yaml

from auto_runtime.settings import load_settings
from auto_runtime.settings.schema import configuration_file_schema, configuration_file_schema_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "auto-runtime.example.yaml"
REFERENCED = {
    "GATEWAY_API_KEY": "gateway-key-123",
    "GRAPH_API_KEY": "graph-key-12345",
    "NOTES_API_KEY": "notes-key-12345",
    "BILLING_API_KEY": "billing-key-123",
    "CRM_CLIENT_SECRET": "crm-secret-1234",
}


def test_the_committed_schema_is_the_generated_one() -> None:
    assert (ROOT / "auto-runtime.schema.json").read_text() == configuration_file_schema_text()


def test_the_example_loads_with_the_referenced_variables_set(tmp_path: Path) -> None:
    loaded = load_settings({**REFERENCED, "CONFIG_FILE": str(EXAMPLE)}, tmp_path)
    settings = loaded.settings
    assert loaded.read_from_file == (
        "model_gateways",
        "model_aliases",
        "declared_models",
        "allowed_models",
        "tool_servers",
        "connections",
        "api_keys",
        "allowed_origins",
    )
    assert set(settings.tool_servers) == {"graph", "notes", "billing", "crm"}
    assert set(REFERENCED.values()) <= loaded.secret_values


def test_the_example_is_valid_against_the_schema() -> None:
    jsonschema.validate(yaml.safe_load(EXAMPLE.read_text()), configuration_file_schema())


def test_the_schema_is_a_valid_json_schema() -> None:
    schema = json.loads((ROOT / "auto-runtime.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
