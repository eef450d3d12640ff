"""Seeds, `SECRETS_KEY`: without it, a SQLite ledger keeps a key in `secrets.key` beside its file, which only its
owner may read, made at the first start and read again at the next."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest

from auto_runtime.ledger.secrets_key import SecretsKeyError, secrets_key_of


def test_the_key_file_is_made_once_owner_only_and_read_again(tmp_path: Path) -> None:
    ledger_file = tmp_path / "data" / "ledger.db"
    first = secrets_key_of(None, ledger_file)
    key_file = ledger_file.parent / "secrets.key"
    assert len(first) == 32
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert base64.b64decode(key_file.read_text()) == first
    assert secrets_key_of(None, ledger_file) == first


def test_a_configured_key_wins_and_no_file_is_made(tmp_path: Path) -> None:
    configured = bytes(range(32))
    assert secrets_key_of(configured, tmp_path / "ledger.db") == configured
    assert not (tmp_path / "secrets.key").exists()


def test_a_key_file_others_may_read_is_refused_without_showing_it(tmp_path: Path) -> None:
    key_file = tmp_path / "secrets.key"
    secrets_key_of(None, tmp_path / "ledger.db")
    key_file.chmod(0o644)
    with pytest.raises(SecretsKeyError) as refused:
        secrets_key_of(None, tmp_path / "ledger.db")
    assert key_file.read_text().strip() not in str(refused.value)


def test_postgresql_needs_the_key_set(tmp_path: Path) -> None:
    with pytest.raises(SecretsKeyError):
        secrets_key_of(None, None)
