"""The settings: environment, ``.env``, the YAML configuration file, references, credentials, ranges.

The lead's code uses :func:`load_settings` once at start and :func:`check_config` for the
``check-config`` command. Every error is a :class:`SettingsError` whose text is one line naming the
setting and what it expects, never the value.
"""

from auto_runtime.settings.api_keys import ApiKeyEntry, Permission
from auto_runtime.settings.check_config import check_config
from auto_runtime.settings.connections import ConnectionsPolicy, CredentialKind
from auto_runtime.settings.errors import SettingsError
from auto_runtime.settings.loader import LoadedSettings, load_settings
from auto_runtime.settings.model_settings import ModelGateway
from auto_runtime.settings.parsers import S3Location, parse_duration
from auto_runtime.settings.settings import Settings, is_local_mode
from auto_runtime.settings.tool_servers import OAuthClient, ToolServer, ToolServerType

__all__ = [
    "ApiKeyEntry",
    "ConnectionsPolicy",
    "CredentialKind",
    "LoadedSettings",
    "ModelGateway",
    "OAuthClient",
    "Permission",
    "S3Location",
    "Settings",
    "SettingsError",
    "ToolServer",
    "ToolServerType",
    "check_config",
    "is_local_mode",
    "load_settings",
    "parse_duration",
]
