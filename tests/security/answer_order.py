"""Requests over raw sockets, each on a connection of its own, and the order their answers arrive in.

An order test checks order, not time: `OrderedAnswers` notes each answer as its last byte arrives, under a
lock, so a test can say that `/health`, sent while an attack's requests are being read, was answered before
the last of them.
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

ANSWER_TIMEOUT_SECONDS = 300.0
"""A bound on one answer, far past any the tests wait for (not a measurement)."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def request_bytes(method: str, path: str, body: bytes = b"", content_type: str | None = None) -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    if content_type is not None:
        head += f"Content-Type: {content_type}\r\n"
    if body or method in ("POST", "PUT"):
        head += f"Content-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


@dataclass
class OrderedAnswers:
    """Sends requests on connections of their own and notes the order their answers arrive in."""

    base_url: str
    arrived: list[str] = field(default_factory=list)
    answers: dict[str, Answer] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def exchange(self, name: str, request: bytes, sent: threading.Event | None = None) -> Answer:
        """Sends `request`, sets `sent` once the socket took its last byte, reads the whole answer, notes it."""
        address = urlsplit(self.base_url)
        assert address.hostname is not None and address.port is not None
        with socket.create_connection((address.hostname, address.port), timeout=ANSWER_TIMEOUT_SECONDS) as sock:
            sock.sendall(request)
            if sent is not None:
                sent.set()
            received = b""
            while b"\r\n\r\n" not in received:
                received += self._receive(sock)
            head, _, body = received.partition(b"\r\n\r\n")
            while len(body) < _content_length(head):
                body += self._receive(sock)
        answer = Answer(int(head.split(b" ", 2)[1]), body)
        with self._lock:
            self.arrived.append(name)
            self.answers[name] = answer
        return answer

    @staticmethod
    def _receive(sock: socket.socket) -> bytes:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError("the server closed the connection before its whole answer")
        return chunk

    def in_background(self, name: str, request: bytes) -> tuple[threading.Thread, threading.Event]:
        """Starts `exchange` in a thread of its own: the thread, and an event set once the request was sent (or
        could not be: the test then finds no answer under `name`)."""
        sent = threading.Event()

        def send() -> None:
            try:
                self.exchange(name, request, sent)
            finally:
                sent.set()

        thread = threading.Thread(target=send, name=f"request-{name}", daemon=True)
        thread.start()
        return thread, sent

    def position(self, name: str) -> int:
        with self._lock:
            return self.arrived.index(name)
