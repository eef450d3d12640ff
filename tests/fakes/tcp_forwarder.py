"""A TCP forwarder on loopback, run as its own process: `python -m tests.fakes.tcp_forwarder LISTEN TARGET`.

It takes connections on 127.0.0.1:LISTEN and carries their bytes both ways to 127.0.0.1:TARGET, printing
`listening on 127.0.0.1:LISTEN` once it listens. A test puts it in front of a server to take that server away
and bring it back (stop the forwarder, start another on the same port) while the server behind keeps its state.
"""

from __future__ import annotations

import sys

import trio

from tests.fakes.lifeline import end_with_parent

BUFFER = 65536


async def _pipe(source: trio.SocketStream, sink: trio.SocketStream) -> None:
    try:
        while data := await source.receive_some(BUFFER):
            await sink.send_all(data)
        await sink.send_eof()
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass


async def _forward(client: trio.SocketStream, target: int) -> None:
    try:
        upstream = await trio.open_tcp_stream("127.0.0.1", target)
    except OSError:
        await client.aclose()
        return
    async with client, upstream, trio.open_nursery() as nursery:
        nursery.start_soon(_pipe, client, upstream)
        nursery.start_soon(_pipe, upstream, client)


async def main(listen: int, target: int) -> None:
    listeners = await trio.open_tcp_listeners(listen, host="127.0.0.1")
    print(f"listening on 127.0.0.1:{listen}", flush=True)
    await trio.serve_listeners(lambda stream: _forward(stream, target), listeners)


if __name__ == "__main__":
    end_with_parent()
    trio.run(main, int(sys.argv[1]), int(sys.argv[2]))
