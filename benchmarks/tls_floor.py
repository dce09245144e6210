"""The floor of one HTTPS probe's CPU: handshakes and one request each, made one after the other
on blocking sockets (no event loop, no engine), to split a probe's CPU between OpenSSL and our code.

    python -m benchmarks.tls_floor [--scheme https-rsa] [--handshakes 400] [--rate 40]
                                   [--mode bio|socket|pyopenssl|probe] [--verify full|none] [--tickets 2]
                                   [--system-bundle]

Against the local targets (:mod:`benchmarks.targets`, one host:port, the CA through
``SSL_CERT_FILE``, as ``run.py --only site`` sets both sides up), at ``--rate`` handshakes per second (paced by sleeping, so the
server answers each one as it would a monitor's probe). Prints one JSON line: CPU of this process
per handshake-and-request (``time.process_time``), user and system apart.

- ``--mode socket``: the stdlib's ``SSLContext.wrap_socket`` (OpenSSL reads and writes the socket
  itself); ``--mode bio``: a stdlib ``SSLObject`` on memory BIOs, the way ``probe/net/tlsstream.py``
  drove it until the probes moved to pyOpenSSL (the system's OpenSSL 3.0, the IP SAN verified);
  ``--mode pyopenssl``: bare pyOpenSSL, whose OpenSSL is the one bundled with ``cryptography``
  (4.x), the chain and the name ``localhost`` (a DNS SAN of the same certificate) verified;
  ``--mode probe``: the probes' own context and connection (``probe/tls/truststore.py``,
  ``probe/tls/connection.py``, pyOpenSSL with the stdlib client's settings, the IP SAN verified);
- ``--verify none``: no certificate verification (what verifying the chain and the name costs);
- ``--system-bundle``: ``SSL_CERT_FILE`` names the system's CA bundle with the test CA appended
  (what a deployment adding its CA to the image's bundle trusts: ~150 certificates to look in);
- ``--tickets N``: the server sends N TLS 1.3 session tickets per connection (default 2, OpenSSL's
  and nginx's default; 0 is what a client that offers no resumption, like Go's without a session
  cache, is sent).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import ssl
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import measure

REQUEST = b"GET /t/0 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nUser-Agent: floor\r\nAccept: */*\r\n\r\n"


def _exchange_socket(ctx: ssl.SSLContext, port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as raw:
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(REQUEST)
            data = b""
            while b"\r\n\r\nok" not in data:
                chunk = tls.recv(65536)
                if not chunk:
                    break
                data += chunk
            return data


def _exchange_bio(ctx: ssl.SSLContext, port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = ctx.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
        while True:
            try:
                obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                if outgoing.pending:
                    sock.sendall(outgoing.read())
                incoming.write(sock.recv(65536))
        obj.write(REQUEST)
        sock.sendall(outgoing.read())
        data = b""
        while b"\r\n\r\nok" not in data:
            try:
                data += obj.read(65536)
            except ssl.SSLWantReadError:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                incoming.write(chunk)
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
        return data


def _stdlib_context(cafile: str, verify: bool) -> ssl.SSLContext:
    """The stdlib context the probes used before pyOpenSSL: a TLS client trusting ``cafile``."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile=cafile)
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _probe_context(verify: bool) -> Any:
    """The probes' own context: the system store (here ``SSL_CERT_FILE``) loaded in memory."""
    from route_monitor.probe.tls.ossl import ClientContext
    from route_monitor.probe.tls.truststore import verify_context
    return verify_context() if verify else ClientContext.new(verify=False)


