"""The suite's own plumbing: `start_server` copies the session's compiled sandbox module where the server looks
for it (`tests/sandbox_engine.py`), on each ledger, and the server loads it instead of compiling its own.

Had the copy gone anywhere else, the server would have compiled a module into the folder it does read: the
folder would hold two, or one with a time of its own (the copy keeps the session module's modification time,
and a compile writes a new file)."""

from __future__ import annotations

from tests.e2e.server_process import ServerProcess
from tests.sandbox_engine import session_cache_folder


def test_the_server_finds_the_seeded_module_where_it_looks(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        assert client.get("/health").status_code == 200
    compiled = sorted(local_server.folder.rglob("*.cwasm"))
    assert [path.parent for path in compiled] == [local_server.folder / ".auto-runtime" / "cache"], compiled
    (session,) = session_cache_folder().glob("*.cwasm")
    assert compiled[0].name == session.name
    assert compiled[0].stat().st_mtime_ns == session.stat().st_mtime_ns, "the server compiled its own module"
    assert compiled[0].read_bytes() == session.read_bytes()
