"""Commits and fsyncs a request costs the server beyond its own appends, on SQLite. Prints; asserts nothing.

    python -m benchmarks.background_commits [--runs N] [--sweep PT1M]

One server process on a fresh SQLite ledger; `strace -f -y -e trace=fsync,fdatasync` is attached to it (every
thread) around each case, and each case sends `--runs` requests one after another from one client (so no two
requests share a commit), then waits `SETTLE_SECONDS` for the server's background work (the reactions
follower, the timer loop) to finish. An idle window of the same length, with no request, is counted beside
them. With `synchronous=FULL` in WAL mode SQLite syncs the `-wal` file once per commit, so the syncs of the
`-wal` file are the commits; syncs of the main file are checkpoints.

Cases: a trivial computation run (`run_definition`, two appends of its own: `run_started` and its ending,
each an append of its own) and a three-step `set` workflow (one append: `run_started`, its first input and
`run_succeeded`). The appends a request makes are counted from its run's history (one a record for a
computation, one an applied input for a workflow); the rest of the commits are background commits.

`--sweep` sets `WORKFLOW_SWEEP_INTERVAL` (default `PT1M`, so the timer loop's own sweep does not add claims
of the lease within the window; `PT1S` is the production default: the idle window then shows its rate).
Needs `strace` and the right to attach to a child process (root, or `ptrace_scope` 0).
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from benchmarks.workflows import STEPS, appends_per_run
from tests.conformance.helpers import create_computation, new_playbook
from tests.e2e.server_process import ServerProcess, start_server
from tests.e2e.test_workflow_crashes import ECHO, history, send

SETTLE_SECONDS = 2.0
"""How long a case waits after its last request for background work to finish (well past the follower's
wake-up and the timer loop's wake)."""
_SYNC = re.compile(r"^\d+\s+(fsync|fdatasync)\((\d+)<([^>]*)>")


class Syncs:
    """`strace` attached to every thread of `pid`, writing each fsync/fdatasync with its file to `out`."""

    def __init__(self, pid: int, out: Path) -> None:
        self.out = out
        self.process = subprocess.Popen(
            ["strace", "-f", "-y", "-e", "trace=fsync,fdatasync", "-p", str(pid), "-o", str(out)],
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stderr is not None
        line = self.process.stderr.readline()  # "Process N attached" once it is in
        if "attached" not in line:
            raise RuntimeError(f"strace did not attach: {line}")

    def stop(self) -> tuple[int, int]:
        """Detach; answers (syncs of the -wal file, syncs of any other file)."""
        self.process.send_signal(signal.SIGINT)
        self.process.wait(30)
        wal = other = 0
        for line in self.out.read_text().splitlines():
            found = _SYNC.match(line)
            if found is None:
                continue
            if found.group(3).endswith("-wal"):
                wal += 1
            else:
                other += 1
        return wal, other


def counted(server: ServerProcess, folder: Path, name: str, runs: int, request: Callable[[], int]) -> None:
    """Count the syncs while `runs` requests are sent one after another (each answers its own appends)."""
    syncs = Syncs(server.process.pid, folder / f"{name}.strace")
    began = time.perf_counter()
    appends = sum(request() for _ in range(runs))
    took = time.perf_counter() - began
    time.sleep(SETTLE_SECONDS)
    wal, other = syncs.stop()
    if runs == 0:
        print(f"  {name:<28} {wal:5d} commits, {other:3d} other syncs in {SETTLE_SECONDS:.1f} s")
        return
    print(
        f"  {name:<28} {wal / runs:5.2f} commits a request ({appends / runs:.2f} of them its own appends, "
        f"{(wal - appends) / runs:+.2f} background), {other} checkpoint syncs; {runs} requests in {took:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50, help="requests a case, one after another")
    parser.add_argument("--sweep", default="PT1M", help="WORKFLOW_SWEEP_INTERVAL of the server")
    options = parser.parse_args()
    if shutil.which("strace") is None:
        raise SystemExit("strace is not installed")
    folder = Path(tempfile.mkdtemp(prefix="auto-runtime-bench-commits-"))
    server = start_server(folder / "server", {"WORKFLOW_SWEEP_INTERVAL": options.sweep, "LOG_LEVEL": "warn"})
    try:
        with server.client() as client:
            playbook = new_playbook(client)
            create_computation(client, playbook, "echo", ECHO)
            saved = client.post(f"{playbook}/definitions/workflow", json={"name": "steps", "source": STEPS})
            if saved.status_code != 201:
                raise AssertionError(saved.text)

            def computation() -> int:
                response = send(client, "POST", f"{playbook}/definitions/computation/echo/run", json={"input": 1})
                if response.status_code != 200:
                    raise AssertionError(response.text)
                return len(history(client, playbook, response.json()["run_id"]))  # one append a record

            def workflow() -> int:
                body = {"input": {"n": 1}, "run_id": str(uuid.uuid4())}
                response = send(client, "POST", f"{playbook}/definitions/workflow/steps/run", json=body)
                if response.status_code != 200 or response.json()["status"] != "succeeded":
                    raise AssertionError(response.text)
                return appends_per_run(client, playbook, response.json()["run_id"])

            for _ in range(5):  # warm-up: the definitions' first runs, the sandbox's instances
                computation()
                workflow()
            time.sleep(SETTLE_SECONDS)
            print(f"SQLite ledger, WORKFLOW_SWEEP_INTERVAL={options.sweep}, requests one after another:")
            counted(server, folder, "idle", 0, lambda: 0)
            counted(server, folder, "computation run (trivial)", options.runs, computation)
            counted(server, folder, "workflow, three set steps", options.runs, workflow)
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
