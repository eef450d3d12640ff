"""``auto-runtime check-config``: read the settings as the server would, and say what it found."""

from collections.abc import Mapping
from pathlib import Path
from typing import Literal, TextIO

from auto_runtime.settings.errors import SettingsError
from auto_runtime.settings.loader import load_settings


def check_config(
    environ: Mapping[str, str],
    cwd: Path,
    out: TextIO,
    err: TextIO,
    mode: Literal["command_line", "image"] = "command_line",
) -> int:
    """Print the start-up lines and return 0, or print the one error line and return 1."""
    try:
        loaded = load_settings(environ, cwd, mode)
    except SettingsError as error:
        print(error, file=err)
        return 1
    for line in loaded.startup_lines():
        print(line, file=out)
    print("The settings are valid", file=out)
    return 0
