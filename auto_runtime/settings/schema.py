"""The JSON Schema of the configuration file.

``python -m auto_runtime.settings.schema > auto-runtime.schema.json`` writes the committed file.
"""

import json
from typing import Any

from auto_runtime.settings.file_model import ConfigurationFileModel

SCHEMA_ID = "https://raw.githubusercontent.com/BeOnAuto/runtime/main/auto-runtime.schema.json"


def configuration_file_schema() -> dict[str, Any]:
    """The schema, generated from the models the loader validates the file with."""
    schema = ConfigurationFileModel.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def configuration_file_schema_text() -> str:
    """The schema as the committed file holds it: indented JSON and a final newline."""
    return json.dumps(configuration_file_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(configuration_file_schema_text(), end="")
