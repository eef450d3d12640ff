"""The configuration reference, ``docs/configuration.md``, generated from the settings code.

``python -m auto_runtime.settings.reference > docs/configuration.md`` writes the committed file, and
``tests/docs/test_configuration_reference.py`` checks that it is what this module writes today.

What each variable accepts and its defaults (on the command line and in the image) are read from
``variables`` (a parser's refusal says what it expects), the list and map settings and their entries from the
configuration file's JSON Schema (``schema``); only each single-value variable's purpose is written here, in
``SECTIONS``, and a variable of ``variables`` missing from it stops the generation.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from auto_runtime.settings import parsers
from auto_runtime.settings import variables as v
from auto_runtime.settings.schema import configuration_file_schema

SECTIONS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "Server and logs",
        (
            ("PORT", "The port the server listens on."),
            (
                "HOST",
                "The interface the server binds to. On a loopback address with neither PUBLIC_URL nor API_KEYS the "
                "server is in local mode; on any other address it needs one of them to start.",
            ),
            ("LOG_FORMAT", "json: one JSON object per line on stderr; pretty: text for a person; console: terse."),
            ("LOG_LEVEL", "The least level logged."),
        ),
    ),
    (
        "Sign-in and access",
        (
            (
                "PUBLIC_URL",
                "The URL at which callers reach the runtime; set, it turns sign-in through the identity service on.",
            ),
            ("IDENTITY_ISSUER", "The identity service people sign in through."),
        ),
    ),
    (
        "Storage",
        (
            ("LEDGER_FILE", "The SQLite file of the ledger; its folder is made when missing."),
            (
                "DATABASE_URL",
                "A PostgreSQL URL: the ledger is kept there instead (LEDGER_FILE set too stops the start). "
                "Environment only.",
            ),
            ("DATABASE_CREDENTIALS", "How the server signs in to that database: the URL's password, or aws-iam."),
            (
                "SECRETS_KEY",
                "The key secrets are sealed under; without it a SQLite ledger keeps `secrets.key` beside its file. "
                "A PostgreSQL ledger needs it. Environment only.",
            ),
            ("SECRETS_KEY_PREVIOUS", "The key SECRETS_KEY replaces, only beside it. Environment only."),
            ("CONTENT_STORE_URL", "An s3://bucket/prefix URL to keep content in instead of the ledger's database."),
        ),
    ),
    (
        "Models",
        (
            ("ANTHROPIC_API_KEY", "Anthropic (`anthropic/...`)."),
            ("ANTHROPIC_AUTH_TOKEN", "Anthropic, as a bearer token instead of a key."),
            ("ANTHROPIC_BASE_URL", "Another address for Anthropic's API."),
            ("OPENAI_API_KEY", "OpenAI (`openai/...`)."),
            ("OPENAI_BASE_URL", "Another address for OpenAI's API."),
            ("OPENAI_API", "chat_completions for endpoints without the Responses API."),
            ("GOOGLE_GENERATIVE_AI_API_KEY", "The Gemini API (`google/...`)."),
            ("AWS_REGION", "Amazon Bedrock (`bedrock/...`, `bedrock-anthropic/...`), with the AWS credential chain."),
            ("AWS_BEARER_TOKEN_BEDROCK", "A Bedrock API key instead of the credential chain."),
            ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "Another address for Bedrock's runtime API."),
            ("AWS_ENDPOINT_URL", "Another address for every AWS API."),
            ("AZURE_RESOURCE_NAME", "Azure OpenAI (`azure/...`): the resource's name."),
            ("AZURE_BASE_URL", "Azure OpenAI: the base URL, instead of the resource's name."),
            ("AZURE_API_KEY", "Azure OpenAI's key."),
            ("AZURE_API_VERSION", "Azure OpenAI's API version."),
            ("GOOGLE_VERTEX_PROJECT", "Vertex AI (`vertex/...`, `vertex-anthropic/...`): the project."),
            ("GOOGLE_VERTEX_LOCATION", "Vertex AI: the location."),
            ("NODE_USE_ENV_PROXY", "Send model and tool calls through HTTPS_PROXY."),
            ("HTTPS_PROXY", "The outbound proxy."),
            ("NO_PROXY", "The hosts reached without the proxy."),
            ("NODE_EXTRA_CA_CERTS", "A file of extra certificate authorities to trust."),
            (
                "REASONING_MAX_INPUT_TOKENS",
                "The most input tokens the model calls of one reasoning run may add up to; past it the model "
                "replies without its tools.",
            ),
        ),
    ),
    (
        "Workflows",
        (
            ("WORKFLOW_MAX_DURATION", "The most a run may last."),
            ("WORKFLOW_NESTED_RUNS", "How many calls the server runs at once, shared by every org."),
            ("WORKFLOW_MAX_OPEN_CALLS", "How many calls may wait under one run at the top of a tree."),
            ("WORKFLOW_SWEEP_INTERVAL", "How often the server checks its waiting runs."),
            (
                "WORKFLOW_PARTITIONS",
                "How many partitions a new ledger cuts the work into, shared by the servers on one database; "
                "a ledger keeps the count it was made with.",
            ),
        ),
    ),
    (
        "Playbook actors",
        (
            ("PLAYBOOK_IDLE_TIME", "How long a playbook's or an org's actor is kept without a message."),
            ("PLAYBOOK_ACTORS_LIVE", "How many idle actors are kept at most, the least recently used going first."),
            ("ACTOR_MAILBOX_CAPACITY", "How many messages each actor's mailbox holds; past it, `unavailable`."),
        ),
    ),
    (
        "Telemetry",
        (
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "Turns telemetry on: where traces are sent over OTLP."),
            ("TELEMETRY_CONTENT", "true records content in telemetry."),
            (
                "METRICS",
                "on serves the metrics at GET /metrics in the Prometheus text format, to a caller with "
                "playbook:read (anyone in local mode); see docs/operating.md.",
            ),
        ),
    ),
    (
        "Functions",
        (
            ("COMPUTATION_WORKERS", "The sandbox workers, and so the most computation runs at once."),
            ("RECALL_MAX_FUNCTIONS", "How many active recall functions a playbook may keep."),
            ("RECALL_MAX_REBUILDS", "How many views of one playbook are built at once."),
            ("RECALL_PLAYBOOKS_AT_ONCE", "How many playbooks the server folds at once."),
            ("INTERACTION_OPEN_REQUESTS", "The most requests a playbook may have open at once."),
            ("PREDICTION_MAX_FUNCTIONS", "The most active prediction functions a playbook may keep."),
            ("PREDICTION_PROCESSES", "The most model processes that run at once."),
            ("PREDICTION_PROCESS_MEMORY", "The data each model process may reserve, in MiB."),
            ("PREDICTION_BUILDS_AT_ONCE", "The most builds scored at once, below PREDICTION_PROCESSES."),
            ("PREDICTION_BUILDS_PER_DAY", "The most builds a prediction function may ask in 24 hours."),
            ("PREDICTION_CACHE_DIR", "The folder model files are kept in."),
        ),
    ),
)
"""Each single-value variable's purpose, grouped as the settings dataclass groups them."""

