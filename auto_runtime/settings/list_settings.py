"""The settings that are lists or maps, from the environment or the configuration file.

A variable that is set replaces the file's key of the same name whole; the two are never merged.
The file's value is still checked for credentials written out, since the file holds them either way.
The list and map variables are JSON, except ALLOWED_ORIGINS, which is comma-separated.
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from auto_runtime.settings.api_keys import ApiKeyEntry, check_api_keys
from auto_runtime.settings.connections import ConnectionsPolicy, reserved_variable_index
from auto_runtime.settings.errors import SettingsError
from auto_runtime.settings.file_model import ADAPTERS, FILE_KEYS
from auto_runtime.settings.model_settings import (
    BUILT_IN_PROVIDERS,
    ModelGateway,
    alias_problem,
    declared_models_problem,
)
from auto_runtime.settings.places import EnvironmentPlace, KeyPath, Place
from auto_runtime.settings.resolution import Resolution, Rules, resolve_setting
from auto_runtime.settings.tool_servers import REFERENCE_FIELDS, ToolServer, tool_server_problems
from auto_runtime.settings.validation import validate
from auto_runtime.settings.yaml_file import ConfigurationFile

_TOOL_SERVER_RULES = Rules(
    reference_allowed=lambda path: len(path) >= 3 and path[2] in REFERENCE_FIELDS,
    reference_required=lambda path: len(path) == 4 and path[2] == "security",
    holds_secrets=lambda path: len(path) >= 3 and path[2] in REFERENCE_FIELDS,
    is_argument=lambda path: len(path) == 4 and path[2] == "args",
    where_references_go="only headers, query_params, security, env and auth may hold one",
)
_FILE_RULES: dict[str, Rules] = {
    "tool_servers": _TOOL_SERVER_RULES,
    "connections": Rules(judged_by_shape_only=lambda path: len(path) >= 2 and path[1] == "credential_kinds"),
}
_PLAIN_RULES = Rules()


@dataclass(frozen=True, slots=True)
class ListSettings:
    """The eight list and map settings, typed, with where they came from and the secrets they hold."""

    model_gateways: tuple[ModelGateway, ...]
    model_aliases: Mapping[str, str]
    declared_models: Mapping[str, tuple[str, ...]]
    allowed_models: tuple[str, ...] | None
    tool_servers: Mapping[str, ToolServer]
    connections: ConnectionsPolicy
    api_keys: tuple[ApiKeyEntry, ...]
    allowed_origins: tuple[str, ...]
    read_from_file: tuple[str, ...]
    """Every key the file holds, whether or not the environment replaces it."""
    set_in_environment_too: tuple[str, ...]
    """The variables, of those keys, that the environment also set and that win whole."""
    secrets: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Source:
    """A setting's value as read, where it was read, and the file's directory when from the file."""

    value: object
    place: Place
    file_directory: Path | None


def read_list_settings(
    environment: Mapping[str, str], file: ConfigurationFile | None, working_directory: Path
) -> ListSettings:
    """Read, resolve, validate and cross-check the list and map settings."""
    content: dict[str, object] = file.content if file is not None else {}
    for key in content:
        if key not in FILE_KEYS:
            assert file is not None
            raise SettingsError(
                f"{file.place.where((key,), at_key=True)}: is not a key the server knows; "
                f"the file holds only {', '.join(FILE_KEYS)}"
            )
    resolution = Resolution()
    sources: dict[str, _Source] = {}
    values: dict[str, Any] = {}
    set_in_environment_too: list[str] = []
    for key in FILE_KEYS:
        variable = key.upper()
        rules = _FILE_RULES.get(key, _PLAIN_RULES)
        if environment.get(variable):
            source = _Source(_environment_value(variable, environment[variable]), EnvironmentPlace(variable), None)
            if file is not None and key in content:
                set_in_environment_too.append(variable)
                resolve_setting(
                    content[key], (key,), file.place, environment, replace(rules, resolve=False), Resolution()
                )
        elif file is not None and key in content:
            source = _Source(content[key], file.place, file.path.parent)
        else:
            continue
        raw = source.value
        if source.file_directory is not None or key == "tool_servers":
            raw = resolve_setting(raw, (key,), source.place, environment, rules, resolution)
        sources[key] = source
        values[key] = validate(ADAPTERS[key], raw, source.place, (key,))
    checks = _CrossChecks(sources, environment, resolution, working_directory)
    gateways: tuple[ModelGateway, ...] = values.get("model_gateways", ())
    checks.gateways(gateways)
    checks.aliases(values.get("model_aliases", {}))
    checks.declared_models(values.get("declared_models", {}), gateways)
    checks.tool_servers(values.get("tool_servers", {}), gateways)
    checks.connections(values.get("connections", ConnectionsPolicy()), gateways)
    checks.api_keys(values.get("api_keys", ()))
    return ListSettings(
        model_gateways=gateways,
        model_aliases=values.get("model_aliases", {}),
        declared_models=values.get("declared_models", {}),
        allowed_models=values.get("allowed_models"),
        tool_servers=values.get("tool_servers", {}),
        connections=values.get("connections", ConnectionsPolicy()),
        api_keys=values.get("api_keys", ()),
        allowed_origins=values.get("allowed_origins", ()),
        read_from_file=tuple(key for key in FILE_KEYS if key in content),
        set_in_environment_too=tuple(set_in_environment_too),
        secrets=frozenset(resolution.secrets),
    )


def _environment_value(variable: str, text: str) -> object:
    if variable == "ALLOWED_ORIGINS":
        return [item.strip() for item in text.split(",")]
    try:
        return json.loads(text, object_pairs_hook=_refuse_repeated_keys)
    except json.JSONDecodeError as error:
        raise SettingsError(f"{variable}: expects JSON ({error.msg} at character {error.pos})") from None
    except _RepeatedKeyError:
        raise SettingsError(f"{variable}: expects each key of an object once") from None


class _RepeatedKeyError(ValueError):
    pass


def _refuse_repeated_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        raise _RepeatedKeyError
    return mapping


@dataclass(frozen=True, slots=True)
class _CrossChecks:
    """The checks across the entries of a setting, and across settings."""

    sources: Mapping[str, _Source]
    environment: Mapping[str, str]
    resolution: Resolution
    working_directory: Path

    def fail(self, key: str, path: KeyPath, expects: str, *, at_key: bool = False) -> SettingsError:
        return SettingsError(f"{self.sources[key].place.where((key, *path), at_key=at_key)}: {expects}")

    def gateways(self, gateways: tuple[ModelGateway, ...]) -> None:
        names: set[str] = set()
        for index, gateway in enumerate(gateways):
            if gateway.name in BUILT_IN_PROVIDERS:
                raise self.fail("model_gateways", (index, "name"), "expects a name that is not a built-in provider")
            if gateway.name in names:
                raise self.fail("model_gateways", (index, "name"), "expects each gateway's name once")
            names.add(gateway.name)
            if gateway.api_key_env is not None:
                self._api_key_env(index, gateway.api_key_env, gateway.api_key is not None)
            if gateway.api_key is not None:
                self.resolution.secrets.add(gateway.api_key)
            self.resolution.secrets.update(gateway.headers.values())
            self.resolution.secrets.update(gateway.query_params.values())

    def _api_key_env(self, index: int, variable: str, beside_api_key: bool) -> None:
        path = (index, "api_key_env")
        if self.sources["model_gateways"].file_directory is not None:
            raise self.fail("model_gateways", path, "is for MODEL_GATEWAYS only; the file gives api_key: ${NAME}")
        if beside_api_key:
            raise self.fail("model_gateways", path, "expects api_key or api_key_env, not both")
        key = self.environment.get(variable)
        if not key:
            raise self.fail("model_gateways", path, f"names {variable}, which is not set")
        self.resolution.secrets.add(key)

    def aliases(self, aliases: Mapping[str, str]) -> None:
        problem = alias_problem(aliases)
        if problem is not None:
            raise self.fail("model_aliases", (problem[0],), problem[1])

    def declared_models(self, declared: Mapping[str, tuple[str, ...]], gateways: tuple[ModelGateway, ...]) -> None:
        prefix = declared_models_problem(declared, {gateway.name for gateway in gateways})
        if prefix is not None:
            expects = "expects the prefix of a built-in provider or of a gateway"
            raise self.fail("declared_models", (prefix,), expects, at_key=True)

    def tool_servers(self, servers: Mapping[str, ToolServer], gateways: tuple[ModelGateway, ...]) -> None:
        if not servers:
            return
        gateway_names = frozenset(gateway.name for gateway in gateways)
        directory = self.sources["tool_servers"].file_directory or self.working_directory
        for name, server in servers.items():
            for path, expects in tool_server_problems(name, server, gateway_names, directory):
                raise self.fail("tool_servers", (name, *path), expects, at_key=not path)

    def connections(self, policy: ConnectionsPolicy, gateways: tuple[ModelGateway, ...]) -> None:
        also_reserved = {gateway.api_key_env for gateway in gateways if gateway.api_key_env}
        index = reserved_variable_index(policy.variables, also_reserved | self.resolution.referenced_variables)
        if index is not None:
            raise self.fail(
                "connections",
                ("variables", index),
                "expects a variable the runtime does not read for itself: none of its settings, "
                "no cloud credential, no gateway's api_key_env, and none named by a reference "
                "of the file or TOOL_SERVERS",
            )

    def api_keys(self, entries: tuple[ApiKeyEntry, ...]) -> None:
        problem = check_api_keys(entries)
        if problem is not None:
            raise self.fail("api_keys", (problem[0],), problem[1])
