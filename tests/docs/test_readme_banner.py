"""README's "Running it" shows the banner `auto-runtime serve` prints with the default settings (issue 30, item 6);
the banner itself is checked against a real `serve` in tests/e2e/test_start_banner.py."""

from __future__ import annotations

import re
from pathlib import Path

from auto_runtime.settings import load_settings
from auto_runtime.start_banner import STOP_LINE, package_version, start_banner

README = Path(__file__).resolve().parents[2] / "README.md"
TEXT_BLOCK = re.compile(r"```text\n(Auto Runtime .*?)```", re.DOTALL)


def test_the_readme_shows_the_banner_of_the_default_settings(tmp_path: Path) -> None:
    shown = TEXT_BLOCK.search(README.read_text())
    assert shown is not None, "README.md shows no banner"
    settings = load_settings({"HOME": "/home/you"}, tmp_path).settings
    expected = [*start_banner(settings, package_version()), "^C", STOP_LINE]
    assert shown[1].splitlines() == expected
