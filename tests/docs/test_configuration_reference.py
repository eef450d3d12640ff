"""docs/configuration.md is what `python -m auto_runtime.settings.reference` writes from the settings code today."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from auto_runtime.settings import variables as v
from auto_runtime.settings.reference import configuration_reference

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "configuration.md"
REGENERATE = "python -m auto_runtime.settings.reference > docs/configuration.md"


def test_the_committed_reference_is_the_generated_one() -> None:
    written = subprocess.run(
        [sys.executable, "-m", "auto_runtime.settings.reference"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert written == configuration_reference()
    assert REFERENCE.read_text() == written, f"docs/configuration.md is stale: run `{REGENERATE}`"


def test_every_variable_the_runtime_reads_has_a_row_with_its_defaults() -> None:
    rows = {
        match.group(1): match.group(2)
        for match in re.finditer(r"^\| `([A-Z0-9_]+)` \| ([^|]*) \|", REFERENCE.read_text(), re.MULTILINE)
    }
    assert set(rows) == v.ALL_VARIABLE_NAMES - {v.CONFIG_FILE}
    assert f"`{v.CONFIG_FILE}`" in REFERENCE.read_text()
    for variable in v.SCALAR_VARIABLES:
        for default in (variable.default.command_line, variable.default.image):
            if default is not None and not isinstance(default, bool):
                assert str(default) in rows[variable.name] or variable.name.endswith(
                    ("_DURATION", "_INTERVAL", "_TIME")
                )
    assert rows["HOST"] == "`127.0.0.1` (command line), `0.0.0.0` (image)"
    assert rows["WORKFLOW_MAX_DURATION"] == "`P30D`"
    assert rows["WORKFLOW_SWEEP_INTERVAL"] == "`PT1S`"