def _exchange_probe(ctx: Any, port: int) -> bytes:
    """The probes' ``TLSConnection`` driven as ``tlsstream`` drives it, on a blocking socket."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = ctx.connection("127.0.0.1")
        while not conn.handshake():
            if out := conn.outgoing():
                sock.sendall(out)
            conn.feed(sock.recv(65536))
        conn.write(REQUEST)
        sock.sendall(conn.outgoing())
        data = b""
        while b"\r\n\r\nok" not in data:
            chunk = conn.read(65536)
            if chunk is None:
                received = sock.recv(65536)
                if not received:
                    break
                conn.feed(received)
            elif not chunk:
                break
            else:
                data += chunk
        return data


def _pyopenssl_context(cafile: str, verify: bool) -> Any:
    from OpenSSL import SSL

    ctx = SSL.Context(SSL.TLS_CLIENT_METHOD)
    ctx.load_verify_locations(cafile)
    ctx.set_verify(SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT if verify else SSL.VERIFY_NONE, None)
    return ctx


def _exchange_pyopenssl(ctx: Any, port: int) -> bytes:
    from OpenSSL import SSL
    from OpenSSL._util import lib

    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = SSL.Connection(ctx, None)
        if ctx.get_verify_mode() != SSL.VERIFY_NONE:
            assert lib.X509_VERIFY_PARAM_set1_host(lib.SSL_get0_param(conn._ssl), b"localhost", 9) == 1
        conn.set_connect_state()
        while True:
            try:
                conn.do_handshake()
                break
            except SSL.WantReadError:
                with contextlib.suppress(SSL.WantReadError):  # nothing to send
                    sock.sendall(conn.bio_read(65536))
                conn.bio_write(sock.recv(65536))
        conn.send(REQUEST)
        sock.sendall(conn.bio_read(65536))
        data = b""
        while b"\r\n\r\nok" not in data:
            try:
                data += conn.recv(65536)
            except SSL.WantReadError:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                conn.bio_write(chunk)
            except (SSL.ZeroReturnError, SSL.SysCallError):
                break
        return data


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scheme", default="https-rsa", choices=["https-ecdsa", "https-rsa"])
    p.add_argument("--handshakes", type=int, default=400)
    p.add_argument("--rate", type=float, default=40.0, help="handshakes per second (default 40)")
    p.add_argument("--mode", default="bio", choices=["socket", "bio", "pyopenssl", "probe"])
    p.add_argument("--verify", default="full", choices=["full", "none"])
    p.add_argument("--tickets", type=int, default=2, help="session tickets the server sends per connection")
    p.add_argument("--system-bundle", action="store_true", help="trust the system bundle plus the test CA")
    args = p.parse_args(argv)
    workdir = Path(f"/tmp/route-monitor-tlsfloor-{time.time_ns()}")
    server, ready = measure.start([sys.executable, "-m", "benchmarks.targets", "--ports", "1", "--tls-ports", "1",
                                   "--tls-dir", str(workdir), "--workers", "2", "--tickets", str(args.tickets)],
                                  ready_line=True)
    assert ready is not None
    try:
        cafile = Path(str(ready["ca"]))
        if args.system_bundle:
            bundle = workdir / "bundle.pem"
            system = ssl.get_default_verify_paths().openssl_cafile
            bundle.write_bytes(Path(system).read_bytes() + b"\n" + cafile.read_bytes())
            cafile = bundle
        os.environ["SSL_CERT_FILE"] = str(cafile)
        ctx: Any = _stdlib_context(str(cafile), args.verify == "full")
        port = ready[args.scheme][0]  # type: ignore[index]
        exchange: Callable[[Any, int], bytes] = _exchange_bio if args.mode == "bio" else _exchange_socket
        if args.mode == "pyopenssl":
            ctx, exchange = _pyopenssl_context(str(cafile), args.verify == "full"), _exchange_pyopenssl
        elif args.mode == "probe":
            ctx, exchange = _probe_context(args.verify == "full"), _exchange_probe
        for _ in range(20):  # warm-up: imports, first allocations
            exchange(ctx, port)
        period = 1.0 / args.rate
        t0, c0, o0 = time.monotonic(), time.process_time(), os.times()
        ok = 0
        for i in range(args.handshakes):
            ok += exchange(ctx, port).endswith(b"ok")
            delay = t0 + (i + 1) * period - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        c1, o1 = time.process_time(), os.times()
    finally:
        measure.stop(server)
    n = args.handshakes
    print(json.dumps({"scheme": args.scheme, "mode": args.mode, "verify": args.verify, "tickets": args.tickets, "system_bundle": args.system_bundle,
                      "handshakes": n, "ok": ok, "cpu_ms_per_handshake": round(1000 * (c1 - c0) / n, 4),
                      "user_ms": round(1000 * (o1.user - o0.user) / n, 4),
                      "sys_ms": round(1000 * (o1.system - o0.system) / n, 4)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
