"""Many cheap local HTTP(S) probe targets in one process, for the benchmarks.

One asyncio server (low-level ``Protocol``, no framework) listens on a few loopback ports and
answers any request on any path with ``200 ok`` and ``Connection: close``. Targets are distinct
URLs (``http://127.0.0.1:PORT/t/N``), spread over the ports so that a fresh connection per probe
never runs out of local ports (each port is its own 4-tuple space).

    python -m benchmarks.targets --ports 8 [--tls-ports 2 --tls-dir DIR] [--log FILE] [--workers N]

prints one JSON line ``{"http": [ports], "https": [ports], "https-ecdsa": [ports], "https-rsa": [ports],
"ca": "DIR/ca.pem"}`` when ready and serves until SIGTERM/SIGINT. With ``--tls-ports`` it makes
trustme CAs and certificates for ``127.0.0.1``/``localhost`` (:func:`tls_contexts`: ECDSA P-256
signed by the root, and ECDSA P-256 and RSA-2048 behind an intermediate) and writes the roots to
``DIR/ca.pem`` (one bundle, trusted by both sides).
With ``--log`` it appends one line per request to FILE, ``<unix time, ms> <path>``, as the
request head arrives (line-buffered: a reader sees a probe within milliseconds); the replicas
benchmark reads it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import ssl
import sys
import time
from pathlib import Path
from typing import TextIO

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
BAD_REQUEST = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
MAX_HEADER_BYTES = 16384


class OkProtocol(asyncio.Protocol):
    """Reads one request head, answers 200 and closes. No parsing beyond the blank line."""

    __slots__ = ("buffer", "transport")

    def __init__(self) -> None:
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.buffer += data
        if b"\r\n\r\n" in self.buffer:
            self.transport.write(RESPONSE)
            self.transport.close()
        elif len(self.buffer) > MAX_HEADER_BYTES:
            self.transport.write(BAD_REQUEST)
            self.transport.close()


class LoggingProtocol(OkProtocol):
    """:class:`OkProtocol` that also logs ``<time> <path>`` of each request to ``sink``."""

    __slots__ = ()
    sink: TextIO | None = None

    def data_received(self, data: bytes) -> None:
        complete = b"\r\n\r\n" not in self.buffer and b"\r\n\r\n" in self.buffer + data
        if complete and self.sink is not None:
            parts = (self.buffer + data).split(b" ", 2)
            path = parts[1].decode("latin-1") if len(parts) > 2 else "-"
            self.sink.write(f"{time.time():.3f} {path}\n")
        super().data_received(data)


def tls_contexts(directory: Path, *, tickets: int = 2) -> tuple[dict[str, ssl.SSLContext], Path]:
    """Server contexts by scheme key and the CA bundle trusting all of them (the roots only).

    ``https``: an ECDSA P-256 leaf signed by its root directly (trustme's default; the HTTPS
    ports of every earlier run). ``https-ecdsa`` and ``https-rsa``: the shape public CAs serve,
    a leaf signed by an intermediate CA that the server sends along, with ECDSA P-256 and
    RSA-2048 keys throughout. ``tickets``: TLS 1.3 session tickets sent per connection to a client
    that offers resumption (OpenSSL's client always does; Go's without a session cache does not,
    and is sent none)."""
    import trustme

    contexts: dict[str, ssl.SSLContext] = {}
    pems: list[bytes] = []
    for key, key_type, chained in (("https", trustme.KeyType.ECDSA, False),
                                   ("https-ecdsa", trustme.KeyType.ECDSA, True),
                                   ("https-rsa", trustme.KeyType.RSA, True)):
        root = trustme.CA(key_type=key_type)
        issuer = root.create_child_ca(key_type=key_type) if chained else root
        cert = issuer.issue_cert("127.0.0.1", "localhost", key_type=key_type)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.num_tickets = tickets  # 2: OpenSSL's default, as nginx and HAProxy send
        cert.configure_cert(ctx)  # the leaf and, when chained, the intermediate
        contexts[key] = ctx
        pems.append(root.cert_pem.bytes())
    directory.mkdir(parents=True, exist_ok=True)
    ca_path = directory / "ca.pem"
    ca_path.write_bytes(b"".join(pems))
    return contexts, ca_path


def _listen(host: str) -> socket.socket:
    return socket.create_server((host, 0), backlog=4096)


async def serve(*, plain: list[socket.socket], tls: dict[str, tuple[ssl.SSLContext, list[socket.socket]]],
                ca_path: Path | None, log: Path | None = None, announce: bool = True) -> None:
    """Serve on the listening sockets until SIGTERM/SIGINT; ``announce``: print the ready line."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    protocol: type[OkProtocol] = OkProtocol
    if log is not None:
        LoggingProtocol.sink = open(log, "a", buffering=1)  # noqa: SIM115 - lives as long as the server
        protocol = LoggingProtocol
    servers = [await loop.create_server(protocol, sock=sock, backlog=4096) for sock in plain]
    for ctx, socks in tls.values():
        servers += [await loop.create_server(protocol, sock=sock, ssl=ctx, backlog=4096) for sock in socks]
    ready = {"http": [s.getsockname()[1] for s in plain], "https": [], "https-ecdsa": [], "https-rsa": [],
             **{key: [s.getsockname()[1] for s in socks] for key, (_, socks) in tls.items()},
             "ca": str(ca_path) if ca_path else None}
    if announce:
        print(json.dumps(ready), flush=True)
    await stop.wait()
    for srv in servers:
        srv.close()
    if LoggingProtocol.sink is not None:
        LoggingProtocol.sink.close()


