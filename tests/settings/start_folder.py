"""A folder to start the server in, with its files and environment, for the settings tests."""

import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from auto_runtime.settings import LoadedSettings, SettingsError, load_settings


@dataclass
class StartFolder:
    cwd: Path

    def file(self, text: str, name: str = "auto-runtime.yaml") -> Path:
        path = self.cwd / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    def dotenv(self, text: str) -> Path:
        return self.file(text, ".env")

    def environment(self, env: Mapping[str, str] | None) -> dict[str, str]:
        return {"HOME": str(self.cwd / "home"), **(env or {})}

    def load(
        self, env: Mapping[str, str] | None = None, mode: Literal["command_line", "image"] = "command_line"
    ) -> LoadedSettings:
        return load_settings(self.environment(env), self.cwd, mode)

    def refused(
        self,
        env: Mapping[str, str] | None = None,
        *,
        hidden: Iterable[str] = (),
        mode: Literal["command_line", "image"] = "command_line",
    ) -> str:
        """The one line that stops the start; it must show none of ``hidden``."""
        with pytest.raises(SettingsError) as caught:
            self.load(env, mode)
        message = str(caught.value)
        assert "\n" not in message
        for value in hidden:
            assert value not in message, f"the message shows the value {value!r}: {message}"
        return message
