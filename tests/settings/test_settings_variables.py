"""The range and the form of each variable, and that a refusal never shows the value."""

from datetime import timedelta
from pathlib import Path

import pytest

from tests.settings.start_folder import StartFolder


@pytest.mark.parametrize(
    ("name", "value", "expects"),
    [
        ("COMPUTATION_WORKERS", "65", "expects a whole number from 1 to 64"),
        ("COMPUTATION_WORKERS", "0", "expects a whole number from 1 to 64"),
        ("COMPUTATION_WORKERS", "four", "expects a whole number from 1 to 64"),
        ("REASONING_MAX_INPUT_TOKENS", "9999", "expects a whole number from 10,000 to 9,999,999"),
        ("WORKFLOW_NESTED_RUNS", "1001", "from 1 to 1,000"),
        ("WORKFLOW_PARTITIONS", "1025", "from 1 to 1,024"),
        ("WORKFLOW_MAX_OPEN_CALLS", "10000", "from 1 to 9,999"),
        ("RECALL_MAX_FUNCTIONS", "1001", "from 1 to 1,000"),
        ("RECALL_MAX_REBUILDS", "65", "from 1 to 64"),
        ("RECALL_PLAYBOOKS_AT_ONCE", "65", "from 1 to 64"),
        ("INTERACTION_OPEN_REQUESTS", "1000001", "from 1 to 1,000,000"),
        ("PREDICTION_MAX_FUNCTIONS", "1001", "from 1 to 1,000"),
        ("PREDICTION_PROCESSES", "1", "from 2 to 64"),
        ("PREDICTION_PROCESS_MEMORY", "767", "from 768 to 16,384"),
        ("PREDICTION_BUILDS_AT_ONCE", "64", "from 1 to 63"),
        ("PREDICTION_BUILDS_PER_DAY", "101", "from 1 to 100"),
        ("PORT", "65536", "from 0 to 65,535"),
        ("WORKFLOW_MAX_DURATION", "PT1H", "expects an ISO 8601 duration from PT2H to P365D"),
        ("WORKFLOW_MAX_DURATION", "P366D", "from PT2H to P365D"),
        ("WORKFLOW_MAX_DURATION", "P1Y", "from PT2H to P365D"),
        ("WORKFLOW_MAX_DURATION", "30 days", "from PT2H to P365D"),
        ("WORKFLOW_SWEEP_INTERVAL", "PT0.001S", "from PT0.01S to PT1M"),
        ("WORKFLOW_SWEEP_INTERVAL", "PT2M", "from PT0.01S to PT1M"),
        ("LOG_FORMAT", "xml", "expects one of json, pretty, console"),
        ("LOG_LEVEL", "verbose", "expects one of debug, info, warn, error"),
        ("DATABASE_CREDENTIALS", "kerberos", "expects one of url, aws-iam"),
        ("OPENAI_API", "legacy", "expects one of responses, chat_completions"),
        ("TELEMETRY_CONTENT", "maybe", "expects true or false"),
        ("METRICS", "yes", "expects one of off, on"),
        (
            "IDENTITY_ISSUER",
            "http://clerk.example.com",
            "expects an https URL with no path, query or fragment",
        ),
        ("IDENTITY_ISSUER", "https://clerk.example.com/tenant", "with no path, query or fragment"),
        ("IDENTITY_ISSUER", "https://clerk.example.com?x=1", "with no path, query or fragment"),
        ("IDENTITY_ISSUER", "https://clerk.example.com#frag", "with no path, query or fragment"),
        ("PREDICTION_CACHE_DIR", "relative/cache", "expects an absolute path"),
        ("SECRETS_KEY", "c2hvcnQta2V5", "expects the base64 of 32 bytes"),
        ("SECRETS_KEY", "not base64 at all!!", "expects the base64 of 32 bytes"),
        ("CONTENT_STORE_URL", "https://bucket.example.com/prefix", "expects an s3://bucket/prefix URL"),
        ("CONTENT_STORE_URL", "s3://B_ad/prefix", "expects an s3://bucket/prefix URL"),
        ("DATABASE_URL", "mysql://db.example.com/ledger", "expects a postgresql:// or postgres:// URL"),
        ("PUBLIC_URL", "ftp://runtime.example.com", "expects an https URL"),
        ("PUBLIC_URL", "http://runtime.example.com", "expects an https URL"),
        ("ALLOWED_ORIGINS", "https://a.example.com/path", "[0]: expects an origin"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", "expects an http or https URL"),
        ("HOST", "not a host", "expects a host name or an IP address"),
        ("API_KEYS", "[{", "API_KEYS: expects JSON"),
        ("MODEL_GATEWAYS", "{not json", "MODEL_GATEWAYS: expects JSON"),
    ],
)
def test_a_value_the_setting_refuses_stops_the_start(start: StartFolder, name: str, value: str, expects: str) -> None:
    message = start.refused({name: value}, hidden=[value])
    assert message.startswith(name) or message.startswith(expects)
    assert expects in message


@pytest.mark.parametrize(
    ("name", "value", "attribute", "expected"),
    [
        ("COMPUTATION_WORKERS", "1", "computation_workers", 1),
        ("COMPUTATION_WORKERS", "64", "computation_workers", 64),
        ("REASONING_MAX_INPUT_TOKENS", "10000", "reasoning_max_input_tokens", 10_000),
        ("REASONING_MAX_INPUT_TOKENS", "9999999", "reasoning_max_input_tokens", 9_999_999),
        ("WORKFLOW_MAX_DURATION", "PT2H", "workflow_max_duration", timedelta(hours=2)),
        ("WORKFLOW_MAX_DURATION", "P365D", "workflow_max_duration", timedelta(days=365)),
        ("WORKFLOW_MAX_DURATION", "P1W", "workflow_max_duration", timedelta(weeks=1)),
        (
            "WORKFLOW_MAX_DURATION",
            "P1DT12H30M",
            "workflow_max_duration",
            timedelta(days=1, hours=12, minutes=30),
        ),
        ("WORKFLOW_SWEEP_INTERVAL", "PT0.01S", "workflow_sweep_interval", timedelta(milliseconds=10)),
        ("WORKFLOW_SWEEP_INTERVAL", "PT1M", "workflow_sweep_interval", timedelta(minutes=1)),
        ("WORKFLOW_PARTITIONS", "1", "workflow_partitions", 1),
        ("WORKFLOW_PARTITIONS", "1024", "workflow_partitions", 1024),
        ("LOG_LEVEL", "warn", "log_level", "warn"),
        ("LOG_FORMAT", "pretty", "log_format", "pretty"),
        ("TELEMETRY_CONTENT", "true", "telemetry_content", True),
        ("METRICS", "on", "metrics", "on"),
        ("OPENAI_API", "chat_completions", "openai_api", "chat_completions"),
        (
            "IDENTITY_ISSUER",
            "https://dev.clerk.example.com/",
            "identity_issuer",
            "https://dev.clerk.example.com",
        ),
        ("PREDICTION_CACHE_DIR", "/srv/cache", "prediction_cache_dir", Path("/srv/cache")),
        ("SECRETS_KEY", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "secrets_key", bytes(range(32))),
        ("ANTHROPIC_API_KEY", "sk-ant-xyz", "anthropic_api_key", "sk-ant-xyz"),
        ("PORT", "0", "port", 0),
        ("HOST", "::1", "host", "::1"),
    ],
)
def test_a_value_in_range_is_read(start: StartFolder, name: str, value: str, attribute: str, expected: object) -> None:
    assert getattr(start.load({name: value}).settings, attribute) == expected


def test_content_store_url_gives_its_bucket_and_prefix(start: StartFolder) -> None:
    location = start.load({"CONTENT_STORE_URL": "s3://runtime-content/acme/prod/"}).settings.content_store_url
    assert location is not None
    assert (location.bucket, location.prefix) == ("runtime-content", "acme/prod")


def test_builds_at_once_must_stay_below_processes(start: StartFolder) -> None:
    message = start.refused({"PREDICTION_PROCESSES": "4", "PREDICTION_BUILDS_AT_ONCE": "4"})
    assert message.startswith("PREDICTION_BUILDS_AT_ONCE: expects fewer builds than PREDICTION_PROCESSES")
    assert start.load({"PREDICTION_PROCESSES": "64", "PREDICTION_BUILDS_AT_ONCE": "63"}).settings


def test_an_empty_variable_counts_as_not_set(start: StartFolder) -> None:
    assert start.load({"PORT": ""}).settings.port == 5555


def test_ledger_file_is_absolute_relative_to_the_working_directory(start: StartFolder) -> None:
    assert start.load({"LEDGER_FILE": "db/ledger.db"}).settings.ledger_file == start.cwd / "db" / "ledger.db"
    assert start.load({"LEDGER_FILE": "~/l.db"}).settings.ledger_file == start.cwd / "home" / "l.db"
    assert start.load({"LEDGER_FILE": "/srv/l.db"}).settings.ledger_file == Path("/srv/l.db")
