"""The hostile-program corpus against one real server: each program ends as `computation-format.md` says,
and 200 of them leave the server's memory where it was and every other org served.

Memory: the server's resident set (`VmRSS` of `/proc/<pid>/status`) is read after a warm-up pass of the
corpus's repeated programs (`Hostile.repeated`: all but the one that holds a worker 10 s and the slow ways to
use up the work, `SLOW_TO_USE_UP`; four at a time, so the workers have run the memory bombs and been replaced
after them, and the allocator holds what it keeps), and again after 200 more hostile programs. The bound,
`RSS_GROWTH_BOUND_MIB`, is generous on purpose: a run's store may hold up to 256 MiB of linear memory, the
allocator keeps some freed pages per thread, and workers are replaced after bad runs, so the resident set
moves by some MiB from one reading to the next (measured: 339 MiB after the warm-up, 347 MiB after 200 more).
It is well below what a leak would add: a store or an instance kept per run is at least 8 MiB (a fresh 240
MiB-heap instance), and a memory bomb's store holds up to 256 MiB, so keeping even one in ten of 200 runs
passes it.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time

import httpx
import pytest

from tests.conformance.helpers import new_playbook
from tests.e2e.server_process import ServerProcess
from tests.security.hostile_programs import (
    CORPUS,
    PAST_TIME,
    USED_UP,
    Hostile,
    Refused,
    Unavailable,
    Unworkable,
    check_ran,
    check_saved,
)
from tests.security.liveness import kept_live

RUNS = 200
SENDERS = 4
RSS_GROWTH_BOUND_MIB = 128
UNAVAILABLE_RETRIES = 100
RETRY_PACE_SECONDS = 0.2


def params() -> list[object]:
    """The corpus as test cases, one a program."""
    return [pytest.param(hostile, id=hostile.name) for hostile in CORPUS]


@pytest.fixture(scope="module")
def playbook(client: httpx.Client) -> str:
    return new_playbook(client, org="hostile")


def save(client: httpx.Client, playbook: str, hostile: Hostile) -> httpx.Response:
    return client.post(f"{playbook}/definitions/computation", json={"name": hostile.name, "source": hostile.source})


def send(client: httpx.Client, playbook: str, hostile: Hostile) -> httpx.Response:
    """Save the program again when it is refused at save; else run the saved definition."""
    if isinstance(hostile.ending, Refused):
        return save(client, playbook, hostile)
    return client.post(f"{playbook}/definitions/computation/{hostile.name}/run", json={"input": hostile.input})


@pytest.mark.parametrize("hostile", params())
def test_a_hostile_program_ends_as_the_spec_says(client: httpx.Client, playbook: str, hostile: Hostile) -> None:
    saved = save(client, playbook, hostile)
    if check_saved(hostile, saved):
        check_ran(hostile, send(client, playbook, hostile))


def resident_mib(server: ServerProcess) -> int:
    with open(f"/proc/{server.process.pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no VmRSS")


def sent_until_served(client: httpx.Client, playbook: str, hostile: Hostile) -> httpx.Response:
    """`send`, again while the server answers that no worker or checker was free, as the seeds tell a client to:
    with four senders, the bystander's probes, two workers and two checkers, a loaded machine can find none free
    in time. A run that met its own 10 seconds is an ending, not sent again (`check_ran_in_a_crowd`)."""
    response = send(client, playbook, hostile)
    for _ in range(UNAVAILABLE_RETRIES):
        if response.status_code != 503 or PAST_TIME in response.text:
            break
        time.sleep(RETRY_PACE_SECONDS)
        response = send(client, playbook, hostile)
    return response


def check_ran_in_a_crowd(hostile: Hostile, response: httpx.Response) -> None:
    """`check_ran`, except that a program the spec stops for using up its work may meet its 10 seconds first:
    it spends seconds of CPU on its work (about 1 s for `loop-forever` alone on this machine), and four
    at once on a busy machine get a share of a core each, so which bound it meets first depends on the machine,
    and either ending is the spec's for it. `test_a_hostile_program_ends_as_the_spec_says` checks the work
    ending of each, one at a time."""
    if hostile.ending == Unworkable(USED_UP) and response.status_code == 503:
        check_ran(dataclasses.replace(hostile, ending=Unavailable(PAST_TIME)), response)
    else:
        check_ran(hostile, response)


def run_all(server: ServerProcess, playbook: str, hostiles: list[Hostile]) -> list[str]:
    """Send each program of `hostiles` (saving it first if no earlier pass did), `SENDERS` at a time; the
    mismatches with the spec's endings."""
    failures: list[str] = []
    lock = threading.Lock()
    remaining = iter(hostiles)

    def sender() -> None:
        with server.client() as client:
            while True:
                with lock:
                    hostile = next(remaining, None)
                if hostile is None:
                    return
                response = sent_until_served(client, playbook, hostile)
                try:
                    if isinstance(hostile.ending, Refused):
                        check_saved(hostile, response)
                    else:
                        check_ran_in_a_crowd(hostile, response)
                except AssertionError as error:
                    with lock:
                        failures.append(f"{hostile.name}: {error}")

    threads = [threading.Thread(target=sender) for _ in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


@pytest.mark.slow(seconds=45)
def test_200_hostile_programs_leave_memory_at_its_baseline_and_others_served(
    server: ServerProcess, client: httpx.Client
) -> None:
    repeated = [hostile for hostile in CORPUS if hostile.repeated]
    memory_playbook = new_playbook(client, org="hostile-memory")
    for hostile in repeated:
        saved = save(client, memory_playbook, hostile)
        assert saved.status_code in (201, 422), saved.text
    with kept_live(server):
        # Two readings each side: the larger before and the smaller after, since a worker retired after a bad
        # run may or may not have given its store's pages back at the moment of one reading; a leak grows both.
        warm_up = run_all(server, memory_playbook, repeated)
        first = resident_mib(server)
        warm_up += run_all(server, memory_playbook, repeated)
        baseline = max(first, resident_mib(server))
        failures = run_all(server, memory_playbook, list(itertools.islice(itertools.cycle(repeated), RUNS)))
        first = resident_mib(server)
        failures += run_all(server, memory_playbook, repeated)
        after = min(first, resident_mib(server))
    assert warm_up == [] and failures == [], warm_up + failures
    print(f"resident memory: {baseline} MiB after the warm-up, {after} MiB after {RUNS} more")
    assert after - baseline <= RSS_GROWTH_BOUND_MIB, f"resident memory {baseline} MiB after the warm-up, {after} after"
