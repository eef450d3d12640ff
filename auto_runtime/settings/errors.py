"""The one error that stops the server at start."""


class SettingsError(Exception):
    """A setting the server cannot use.

    ``str(error)`` is the single line to print: it names the setting (and, for the configuration
    file, the file, the line, the column and the key) and what the setting expects. It never holds
    the value that was refused.
    """
