"""The shell, then .env, then the configuration file, then the default."""

from datetime import timedelta
from pathlib import Path

from tests.settings.start_folder import StartFolder

ORIGINS_FILE = "allowed_origins:\n  - https://file.example.com\n"


def test_the_shell_wins_over_dotenv_which_wins_over_the_default(start: StartFolder) -> None:
    start.dotenv("PORT=6001\nCOMPUTATION_WORKERS=8\n")
    settings = start.load({"PORT": "6002"}).settings
    assert settings.port == 6002
    assert settings.computation_workers == 8
    assert settings.recall_max_rebuilds == 4


def test_an_empty_shell_variable_leaves_dotenv_in_force(start: StartFolder) -> None:
    start.dotenv("PORT=6001\n")
    assert start.load({"PORT": ""}).settings.port == 6001


def test_dotenv_wins_over_the_file_which_wins_over_the_default(start: StartFolder) -> None:
    start.file(ORIGINS_FILE)
    assert start.load().settings.allowed_origins == ("https://file.example.com",)
    start.dotenv("ALLOWED_ORIGINS=https://dotenv.example.com\n")
    assert start.load().settings.allowed_origins == ("https://dotenv.example.com",)
    shell = start.load({"ALLOWED_ORIGINS": "https://a.example.com, https://b.example.com:8443"})
    assert shell.settings.allowed_origins == ("https://a.example.com", "https://b.example.com:8443")


def test_the_default_when_nothing_sets_it(start: StartFolder) -> None:
    settings = start.load().settings
    assert settings.allowed_origins == ()
    assert settings.api_keys == ()
    assert settings.tool_servers == {}
    assert settings.allowed_models is None
    assert settings.connections.people_may_add is True


def test_a_variable_replaces_the_file_key_whole(start: StartFolder) -> None:
    start.file(
        """
        tool_servers:
          graph:
            url: https://graph.example.com/mcp
            org: acme
          notes:
            command: /usr/bin/notes
            org: acme
        model_aliases:
          anthropic/*: gw/anthropic/*
        model_gateways:
          - name: gw
            base_url: https://gw.example.com/v1
        """
    )
    env = {"TOOL_SERVERS": '{"other": {"url": "https://other.example.com/mcp", "org": "globex"}}'}
    loaded = start.load(env)
    assert set(loaded.settings.tool_servers) == {"other"}
    assert loaded.read_from_file == ("model_gateways", "model_aliases", "tool_servers")
    assert loaded.set_in_environment_too == ("TOOL_SERVERS",)
    lines = loaded.startup_lines()
    assert lines[0] == f"Configuration file: {start.cwd / 'auto-runtime.yaml'}"
    assert lines[1] == "Settings read from the configuration file: model_gateways, model_aliases, tool_servers"
    assert lines[2] == "Of those, the environment also sets, and replaces whole: TOOL_SERVERS"


def test_config_file_from_dotenv_names_another_file(start: StartFolder) -> None:
    start.file(ORIGINS_FILE)
    start.file("allowed_origins: [https://named.example.com]\n", "conf/named.yaml")
    start.dotenv("CONFIG_FILE=conf/named.yaml\n")
    loaded = start.load()
    assert loaded.config_file == start.cwd / "conf" / "named.yaml"
    assert loaded.settings.allowed_origins == ("https://named.example.com",)


def test_the_image_reads_a_file_only_when_config_file_names_it(start: StartFolder) -> None:
    start.file(ORIGINS_FILE)
    assert start.load({"HOST": "127.0.0.1"}, mode="image").config_file is None
    named = start.load({"HOST": "127.0.0.1", "CONFIG_FILE": str(start.cwd / "auto-runtime.yaml")}, mode="image")
    assert named.settings.allowed_origins == ("https://file.example.com",)


def test_a_missing_named_file_stops_the_start(start: StartFolder) -> None:
    message = start.refused({"CONFIG_FILE": "missing.yaml"})
    assert message == "missing.yaml: cannot be read (No such file or directory)"


def test_no_file_says_so(start: StartFolder) -> None:
    assert start.load().startup_lines() == ["No configuration file"]


def test_command_line_defaults(start: StartFolder) -> None:
    settings = start.load().settings
    assert (settings.host, settings.port, settings.log_format, settings.log_level) == (
        "127.0.0.1",
        5555,
        "console",
        "error",
    )
    assert settings.ledger_file == start.cwd / "home" / ".auto-runtime" / "ledger.db"
    assert settings.identity_issuer == "https://clerk.on.auto"
    assert settings.workflow_max_duration == timedelta(days=30)
    assert settings.workflow_sweep_interval == timedelta(seconds=1)
    assert settings.workflow_partitions == 64
    assert settings.reasoning_max_input_tokens == 2_000_000
    assert settings.prediction_cache_dir == Path("/var/tmp/auto-runtime")
    assert settings.local_mode


def test_image_defaults(start: StartFolder) -> None:
    settings = start.load({"API_KEYS": "[]", "PUBLIC_URL": "https://runtime.example.com"}, mode="image").settings
    assert (settings.host, settings.log_format, settings.log_level) == ("0.0.0.0", "json", "info")
    assert settings.ledger_file == start.cwd / "data" / "ledger.db"
