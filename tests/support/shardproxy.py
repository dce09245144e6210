"""An emulated router shard: a TCP proxy on loopback in front of a target, as its own process.

``python -m tests.support.shardproxy LISTEN_PORT BACKEND_PORT`` forwards every connection to
``127.0.0.1:LISTEN_PORT`` to ``127.0.0.1:BACKEND_PORT`` until it is stopped. A test stops the
process to take the shard down (its Routes' connections are refused, as when a router's pods are
gone) and starts it again on the same port to bring it back (:class:`Shard`).
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

from tests.support.net import wait_for
from tests.support.prometheus import stop


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


async def _serve(listen: int, backend: int) -> None:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            upstream_r, upstream_w = await asyncio.open_connection("127.0.0.1", backend)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(_pipe(client_r, upstream_w), _pipe(upstream_r, client_w))

    server = await asyncio.start_server(handle, "127.0.0.1", listen, reuse_address=True)
    async with server:
        await server.serve_forever()


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class Shard:
    """One emulated router shard (a proxy process) on a fixed loopback port."""

    def __init__(self, port: int, backend: int, log: Path) -> None:
        self.port, self.backend, self.log = port, backend, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "tests.support.shardproxy", str(self.port),
                                          str(self.backend)], stdout=out, stderr=subprocess.STDOUT)
        wait_for(lambda: _accepts(self.port), timeout=15, what=f"the shard proxy on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc = None


if __name__ == "__main__":
    asyncio.run(_serve(int(sys.argv[1]), int(sys.argv[2])))