def run_server(*, ports: int, tls_ports: int, tls_dir: Path | None, host: str = "127.0.0.1",
               log: Path | None = None, workers: int = 1, tickets: int = 2) -> None:
    """Listen, then serve in ``workers`` processes sharing the listening sockets (as nginx's
    workers do: a TLS server on one port that a single Python process could not keep up with at
    200 handshakes per second on a shared machine); SIGTERM to this process stops them all."""
    plain = [_listen(host) for _ in range(ports)]
    tls: dict[str, tuple[ssl.SSLContext, list[socket.socket]]] = {}
    ca_path: Path | None = None
    if tls_ports:
        contexts, ca_path = tls_contexts(tls_dir or Path("."), tickets=tickets)
        tls = {key: (ctx, [_listen(host) for _ in range(tls_ports)]) for key, ctx in contexts.items()}
    children = []
    for _ in range(workers - 1):
        pid = os.fork()
        if pid == 0:
            asyncio.run(serve(plain=plain, tls=tls, ca_path=ca_path, log=log, announce=False))
            os._exit(0)
        children.append(pid)
    try:
        asyncio.run(serve(plain=plain, tls=tls, ca_path=ca_path, log=log))
    finally:
        for pid in children:
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)


def target_urls(ready: dict[str, object], count: int, *, scheme: str = "http", host: str = "127.0.0.1",
                ports_used: int | None = None) -> list[str]:
    """``count`` distinct URLs spread round-robin over the ports the server reported (the first
    ``ports_used`` of them if given: 1 is one host:port, as a real site is); ``scheme`` is
    ``http``, ``https``, ``https-ecdsa`` or ``https-rsa`` (:func:`tls_contexts`)."""
    ports = ready[scheme]
    assert isinstance(ports, list) and ports, f"target server has no {scheme} ports"
    ports = ports[:ports_used] if ports_used else ports
    url_scheme = scheme.split("-")[0]
    return [f"{url_scheme}://{host}:{ports[i % len(ports)]}/t/{i:05d}" for i in range(count)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ports", type=int, default=8, help="plain HTTP ports (default 8)")
    p.add_argument("--tls-ports", type=int, default=0, help="HTTPS ports per certificate key type (default 0)")
    p.add_argument("--tls-dir", type=Path, help="where ca.pem is written (with --tls-ports)")
    p.add_argument("--log", type=Path, help="append `<unix time> <path>` of every request to this file")
    p.add_argument("--workers", type=int, default=1, help="serving processes sharing the ports (default 1)")
    p.add_argument("--tickets", type=int, default=2, help="TLS 1.3 session tickets per connection (default 2)")
    args = p.parse_args(argv)
    run_server(ports=args.ports, tls_ports=args.tls_ports, tls_dir=args.tls_dir, log=args.log, workers=args.workers,
               tickets=args.tickets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
