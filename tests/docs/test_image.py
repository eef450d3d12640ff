"""The Dockerfile against the settings code and the seeds' words for the image.

No container engine runs here, so the file is parsed (dockerfile-parse) and its parts are checked one by one:
the image's defaults come from the settings code's `image` mode (`HOST`, `LEDGER_FILE`, `LOG_FORMAT`,
`LOG_LEVEL` of `auto_runtime/settings/variables.py`), which the entry point selects with `--image`; the volume
is the folder those defaults put the ledger in; the port and the command are read from the code and
pyproject.toml, never written here a second time. The last test starts the image's command as a real process
from a folder standing in for the image's working directory and runs the file's HEALTHCHECK against it.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import httpx
from dockerfile_parse import DockerfileParser

from auto_runtime import cli
from auto_runtime.auth.api_keys import issue_api_key
from auto_runtime.auth.caller import Permission
from auto_runtime.settings import load_settings
from auto_runtime.settings import variables as v
from tests.e2e.server_process import free_port, start_server

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


@dataclass(frozen=True)
class Instruction:
    name: str
    value: str


def _stages() -> list[list[Instruction]]:
    parsed = DockerfileParser(path=str(DOCKERFILE), cache_content=True)
    stages: list[list[Instruction]] = []
    for item in parsed.structure:
        if item["instruction"] == "COMMENT":
            continue
        if item["instruction"] == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(Instruction(item["instruction"], item["value"]))
    return stages


def _one(stage: list[Instruction], name: str) -> str:
    values = [instruction.value for instruction in stage if instruction.name == name]
    assert len(values) == 1, f"the stage holds {len(values)} {name} instructions"
    return values[0]


def _environment_of(stage: list[Instruction]) -> dict[str, str]:
    environment: dict[str, str] = {}
    for instruction in stage:
        if instruction.name == "ENV":
            for word in shlex.split(instruction.value):
                name, _, value = word.partition("=")
                environment[name] = value
    return environment


FINAL = _stages()[-1]
BUILD = _stages()[0]
WORKDIR = PurePosixPath(_one(FINAL, "WORKDIR"))
ENTRYPOINT: list[str] = json.loads(_one(FINAL, "ENTRYPOINT"))
CMD: list[str] = json.loads(_one(FINAL, "CMD"))
HEALTHCHECK_COMMAND: list[str] = json.loads(_one(FINAL, "HEALTHCHECK").split(" CMD ", 1)[1].strip())


def test_the_image_runs_as_a_user_of_its_own_not_root() -> None:
    user = _one(FINAL, "USER")
    assert user not in ("root", "0", "0:0")
    creates = " ".join(instruction.value for instruction in FINAL if instruction.name == "RUN")
    assert "useradd" in creates and creates.split("useradd", 1)[1].split("&&")[0].split()[-1] == user
    names = [instruction.name for instruction in FINAL]
    assert names.index("USER") < names.index("ENTRYPOINT")


def test_the_entry_point_is_the_installed_command_with_the_image_defaults() -> None:
    scripts = PYPROJECT["project"]["scripts"]
    assert scripts[ENTRYPOINT[0]] == f"{cli.__name__}:{cli.main.__name__}"
    arguments = cli._parser().parse_args([*ENTRYPOINT[1:], *CMD])
    assert arguments.image is True
    assert arguments.command == "serve"


def test_the_image_defaults_are_the_seeds_words_for_the_image(tmp_path: Path) -> None:
    """Configuration reference: HOST "0.0.0.0 in the image", LEDGER_FILE "data/ledger.db, which in the image is
    on the /data volume", LOG_FORMAT json and LOG_LEVEL info; a container reads a configuration file only when
    CONFIG_FILE names it, and no .env."""
    (tmp_path / "auto-runtime.yaml").write_text("allowed_models: [nothing/*]\n")
    (tmp_path / ".env").write_text("PORT=1\n")
    key = issue_api_key("acme", [Permission("playbook:read")])
    settings = load_settings({"API_KEYS": f"[{key.entry_json()}]"}, tmp_path, "image").settings
    assert settings.host == "0.0.0.0"
    assert settings.ledger_file == tmp_path / "data" / "ledger.db"
    assert (settings.log_format, settings.log_level) == ("json", "info")
    assert settings.config_file is None
    assert settings.allowed_models is None
    assert settings.port == v.PORT.default("image")


def test_the_volume_holds_the_ledger_the_image_defaults_name() -> None:
    ledger = WORKDIR / PurePosixPath(str(v.LEDGER_FILE.default("image")))
    assert _one(FINAL, "VOLUME") == str(ledger.parent)
    assert f"chown {_one(FINAL, 'USER')}:" in " ".join(i.value for i in FINAL if i.name == "RUN")


def test_the_file_sets_no_setting_the_image_defaults_already_give() -> None:
    """Setting LEDGER_FILE in the image would stop every container that sets DATABASE_URL (the two together
    stop the server at start); the defaults come from the code's image mode instead."""
    assert not set(_environment_of(FINAL)) & v.ALL_VARIABLE_NAMES


