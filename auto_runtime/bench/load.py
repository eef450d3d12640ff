"""The load generator: processes that each keep several keep-alive sockets busy with one raw HTTP/1.1 request
written once and read back by `Content-Length`, one request in flight a socket. It costs a few tens of
microseconds a request, well under a server's cost, so the server is what is measured.

Every socket connects to the one host and port given, never anywhere else. Each load process sends its
`Answers` back through a pipe; `LoadRun` starts them and waits (calling `progress` meanwhile), `load_answers`
does both at once.
"""

from __future__ import annotations

import multiprocessing
import os
import selectors
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

POLL_SECONDS = 0.2
FRESH_UUID = b"00000000-0000-4000-8000-000000000000"
"""In a route's body, stands for a fresh UUID (version 4) in each request sent (`Route.fresh_uuids`): a run id
that names a new run each time. Same length as any UUID, so the request's `Content-Length` holds."""


@dataclass(frozen=True)
class Route:
    """One request, sent again and again, and the status every answer must have."""

    name: str
    method: str
    path: str
    body: bytes
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    fresh_uuids: bool = False
    """Each request sent has every `FRESH_UUID` of its body replaced by a new UUID."""

    def request_bytes(self, host: str, port: int) -> bytes:
        lines = [f"{self.method} {self.path} HTTP/1.1", f"Host: {host}:{port}"]
        lines += [f"{name}: {value}" for name, value in self.headers.items()]
        if self.body:
            lines += ["Content-Type: application/json", f"Content-Length: {len(self.body)}"]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + self.body


@dataclass(frozen=True)
class Answers:
    """What one load process measured."""

    done: int
    failed: str
    """The first unexpected answer (or why the load stopped early); empty when every answer was expected."""
    latencies: list[float]
    """Seconds from each answered request's send to its full response, in the load process."""
    kept: list[tuple[float, bytes]]
    """With `keep`: each answered request's send time (`time.time()`, for comparing with the server's own
    times on the same machine) and its response body, in the order of `latencies`."""


def _content_length(head: bytes) -> int:
    start = head.find(b"content-length:")
    if start < 0:
        return 0
    end = head.find(b"\r\n", start)
    return int(head[start + 15 : end if end >= 0 else None])


def load_worker(
    host: str,
    port: int,
    request: bytes,
    status: int,
    connections: int,
    seconds: float,
    out: Connection,
    requests: int | None = None,
    keep: bool = False,
    fresh_uuids: bool = False,
) -> None:
    """Keeps `connections` sockets busy, one request in flight on each, for `seconds`; or, given `requests`,
    until that many are answered (each socket sends again while some are left; unanswered after `seconds` is a
    failure); with `fresh_uuids`, each request's `FRESH_UUID`s replaced by a new UUID. Sends its `Answers`."""
    expected = f"HTTP/1.1 {status} ".encode()
    selector = selectors.DefaultSelector()
    buffers: dict[socket.socket, bytearray] = {}
    in_flight: dict[socket.socket, tuple[float, float]] = {}
    latencies: list[float] = []
    kept: list[tuple[float, bytes]] = []
    issued = 0

    def send(sock: socket.socket) -> None:
        nonlocal issued
        in_flight[sock] = (time.monotonic(), time.time())
        sock.sendall(request.replace(FRESH_UUID, str(uuid.uuid4()).encode()) if fresh_uuids else request)
        issued += 1

    for _ in range(connections if requests is None else min(connections, requests)):
        sock = socket.create_connection((host, port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        buffers[sock] = bytearray()
        selector.register(sock, selectors.EVENT_READ)
        send(sock)
    failed = ""
    until = time.monotonic() + seconds
    while in_flight and not failed:
        if time.monotonic() >= until:
            if requests is not None:
                failed = f"{len(in_flight)} requests unanswered after {seconds:g} s"
            break
        for key, _ in selector.select(timeout=1.0):
            ready = key.fileobj
            assert isinstance(ready, socket.socket)
            buffer = buffers[ready]
            received = ready.recv(65536)
            if not received:
                failed = "the server closed a connection"
                break
            buffer += received
            head_end = buffer.find(b"\r\n\r\n")
            if head_end < 0:
                continue
            length = _content_length(bytes(buffer[:head_end]).lower())
            if len(buffer) < head_end + 4 + length:
                continue
            answered = time.monotonic()
            if not buffer.startswith(expected):
                failed = bytes(buffer[:300]).decode(errors="replace")
                break
            sent, sent_at = in_flight.pop(ready)
            latencies.append(answered - sent)
            if keep:
                kept.append((sent_at, bytes(buffer[head_end + 4 : head_end + 4 + length])))
            del buffer[: head_end + 4 + length]
            if requests is None or issued < requests:
                send(ready)
    for sock in buffers:
        sock.close()
    out.send(Answers(len(latencies), failed, latencies, kept))


class LoadFailed(RuntimeError):
    """A route answered something else than its status, or the load could not finish."""


class LoadRun:
    """`processes` load processes driving `route` on `host:port` with `connections` sockets each (see
    `load_worker`); given `requests`, they are shared out among the processes."""

    def __init__(
        self,
        host: str,
        port: int,
        route: Route,
        processes: int,
        connections: int,
        seconds: float,
        requests: int | None = None,
        keep: bool = False,
    ) -> None:
        self.route = route
        request = route.request_bytes(host, port)
        shares: list[int | None] = [None] * processes
        if requests is not None:
            shares = [requests // processes + (index < requests % processes) for index in range(processes)]
        context = multiprocessing.get_context("fork")
        self._pipes: list[Connection] = []
        self._workers: list[BaseProcess] = []
        for share in shares:
            if share == 0:
                continue
            receiver, sender = context.Pipe(duplex=False)
            worker = context.Process(
                target=load_worker,
                args=(host, port, request, route.status, connections, seconds, sender, share, keep, route.fresh_uuids),
            )
            worker.start()
            self._pipes.append(receiver)
            self._workers.append(worker)

    def answers(self, progress: Callable[[], None] | None = None) -> list[Answers]:
        """Wait for every process's answers, calling `progress` every `POLL_SECONDS` meanwhile; an unexpected
        answer raises `LoadFailed`."""
        answers: list[Answers] = []
        for pipe in self._pipes:
            while not pipe.poll(POLL_SECONDS):
                if progress is not None:
                    progress()
            answers.append(pipe.recv())
        for worker in self._workers:
            worker.join()
        for answer in answers:
            if answer.failed:
                raise LoadFailed(f"{self.route.name} answered: {answer.failed}")
        return answers


def load_answers(
    port: int,
    route: Route,
    processes: int,
    connections: int,
    seconds: float,
    requests: int | None = None,
    keep: bool = False,
    host: str = "127.0.0.1",
) -> list[Answers]:
    """What `processes` load processes measured driving `route` on `host:port` (see `LoadRun`)."""
    return LoadRun(host, port, route, processes, connections, seconds, requests, keep).answers()


def load(port: int, route: Route, processes: int, connections: int, seconds: float) -> float:
    """Requests a second of `route` on `port`, from `processes` load processes."""
    return sum(answer.done for answer in load_answers(port, route, processes, connections, seconds)) / seconds


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """User and system CPU of a process, every thread, from `/proc/<pid>/stat`."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
