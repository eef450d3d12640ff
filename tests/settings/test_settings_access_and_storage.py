"""Local mode, the address the server listens on, and the rules that join the storage settings."""

import io
import json

import pytest

from auto_runtime.settings import check_config, is_local_mode
from tests.settings.start_folder import StartFolder

KEY = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
OTHER_KEY = "HxwdHh8AAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRo="
API_KEYS = json.dumps([{"id": "0123abcd", "org": "acme", "permissions": ["org:read"], "sha256": "0" * 64}])


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1"])
def test_a_loopback_host_without_public_url_or_api_keys_is_local_mode(start: StartFolder, host: str) -> None:
    assert start.load({"HOST": host}).settings.local_mode


def test_public_url_or_api_keys_end_local_mode(start: StartFolder) -> None:
    assert not start.load({"PUBLIC_URL": "https://runtime.example.com"}).settings.local_mode
    assert not start.load({"API_KEYS": API_KEYS}).settings.local_mode
    assert is_local_mode("127.0.0.1", None, ())


@pytest.mark.parametrize("host", ["0.0.0.0", "10.0.0.5", "runtime.internal"])
def test_another_address_needs_public_url_or_api_keys(start: StartFolder, host: str) -> None:
    message = start.refused({"HOST": host}, hidden=[host])
    assert message == "HOST: the server needs PUBLIC_URL or API_KEYS to listen on an address other than a loopback one"
    assert start.load({"HOST": host, "API_KEYS": API_KEYS}).settings.host == host
    assert (
        start.load({"HOST": host, "PUBLIC_URL": "https://r.example.com/"}).settings.public_url
        == "https://r.example.com"
    )


def test_ledger_file_beside_database_url_stops_the_start(start: StartFolder) -> None:
    url = "postgresql://runtime:db-password-1@db.example.com/ledger"
    message = start.refused(
        {"DATABASE_URL": url, "LEDGER_FILE": "ledger.db", "SECRETS_KEY": KEY}, hidden=[url, "db-password-1"]
    )
    assert message.startswith("LEDGER_FILE: expects to be left out beside DATABASE_URL")


def test_database_url_keeps_the_ledger_in_postgresql(start: StartFolder) -> None:
    settings = start.load({"DATABASE_URL": "postgresql://db.example.com/ledger", "SECRETS_KEY": KEY}).settings
    assert settings.ledger_file is None
    assert settings.database_credentials == "url"


def test_a_ledger_in_postgresql_needs_secrets_key(start: StartFolder) -> None:
    message = start.refused({"DATABASE_URL": "postgresql://u:pw-secret-1@db/ledger"}, hidden=["pw-secret-1"])
    assert message == "SECRETS_KEY: a ledger in PostgreSQL (DATABASE_URL) needs it"


def test_aws_iam_takes_a_url_without_a_password(start: StartFolder) -> None:
    env = {
        "DATABASE_URL": "postgresql://u:pw-secret-1@db/ledger",
        "SECRETS_KEY": KEY,
        "DATABASE_CREDENTIALS": "aws-iam",
    }
    assert start.refused(env, hidden=["pw-secret-1"]).startswith("DATABASE_URL: expects no password")
    env["DATABASE_URL"] = "postgresql://iam_user@db.example.com/ledger"
    assert start.load(env).settings.database_credentials == "aws-iam"


def test_secrets_key_previous_only_beside_secrets_key(start: StartFolder) -> None:
    message = start.refused({"SECRETS_KEY_PREVIOUS": OTHER_KEY}, hidden=[OTHER_KEY])
    assert message.startswith("SECRETS_KEY_PREVIOUS: expects SECRETS_KEY beside it")
    settings = start.load({"SECRETS_KEY_PREVIOUS": OTHER_KEY, "SECRETS_KEY": KEY}).settings
    assert settings.secrets_key_previous is not None
    assert len(settings.secrets_key_previous) == 32


def test_check_config_prints_the_start_up_lines(start: StartFolder) -> None:
    start.file("allowed_origins: [https://a.example.com]\n")
    out, err = io.StringIO(), io.StringIO()
    assert check_config(start.environment({"ALLOWED_ORIGINS": "https://b.example.com"}), start.cwd, out, err) == 0
    assert err.getvalue() == ""
    assert out.getvalue().splitlines() == [
        f"Configuration file: {start.cwd / 'auto-runtime.yaml'}",
        "Settings read from the configuration file: allowed_origins",
        "Of those, the environment also sets, and replaces whole: ALLOWED_ORIGINS",
        "The settings are valid",
    ]


def test_check_config_prints_the_one_error_line(start: StartFolder) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert check_config(start.environment({"COMPUTATION_WORKERS": "65"}), start.cwd, out, err) == 1
    assert out.getvalue() == ""
    assert err.getvalue() == "COMPUTATION_WORKERS: expects a whole number from 1 to 64\n"
