"""docs/assets/openapi.json is this release's OpenAPI document (seeds, "The OpenAPI document": each release's
document is kept in the repository, so a client library can be generated without running a server)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from openapi_spec_validator import validate

from auto_runtime.guides import load_guides
from auto_runtime.http.openapi import build_openapi
from auto_runtime.operations.runtime_catalog import build_catalog

ROOT = Path(__file__).resolve().parents[2]
ASSET = ROOT / "docs" / "assets" / "openapi.json"
REGENERATE = "python -m auto_runtime.http.openapi > docs/assets/openapi.json"


def test_the_kept_document_is_the_one_this_code_builds() -> None:
    written = subprocess.run(
        [sys.executable, "-m", "auto_runtime.http.openapi"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert ASSET.read_text() == written, f"docs/assets/openapi.json is stale: run `{REGENERATE}`"


def test_it_is_what_a_server_serves_and_a_valid_document() -> None:
    guides = load_guides()
    kept = json.loads(ASSET.read_text())
    assert kept == build_openapi(build_catalog(guides), guides)
    validate(kept)
