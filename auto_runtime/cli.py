"""The command line: `auto-runtime serve`, `auto-runtime check-config` and `auto-runtime key`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from auto_runtime import __version__
from auto_runtime.auth.api_keys import issue_api_key
from auto_runtime.auth.caller import Permission

PERMISSION_CHOICES = [str(p) for p in Permission]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="auto-runtime",
        description="Keeps playbooks for orgs, runs their definitions and records every fact in a ledger.",
    )
    parser.add_argument("--version", action="version", version=f"auto-runtime {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser(
        "serve",
        help="start the server",
        description="Start the server on HOST:PORT (127.0.0.1:5555 unless set), reading .env and "
        "auto-runtime.yaml from the current folder. Stops cleanly on SIGINT or SIGTERM.",
    )
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
    from auto_runtime.settings import check_config

    if arguments.command == "check-config":
        return check_config(os.environ, Path.cwd(), sys.stdout, sys.stderr)
    from auto_runtime.server import run_server

    exit_without_finalizing(run_server(os.environ, Path.cwd()))


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
