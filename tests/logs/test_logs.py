"""configure_logging: the three formats and the four levels."""

import io
import json
import logging
from collections.abc import Iterator

import pytest

from auto_runtime.logs import configure_logging


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_json_is_one_object_per_line_with_the_extra_fields() -> None:
    stream = io.StringIO()
    configure_logging("json", "info", stream)
    logging.getLogger("auto_runtime.test").info("started %s", "here", extra={"port": 5555})
    entry = json.loads(stream.getvalue())
    assert set(entry) == {"time", "level", "logger", "message", "port"}
    assert (entry["level"], entry["logger"], entry["message"], entry["port"]) == (
        "info",
        "auto_runtime.test",
        "started here",
        5555,
    )
    assert entry["time"].endswith("Z")


def _explode() -> None:
    raise RuntimeError("boom")


def test_json_carries_the_exception() -> None:
    stream = io.StringIO()
    configure_logging("json", "error", stream)
    try:
        _explode()
    except RuntimeError:
        logging.getLogger("x").exception("failed")
    entry = json.loads(stream.getvalue())
    assert "RuntimeError: boom" in entry["exception"]


def test_the_level_is_the_least_level_logged_and_warn_is_warning() -> None:
    stream = io.StringIO()
    configure_logging("json", "warn", stream)
    logger = logging.getLogger("x")
    logger.info("hidden")
    logger.warning("shown")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(line["level"], line["message"]) for line in lines] == [("warn", "shown")]


def test_pretty_is_a_line_of_text_for_a_person() -> None:
    stream = io.StringIO()
    configure_logging("pretty", "debug", stream)
    logging.getLogger("auto_runtime.server").debug("listening", extra={"port": 5555})
    line = stream.getvalue().rstrip("\n")
    assert line.endswith("DEBUG auto_runtime.server: listening port=5555")


def test_console_is_a_time_a_mark_and_the_message_without_colour_off_a_terminal() -> None:
    stream = io.StringIO()
    configure_logging("console", "info", stream)
    logging.getLogger("x").error("broken")
    line = stream.getvalue().rstrip("\n")
    time, mark, message = line.split(" ", 2)
    assert len(time) == 8
    assert (mark, message) == ("✖", "broken")
    assert "\x1b[" not in line


def test_console_is_coloured_at_a_terminal() -> None:
    stream = _Terminal()
    configure_logging("console", "info", stream)
    logging.getLogger("x").warning("careful")
    assert "\x1b[33m▲\x1b[0m careful" in stream.getvalue()


def test_configuring_again_replaces_the_handler() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging("json", "info", first)
    configure_logging("json", "info", second)
    logging.getLogger("x").info("once")
    assert first.getvalue() == ""
    assert len(second.getvalue().splitlines()) == 1