def test_no_stage_consents_to_a_test_clock() -> None:
    """`TEST_CLOCK` is refused in the image whatever the environment; the file does not even consent to it."""
    for stage in _stages():
        assert v.TEST_CLOCK.name not in _environment_of(stage)
        assert v.TEST_CLOCK_GUARD not in _environment_of(stage)


def test_the_port_is_the_settings_default() -> None:
    port = str(v.PORT.default("image"))
    assert _one(FINAL, "EXPOSE") == port
    assert f"'{port}'" in HEALTHCHECK_COMMAND[-1]
    assert "/health" in HEALTHCHECK_COMMAND[-1]


def test_azure_identity_is_a_build_argument_that_adds_the_azure_extra() -> None:
    assert _one(BUILD, "ARG") == "AZURE_IDENTITY=false"
    install = next(i.value for i in BUILD if i.name == "RUN" and "AZURE_IDENTITY" in i.value)
    assert 'true) /opt/auto-runtime/bin/pip install "/src[azure]"' in install
    assert "false) /opt/auto-runtime/bin/pip install /src ;;" in install
    assert any(
        requirement.startswith("azure-identity")
        for requirement in PYPROJECT["project"]["optional-dependencies"]["azure"]
    )


def test_the_build_copies_only_what_the_dockerignore_lets_in() -> None:
    kept = [line[1:] for line in DOCKERIGNORE.read_text().splitlines() if line.startswith("!")]
    assert DOCKERIGNORE.read_text().splitlines()[1] == "*"
    for instruction in BUILD:
        if instruction.name == "COPY" and not instruction.value.startswith("--from"):
            *sources, _ = instruction.value.split()
            for source in sources:
                assert source in kept and (ROOT / source).exists()


def test_the_image_command_serves_and_its_health_check_passes(tmp_path: Path) -> None:
    key = issue_api_key("acme", [Permission("playbook:read")])
    port = free_port()
    workdir = tmp_path / "root"
    server = start_server(
        workdir,
        {"API_KEYS": f"[{key.entry_json()}]", "LOG_FORMAT": "", "LOG_LEVEL": ""},
        port=port,
        arguments=[*ENTRYPOINT[1:], *CMD],
        mode="image",
    )
    probe_environment = {"PORT": str(port), "PATH": str(Path(sys.executable).parent)}
    try:
        assert (workdir / "data" / "ledger.db").is_file()
        assert httpx.get(f"{server.base_url}/health").status_code == 200
        check = subprocess.run(HEALTHCHECK_COMMAND, env=probe_environment, check=False)
        assert check.returncode == 0
    finally:
        code = server.stop()
    assert code == 0
    first_line = server.log().splitlines()[0]
    assert json.loads(first_line)
    after = subprocess.run(HEALTHCHECK_COMMAND, env=probe_environment, capture_output=True, check=False)
    assert after.returncode != 0
