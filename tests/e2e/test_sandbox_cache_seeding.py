"""The suite's own plumbing: `start_server` copies the session's compiled sandbox modules where the server looks
for them (`tests/sandbox_engine.py`), on each ledger, and the server loads them instead of compiling its own.

Had the copy gone anywhere else, the server would have compiled modules into the folder it does read: the folder
would hold a module the session did not seed, or one with a time of its own (a copy keeps the session module's
modification time, and a compile writes a new file)."""

from __future__ import annotations

from tests.e2e.server_process import ServerProcess
from tests.sandbox_engine import session_cache_folder


def test_the_server_finds_the_seeded_module_where_it_looks(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        assert client.get("/health").status_code == 200
    compiled = sorted(local_server.folder.rglob("*.cwasm"))
    cache = local_server.folder / ".auto-runtime" / "cache"
    session = {path.name: path for path in session_cache_folder().glob("*.cwasm")}
    assert compiled and [path.parent for path in compiled] == [cache] * len(compiled), compiled
    assert sorted(path.name for path in compiled) == sorted(session), "a module the session did not seed"
    for module in compiled:
        seeded = session[module.name]
        assert module.stat().st_mtime_ns == seeded.stat().st_mtime_ns, f"the server compiled its own {module.name}"
        assert module.read_bytes() == seeded.read_bytes()