UNREFUSABLE_PARSERS = {parsers.text: "any text", parsers.any_path: "a path, absolute or relative to the working folder"}
NOT_A_VALUE = "\x00"
"""Text no parser accepts but `text` and `any_path`; a parser's refusal of it says what it expects."""


class ReferenceMismatchError(Exception):
    """The code and the purposes above disagree: a variable without a purpose, or a purpose without a variable."""


def configuration_reference() -> str:
    """The whole page, as the committed file holds it."""
    variables = {variable.name: variable for variable in v.SCALAR_VARIABLES}
    described = [name for _, entries in SECTIONS for name, _ in entries]
    if sorted(described) != sorted(variables):
        missing = sorted(set(variables) - set(described))
        extra = sorted(set(described) - set(variables))
        raise ReferenceMismatchError(f"variables without a purpose: {missing}; purposes without a variable: {extra}")
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by `python -m auto_runtime.settings.reference > docs/configuration.md`; do not edit. -->",
        "",
        "Every setting is an environment variable, read once at start. Precedence, highest first: the shell, `.env`",
        "(command line only), the configuration file (the list and map settings alone), the default. A variable",
        "set to the empty string counts as not set. A value the server cannot use stops the start with one line",
        "naming the setting, never the value. `auto-runtime check-config` reads them as `serve` would.",
        "",
        "Defaults differ between the command line (`auto-runtime serve`) and the image (`auto-runtime --image",
        "serve`, which the Dockerfile runs): the image reads no `.env`, and a configuration file only when",
        f"`{v.CONFIG_FILE}` names it; the command line also reads `auto-runtime.yaml` from its working folder.",
        "",
    ]
    for title, entries in SECTIONS:
        lines += [f"## {title}", "", "| Variable | Default | Accepts | Purpose |", "| --- | --- | --- | --- |"]
        for name, purpose in entries:
            variable = variables[name]
            lines.append(f"| `{name}` | {_default(variable.default)} | {_accepts(variable)} | {purpose} |")
        lines.append("")
    lines += _list_settings(configuration_file_schema())
    return "\n".join(lines).rstrip("\n") + "\n"


