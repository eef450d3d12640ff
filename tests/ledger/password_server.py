"""A fake PostgreSQL server that asks every client for a cleartext password, prints it, and refuses it.

`python -m tests.ledger.password_server`: listen on a free loopback port and print `port <n>`; then for each
connection answer `N` to an SSL or GSS encryption request, read the startup message, ask for a cleartext
password (AuthenticationCleartextPassword), print `{"user": ..., "password": ...}` as one JSON line, and
answer `28P01` (invalid_password). It speaks only as much of the protocol as signing in needs.
"""

from __future__ import annotations

import json
import socket
import struct

ENCRYPTION_REQUESTS = (80877103, 80877104)  # SSLRequest, GSSENCRequest
ASK_CLEARTEXT_PASSWORD = b"R" + struct.pack("!ii", 8, 3)


def _exactly(conn: socket.socket, size: int) -> bytes:
    received = b""
    while len(received) < size:
        chunk = conn.recv(size - len(received))
        if not chunk:
            raise ConnectionError("the client went away")
        received += chunk
    return received


def _message_body(conn: socket.socket) -> bytes:
    (length,) = struct.unpack("!i", _exactly(conn, 4))
    return _exactly(conn, length - 4)


def _refusal() -> bytes:
    fields = b"SFATAL\0VFATAL\0C28P01\0Mthe fake server records passwords and accepts none\0\0"
    return b"E" + struct.pack("!i", len(fields) + 4) + fields


def serve(conn: socket.socket) -> None:
    body = _message_body(conn)
    while struct.unpack("!i", body[:4])[0] in ENCRYPTION_REQUESTS:
        conn.sendall(b"N")
        body = _message_body(conn)
    words = body[4:].split(b"\0")
    startup = dict(zip(words[0::2], words[1::2], strict=False))
    conn.sendall(ASK_CLEARTEXT_PASSWORD)
    if _exactly(conn, 1) != b"p":
        return
    password = _message_body(conn).rstrip(b"\0").decode("utf-8")
    print(json.dumps({"user": startup.get(b"user", b"").decode("utf-8"), "password": password}), flush=True)
    conn.sendall(_refusal())


def main() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    print(f"port {server.getsockname()[1]}", flush=True)
    while True:
        conn, _ = server.accept()
        with conn:
            try:
                serve(conn)
            except ConnectionError:
                continue


if __name__ == "__main__":
    main()
