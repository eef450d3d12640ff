"""Reading the YAML configuration file with the position of every key and value."""

from dataclasses import dataclass
from pathlib import Path

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from auto_runtime.settings.errors import SettingsError
from auto_runtime.settings.places import FilePlace, KeyPath, Position, dotted


@dataclass(frozen=True, slots=True)
class ConfigurationFile:
    """The file's top-level mapping as plain Python values, and where each part was written."""

    path: Path
    content: dict[str, object]
    place: FilePlace


def read_configuration_file(path: Path, shown_as: str) -> ConfigurationFile:
    """Read and compose the file at ``path``; ``shown_as`` names it in error lines."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise SettingsError(f"{shown_as}: expects UTF-8 text") from None
    except OSError as error:
        raise SettingsError(f"{shown_as}: cannot be read ({error.strerror})") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f"{shown_as}:{mark.line + 1}:{mark.column + 1}" if mark else shown_as
        raise SettingsError(f"{where}: expects YAML ({error.problem})") from None
    except yaml.YAMLError:
        raise SettingsError(f"{shown_as}: expects YAML") from None
    builder = _Builder(shown_as)
    if root is None:
        content: object = {}
    else:
        if not isinstance(root, MappingNode):
            raise SettingsError(f"{shown_as}:{_position(root).line}:1: expects a mapping of settings")
        content = builder.value(root, ())
    assert isinstance(content, dict)
    return ConfigurationFile(path, content, FilePlace(shown_as, builder.value_positions, builder.key_positions))


def _position(node: Node) -> Position:
    return Position(node.start_mark.line + 1, node.start_mark.column + 1)


class _Builder:
    def __init__(self, shown_as: str) -> None:
        self.shown_as = shown_as
        self.value_positions: dict[KeyPath, Position] = {}
        self.key_positions: dict[KeyPath, Position] = {}
        self._constructor = SafeConstructor()

    def value(self, node: Node, path: KeyPath) -> object:
        self.value_positions[path] = _position(node)
        if isinstance(node, MappingNode):
            return self._mapping(node, path)
        if isinstance(node, SequenceNode):
            return [self.value(item, (*path, index)) for index, item in enumerate(node.value)]
        assert isinstance(node, ScalarNode)
        return self._constructor.construct_object(node)

    def _mapping(self, node: MappingNode, path: KeyPath) -> dict[str, object]:
        mapping: dict[str, object] = {}
        for key_node, value_node in node.value:
            key = self._constructor.construct_object(key_node) if isinstance(key_node, ScalarNode) else None
            position = _position(key_node)
            if not isinstance(key, str):
                raise SettingsError(f"{self.shown_as}:{position.line}:{position.column}: expects every key to be text")
            key_path = (*path, key)
            if key in mapping:
                raise SettingsError(
                    f"{self.shown_as}:{position.line}:{position.column}: {dotted(key_path)}: is given twice"
                )
            self.key_positions[key_path] = position
            mapping[key] = self.value(value_node, key_path)
        return mapping