def _default(default: v.ByMode[Any]) -> str:
    command_line, image = _value(default.command_line), _value(default.image)
    if command_line == image:
        return command_line
    return f"{command_line} (command line), {image} (image)"


def _value(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, timedelta):
        return f"`{_iso_duration(value)}`"
    if isinstance(value, Path):
        return f"`{value}`"
    return f"`{value}`"


def _iso_duration(value: timedelta) -> str:
    days, seconds = value.days, value.seconds + value.microseconds / 1_000_000
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    time = "".join(f"{amount:g}{unit}" for amount, unit in ((hours, "H"), (minutes, "M"), (seconds, "S")) if amount)
    return "P" + (f"{days}D" if days else "") + (f"T{time}" if time else "")


def _accepts(variable: v.Variable[Any]) -> str:
    if variable.parse in UNREFUSABLE_PARSERS:
        return UNREFUSABLE_PARSERS[variable.parse]
    try:
        variable.parse(NOT_A_VALUE)
    except parsers.RefusedError as refused:
        return refused.expects.removeprefix("expects ")
    raise ReferenceMismatchError(f"{variable.name}: its parser took {NOT_A_VALUE!r}; name what it accepts")


def _list_settings(schema: Mapping[str, Any]) -> list[str]:
    lines = [
        "## Lists and maps",
        "",
        "These settings are JSON in the environment (compact, on one line) or YAML under their lower-case key in the",
        "configuration file; a variable that is set replaces the file's key whole. `auto-runtime.schema.json` is",
        "the file's JSON Schema (`python -m auto_runtime.settings.schema` regenerates it). Secrets in the file are",
        "references, `${NAME}` or `${NAME:-default}`, never written out.",
        "",
        "| Variable | File key | Shape | Purpose |",
        "| --- | --- | --- | --- |",
    ]
    for key, property_schema in schema["properties"].items():
        lines.append(
            f"| `{key.upper()}` | `{key}` | {_shape(property_schema)} | {_sentence(property_schema['description'])} |"
        )
    lines.append("")
    for name, definition in schema["$defs"].items():
        lines += [f"### {name}", "", _sentence(_first_paragraph(definition.get("description", ""))), ""]
        lines += ["| Field | Shape | Required | Default | Purpose |", "| --- | --- | --- | --- | --- |"]
        required = set(definition.get("required", ()))
        for field_name, field in definition["properties"].items():
            default = _value(field["default"]) if "default" in field else ""
            lines.append(
                f"| `{field_name}` | {_shape(field)} | {'yes' if field_name in required else ''} | {default} "
                f"| {_sentence(field.get('description', ''))} |"
            )
        lines.append("")
    return lines


def _shape(schema: Mapping[str, Any]) -> str:
    """A short reading of a JSON Schema, for a table cell."""
    if "$ref" in schema:
        return f"[{schema['$ref'].rsplit('/', 1)[-1]}](#{schema['$ref'].rsplit('/', 1)[-1].lower()})"
    if "anyOf" in schema:
        options = [option for option in schema["anyOf"] if option.get("type") != "null"]
        return " or ".join(_shape(option) for option in options)
    if "enum" in schema:
        return "one of " + ", ".join(f"`{option}`" for option in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return f"list of {_shape(schema.get('items', {}))}"
    if kind == "object":
        values: Mapping[str, Any] = schema.get("additionalProperties") or next(
            iter(schema.get("patternProperties", {}).values()), {}
        )
        return f"map of text to {_shape(values)}" if values else "object"
    if kind == "string" and "pattern" in schema:
        return f"text matching `{_escape(schema['pattern'])}`"
    return {"string": "text", "boolean": "true or false", "integer": "whole number", "number": "number"}.get(
        str(kind), "any"
    )


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def _first_paragraph(text: str) -> str:
    return text.split("\n\n", 1)[0].replace("\n", " ").replace("``", "`")


def _sentence(text: str) -> str:
    text = _escape(text.strip())
    return text if not text or text.endswith(".") else text + "."


if __name__ == "__main__":
    print(configuration_reference(), end="")
