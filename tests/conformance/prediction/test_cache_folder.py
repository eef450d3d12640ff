"""Seeds, configuration, `PREDICTION_CACHE_DIR` (prediction-format §13): the folder is made at start, readable only
by the server's user, with `models/` and `rows/`; a folder of another user or one others may write to stops the
start, naming the setting; files found at start are kept only when their bytes match their name."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from tests.e2e.server_process import run_forked, start_server


def _refused(tmp_path: Path, cache: Path) -> str:
    (tmp_path / "server").mkdir()
    done = run_forked(tmp_path / "server", "serve", settings={"PREDICTION_CACHE_DIR": str(cache), "PORT": "0"})
    assert done.returncode == 1, done
    return done.stderr


def test_a_missing_folder_is_made_for_the_user_alone_and_checked_files_are_kept(tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "auto-runtime"
    good = b"a model's bytes"
    (cache / "models").mkdir(parents=True, mode=0o700)
    cache.chmod(0o700)
    (cache.parent).chmod(0o700)
    kept = cache / "models" / f"{hashlib.sha256(good).hexdigest()}.onnx"
    kept.write_bytes(good)
    damaged = cache / "models" / f"{hashlib.sha256(b'other').hexdigest()}.onnx"
    damaged.write_bytes(b"not the other bytes")
    server = start_server(tmp_path / "server", {"PREDICTION_CACHE_DIR": str(cache)})
    try:
        for folder in (cache, cache / "models", cache / "rows"):
            assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
        assert kept.exists() and not damaged.exists()
    finally:
        assert server.stop() == 0


def test_a_folder_others_may_write_to_stops_the_start(tmp_path: Path) -> None:
    cache = tmp_path / "open"
    cache.mkdir()
    cache.chmod(0o777)
    assert "PREDICTION_CACHE_DIR" in _refused(tmp_path, cache)


def test_a_subfolder_others_may_write_to_stops_the_start(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "rows").mkdir(parents=True)
    cache.chmod(0o700)
    (cache / "rows").chmod(0o722)
    assert "PREDICTION_CACHE_DIR" in _refused(tmp_path, cache)


@pytest.mark.skipif(os.getuid() != 0, reason="only the superuser can give a folder to another user")
def test_a_folder_of_another_user_stops_the_start(tmp_path: Path) -> None:
    cache = tmp_path / "theirs"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    assert "belongs to another user" in _refused(tmp_path, cache)
