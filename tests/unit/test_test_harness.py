"""The suite's own machinery: the measure of a test's real waits (`tests/real_waits.py`), the order the workers
are handed modules in (`tests/scheduling.py`), the servers shared per ledger (`tests/per_ledger.py`) and the
sandbox's trap handlers kept for the whole session (`tests/trap_handlers.py`)."""

from __future__ import annotations

import faulthandler
import os
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest
import wasmtime

from tests.e2e.server_process import start_server
from tests.per_ledger import PerLedger, ServerStack, per_ledger
from tests.real_waits import tree_cpu_seconds
from tests.scheduling import SLOW_SECONDS, TEST_SECONDS, heaviest_modules_first
from tests.trap_handlers import SIGNALS, handlers_of_wasmtime, put_back

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]

BURN = "import time\nwhile time.process_time() < {seconds}: pass\n"
"""A Python program that spends `seconds` of CPU, then ends."""
BURN_THEN_WAIT = BURN + "import sys\nprint('burnt', flush=True)\nsys.stdin.read()\n"


def test_the_tree_counts_a_child_that_ended_and_a_grandchild_still_running() -> None:
    before = tree_cpu_seconds(os.getpid())
    subprocess.run([sys.executable, "-c", BURN.format(seconds=0.3)], check=True)
    ended = tree_cpu_seconds(os.getpid())
    assert ended - before >= 0.28  # less a clock tick or two: /proc counts in ticks of 10 ms

    # A shell whose child burns and stays: the grandchild's CPU is read from its own /proc entry.
    # (`; true` keeps the shell from replacing itself with its last command.)
    command = ["/bin/sh", "-c", '"$0" -c "$1"; true', sys.executable, BURN_THEN_WAIT.format(seconds=0.3)]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as shell:
        assert shell.stdout is not None and shell.stdin is not None
        assert shell.stdout.readline() == "burnt\n"
        assert tree_cpu_seconds(os.getpid()) - ended >= 0.28
        shell.stdin.close()
        shell.stdout.close()


def test_a_test_that_sleeps_is_listed_with_its_wait(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a process of its own: in this one, the session's servers working during the sleep would be
    subtracted from it (the measure's known blind spot: a wait hides behind work)."""
    pytester.makeconftest(
        "from tests.real_waits import RealWaits\n\n"
        "def pytest_configure(config):\n"
        "    config.pluginmanager.register(RealWaits(), 'real_waits')\n"
    )
    pytester.makepyfile(
        test_inner="""
        import time

        def test_sleeps():
            time.sleep(0.4)

        def test_works():
            end = time.process_time() + 0.4
            while time.process_time() < end:
                pass
        """
    )
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    result = pytester.runpytest_subprocess("-p", "no:xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    inner = [line.split() for line in result.outlines if line.endswith(("sleeps", "works"))]
    listed = {fields[-1]: float(fields[0]) for fields in inner}
    assert listed["test_inner.py::test_sleeps"] >= 0.35, result.outlines
    assert set(listed) == {"test_inner.py::test_sleeps", "test_inner.py::test_works"}
    assert "0 test(s) waited more than 5 s" in result.outlines


def test_the_heaviest_module_is_handed_out_first_and_each_module_keeps_its_order(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nmarkers =\n    slow: takes more than a few seconds\n")
    pytester.makepyfile(
        test_many="".join(f"def test_{n}():\n    pass\n" for n in range(int(SLOW_SECONDS / TEST_SECONDS) - 1)),
        test_one_slow="import pytest\n\n@pytest.mark.slow\ndef test_b():\n    pass\n\ndef test_a():\n    pass\n",
        test_heaviest="import pytest\n\n@pytest.mark.slow(seconds=60)\ndef test_long():\n    pass\n",
    )
    # In this process, so without pytest's faulthandler plugin: its end would remove the sandbox's trap handlers
    # (`tests/trap_handlers.py`).
    items, _ = pytester.inline_genitems("-p", "no:xdist", "-p", "no:cacheprovider", "-p", "no:faulthandler")
    ordered = [item.nodeid for item in heaviest_modules_first(items)]
    assert ordered[0] == "test_heaviest.py::test_long"
    assert ordered[1:3] == ["test_one_slow.py::test_b", "test_one_slow.py::test_a"]
    assert ordered[3:] == [item.nodeid for item in items if item.nodeid.startswith("test_many.py")]


def test_a_ledger_s_server_is_started_once_on_first_use_and_stopped_at_the_end() -> None:
    started: list[str] = []
    stopped: list[str] = []

    def start(ledger: str, stack: ExitStack) -> str:
        started.append(ledger)
        stack.callback(stopped.append, ledger)
        return f"server on {ledger}"

    with per_ledger(start) as servers:
        assert isinstance(servers, PerLedger)
        assert servers.get("postgres") == "server on postgres"
        assert servers.get("sqlite") == servers.get("sqlite") == "server on sqlite"
        assert started == ["postgres", "sqlite"] and stopped == []
        with pytest.raises(ValueError):
            servers.get("mysql")
    assert stopped == ["sqlite", "postgres"]


def test_a_server_stack_asks_every_server_to_stop_before_it_waits_for_one(tmp_path: Path) -> None:
    with ServerStack() as stack:
        servers = [stack.stop_at_the_end(start_server(tmp_path / name)) for name in ("first", "second")]
        asked_when_the_first_wait_began: list[bool] = []
        stack.callback(lambda: asked_when_the_first_wait_began.extend(server.asked_to_stop for server in servers))
    assert asked_when_the_first_wait_began == [True, True]
    assert [server.process.poll() for server in servers] == [0, 0]


def test_trap_handlers_removed_by_faulthandler_are_named_and_put_back() -> None:
    engine = wasmtime.Engine()
    store = wasmtime.Store(engine)
    broken = wasmtime.Instance(store, wasmtime.Module(engine, '(module (func (export "f") unreachable))'), [])
    call = broken.exports(store)["f"]
    assert isinstance(call, wasmtime.Func)
    before = handlers_of_wasmtime()
    assert set(before) == set(SIGNALS)
    assert put_back(before) == []

    faulthandler.disable()  # what the end of a nested pytest session does, and it restores what it found
    faulthandler.enable(file=sys.__stderr__)
    assert handlers_of_wasmtime() == {}
    replaced = put_back(before)
    assert [entry.split(" went to ")[0] for entry in replaced] == [signum.name for signum in SIGNALS]
    assert all("libpython" in entry for entry in replaced), replaced
    assert {signum: action.handler for signum, action in handlers_of_wasmtime().items()} == {
        signum: action.handler for signum, action in before.items()
    }
    with pytest.raises(wasmtime.Trap):  # a trap is an error again, not the end of the process
        call(store)
