"""Logging for the server: one handler on the root logger, in the format and at the level set.

* ``json``: one JSON object per line: ``time``, ``level``, ``logger``, ``message``, the extra fields
  given to the call, and ``exception`` when there is one;
* ``pretty``: lines of text for a person: time, level, logger, message, then the extra fields;
* ``console``: a time, a mark for the level and the message, coloured only at a terminal.

A line written while a request is served carries its ``request_id``, and within a span the server sends its
``trace_id`` and ``span_id`` (``ContextFields``), unless the call gave those fields itself.

A library logger that would write what callers send or get whole is kept at ``info`` or above even at
``debug`` (``QUIETED``): ``sse_starlette`` logs every chunk of an MCP answer it streams, outputs and tool
results in full, up to megabytes a line.
"""

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Literal, TextIO

from auto_runtime.telemetry import log_context

LogFormat = Literal["json", "pretty", "console"]
LogLevel = Literal["debug", "info", "warn", "error"]

LEVELS: dict[LogLevel, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}

QUIETED = ("sse_starlette.sse",)

_STANDARD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}
_MARKS = {
    logging.DEBUG: "·",
    logging.INFO: "•",
    logging.WARNING: "▲",
    logging.ERROR: "✖",
    logging.CRITICAL: "✖",
}
_COLOURS = {
    logging.DEBUG: "\x1b[2m",
    logging.INFO: "\x1b[36m",
    logging.WARNING: "\x1b[33m",
    logging.ERROR: "\x1b[31m",
}
_RESET = "\x1b[0m"


def extra_fields(record: logging.LogRecord) -> dict[str, object]:
    """The fields a call gave through ``extra=``."""
    return {key: value for key, value in vars(record).items() if key not in _STANDARD_ATTRIBUTES}


def _time(record: logging.LogRecord) -> datetime:
    return datetime.fromtimestamp(record.created, tz=UTC)


def _level_name(record: logging.LogRecord) -> str:
    return "warn" if record.levelno == logging.WARNING else record.levelname.lower()


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": _time(record).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": _level_name(record),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(extra_fields(record))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class PrettyFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        time = _time(record).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        fields = "".join(f" {key}={value!r}" for key, value in extra_fields(record).items())
        line = f"{time} {_level_name(record).upper():<5} {record.name}: {record.getMessage()}{fields}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class ConsoleFormatter(logging.Formatter):
    def __init__(self, colour: bool) -> None:
        super().__init__()
        self.colour = colour

    def format(self, record: logging.LogRecord) -> str:
        mark = _MARKS.get(record.levelno, "•")
        if self.colour:
            mark = f"{_COLOURS.get(record.levelno, _COLOURS[logging.ERROR])}{mark}{_RESET}"
        line = f"{_time(record).astimezone().strftime('%H:%M:%S')} {mark} {record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class ContextFields(logging.Filter):
    """Adds the fields of the current context (`telemetry.log_context`) to each record, the call's own first."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in log_context().items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


class _ServerHandler(logging.StreamHandler[TextIO]):
    """The handler this module installs, so configuring again replaces it."""


def configure_logging(log_format: LogFormat, log_level: LogLevel, stream: TextIO = sys.stderr) -> None:
    """Send every log record at ``log_level`` or above to ``stream`` in ``log_format``."""
    formatter: logging.Formatter
    if log_format == "json":
        formatter = JsonFormatter()
    elif log_format == "pretty":
        formatter = PrettyFormatter()
    else:
        formatter = ConsoleFormatter(colour=_is_terminal(stream))
    handler = _ServerHandler(stream)
    handler.setFormatter(formatter)
    handler.addFilter(ContextFields())
    root = logging.getLogger()
    for existing in [h for h in root.handlers if isinstance(h, _ServerHandler)]:
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(LEVELS[log_level])
    for name in QUIETED:
        logging.getLogger(name).setLevel(max(LEVELS[log_level], logging.INFO))


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
