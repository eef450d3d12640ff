"""The command line: `auto-runtime serve`, `auto-runtime check-config`, `auto-runtime key` and
`auto-runtime bench` (`auto_runtime.bench`)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from auto_runtime import __version__
from auto_runtime.auth.api_keys import issue_api_key
from auto_runtime.auth.caller import Permission
from auto_runtime.bench.command import add_parser as add_bench_parser

if TYPE_CHECKING:
    from auto_runtime.settings.variables import Mode

PERMISSION_CHOICES = [str(p) for p in Permission]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="auto-runtime",
        description="Keeps playbooks for orgs, runs their definitions and records every fact in a ledger.",
    )
    parser.add_argument("--version", action="version", version=f"auto-runtime {__version__}")
    parser.add_argument(
        "--image",
        action="store_true",
        help="take the image's defaults (HOST 0.0.0.0, LEDGER_FILE data/ledger.db, json logs at info) and read "
        "no .env, and a configuration file only when CONFIG_FILE names it; the container image runs with it",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="start the server",
        description="Start the server on HOST:PORT (127.0.0.1:5555 unless set), reading .env and "
        "auto-runtime.yaml from the current folder. Once it listens it prints a short banner to standard error "
        "(its URLs, its ledger, local mode or not, its version), and one line when it has stopped, whatever "
        "LOG_LEVEL says. Stops cleanly on SIGINT or SIGTERM.",
    )
    serve.add_argument("--quiet", action="store_true", help="print neither the banner nor the stop line")
    commands.add_parser(
        "check-config",
        help="read and check the settings, then exit",
        description="Read the settings as `serve` would, print the start-up lines, and exit non-zero when a "
        "setting cannot be used.",
    )
    key = commands.add_parser(
        "key",
        help="issue an API key",
        description="Print a new API key once, and the entry to add to API_KEYS (which holds only its digest).",
    )
    key.add_argument("--org", required=True, help="the org the key belongs to")
    key.add_argument(
        "--permission",
        dest="permissions",
        action="append",
        required=True,
        choices=PERMISSION_CHOICES,
        help="a permission of the key; repeat for several",
    )
    key.add_argument(
        "--playbook",
        dest="playbooks",
        action="append",
        help="a playbook the key is limited to; repeat for several (default: every playbook of the org)",
    )
    add_bench_parser(commands)
    return parser


def _issue_key(org: str, permissions: Sequence[str], playbooks: Sequence[str] | None) -> int:
    issued = issue_api_key(org, [Permission(p) for p in permissions], playbooks)
    print(f"API key (shown once, keep it secret): {issued.secret}")
    print(f"Entry for API_KEYS: {issued.entry_json()}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    if arguments.command == "key":
        return _issue_key(arguments.org, arguments.permissions, arguments.playbooks)
    if arguments.command == "bench":
        from auto_runtime.bench.command import run_bench

        return run_bench(arguments)
    from auto_runtime.settings import check_config

    mode: Mode = "image" if arguments.image else "command_line"
    if arguments.command == "check-config":
        return check_config(os.environ, Path.cwd(), sys.stdout, sys.stderr, mode)
    from auto_runtime.server import run_server

    exit_without_finalizing(run_server(os.environ, Path.cwd(), mode, quiet=arguments.quiet))


def exit_without_finalizing(code: int) -> NoReturn:
    """Ends a server that has stopped: everything it keeps is closed and durable by now.

    The interpreter's finalization is skipped on purpose: Wasmtime's own runtime threads may still hold a
    callback into Python from a sandbox run that trapped, and calling it while the interpreter finalizes makes
    Wasmtime abort the process, turning a clean stop into a crash.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    raise SystemExit(main())
