"""Micro-benchmark of the probe path alone: CPU per probe of each way to make one HTTP(S)
request on a fresh connection, in-process, against the local target server (a separate process).

    python -m benchmarks.micro [--rate 200] [--probes 2000] [--json FILE]

Each variant fires ``--probes`` probes at ``--rate`` per second over ``--targets`` distinct URLs
and reports CPU ms per probe (``time.process_time`` of this process, so the target server is not
counted). Variants: hand-written GET on asyncio streams; httpcore's ``AsyncHTTPConnection`` per
probe with one shared SSL context; a shared ``httpx.AsyncClient`` with keep-alive off; a new
``httpx.AsyncClient`` per probe (builds an SSL context each time); and the engine's own probe
path (``Prober.probe``: connect, TLS, its own HTTP/1.1 exchange, result classification).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import ssl
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpcore
import httpx

from benchmarks import measure, targets

Probe = Callable[[str], Awaitable[int]]


async def raw_streams(ctx: ssl.SSLContext) -> Probe:
    async def probe(url: str) -> int:
        u = httpx.URL(url)
        reader, writer = await asyncio.open_connection(
            u.host, u.port, ssl=ctx if u.scheme == "https" else None,
            server_hostname=u.host if u.scheme == "https" else None)
        try:
            writer.write(f"GET {u.raw_path.decode()} HTTP/1.1\r\nHost: {u.host}:{u.port}\r\n"
                         "User-Agent: bench\r\nConnection: close\r\n\r\n".encode())
            data = await reader.read(-1)
        finally:
            writer.close()
        return int(data[9:12])
    return probe


async def httpcore_connection(ctx: ssl.SSLContext) -> Probe:
    async def probe(url: str) -> int:
        u = httpx.URL(url)
        origin = httpcore.Origin(u.raw_scheme, u.raw_host, u.port or 80)
        async with httpcore.AsyncHTTPConnection(origin, ssl_context=ctx, keepalive_expiry=0) as conn:
            resp = await conn.request("GET", url, headers=[(b"Connection", b"close")],
                                      extensions={"timeout": {"connect": 5, "read": 5, "write": 5, "pool": 5}})
            return resp.status
    return probe


async def httpcore_asyncio_backend(ctx: ssl.SSLContext) -> Probe:
    from benchmarks.asyncio_backend import AsyncioBackend

    backend = AsyncioBackend()

    async def probe(url: str) -> int:
        u = httpx.URL(url)
        origin = httpcore.Origin(u.raw_scheme, u.raw_host, u.port or 80)
        async with httpcore.AsyncHTTPConnection(origin, ssl_context=ctx, keepalive_expiry=0,
                                                network_backend=backend) as conn:
            resp = await conn.request("GET", url, headers=[(b"Connection", b"close")],
                                      extensions={"timeout": {"connect": 5, "read": 5, "write": 5, "pool": 5}})
            return resp.status
    return probe


async def httpx_shared(ctx: ssl.SSLContext) -> Probe:
    client = httpx.AsyncClient(verify=ctx, limits=httpx.Limits(max_keepalive_connections=0), timeout=5)

    async def probe(url: str) -> int:
        return (await client.get(url)).status_code
    return probe


async def httpx_new_client(ctx: ssl.SSLContext) -> Probe:
    cafile = getattr(ctx, "bench_cafile", None)

    async def probe(url: str) -> int:
        # what a per-probe client costs: a new SSL context (CA bundle loaded) every time
        verify = ssl.create_default_context(cafile=cafile) if cafile else True
        async with httpx.AsyncClient(verify=verify, timeout=5) as client:
            return (await client.get(url)).status_code
    return probe


async def blocking_socket(ctx: ssl.SSLContext) -> Probe:
    """No asyncio at all: a blocking socket (and ``ctx.wrap_socket``), run inline. The floor set by
    the kernel and OpenSSL, for telling the event loop's share from the handshake's."""
    import socket

    async def probe(url: str) -> int:
        u = httpx.URL(url)
        sock = socket.create_connection((u.host, u.port or 80), timeout=5)
        try:
            if u.scheme == "https":
                sock = ctx.wrap_socket(sock, server_hostname=u.host)
            sock.sendall(f"GET {u.raw_path.decode()} HTTP/1.1\r\nHost: {u.host}:{u.port}\r\n"
                         "Connection: close\r\n\r\n".encode())
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        finally:
            sock.close()
        return int(data[9:12])
    return probe


async def engine_probe(ctx: ssl.SSLContext, verify: Any = None) -> Probe:
    """The engine's own probe path (:class:`route_monitor.probe.prober.Prober`), without scheduler or metrics;
    its TLS context (pyOpenSSL) trusts what ``ctx`` trusts (the bench CA), or is ``verify``."""
    from route_monitor.probe.prober import Prober, ProbeRequest
    from route_monitor.probe.tls.contexts import TLSContexts
    from route_monitor.probe.tls.truststore import verify_context
    from route_monitor.spec.monitor import ProbeSettings

    prober = Prober(tls=TLSContexts(verify=verify or verify_context(getattr(ctx, "bench_cafile", None))))
    settings = ProbeSettings(timeout_ms=5000)
    requests: dict[str, ProbeRequest] = {}  # built once per monitor, as the engine does

    async def probe(url: str) -> int:
        req = requests.get(url) or requests.setdefault(url, ProbeRequest.build(("bench", url), url, settings))
        result = await prober.probe(req)
        if not result.success:
            raise RuntimeError(f"{result.reason}: {result.detail}")
        return result.status_code or 0
    return probe


async def engine_probe_default_store(ctx: ssl.SSLContext) -> Probe:
    """The engine's probe with its default verifying context: the system store the way a deployed
    operator has it (``SSL_CERT_FILE`` pointed at the test CA bundle, ``SSL_CERT_DIR`` as is)."""
    import os

    from route_monitor.probe.net import connect, tlsstream
    from route_monitor.probe.tls.contexts import TLSContexts

    connect.open_tls = tlsstream.open_tls  # the engine's own (a previous variant may have replaced it)
    cafile = getattr(ctx, "bench_cafile", None)
    saved = os.environ.get("SSL_CERT_FILE")
    if cafile:
        os.environ["SSL_CERT_FILE"] = cafile
    try:
        default = TLSContexts().verify
    finally:
        if saved is None:
            os.environ.pop("SSL_CERT_FILE", None)
        else:
            os.environ["SSL_CERT_FILE"] = saved
    return await engine_probe(ctx, default)


async def engine_probe_asyncio_ssl(ctx: ssl.SSLContext) -> Probe:
    """The engine's probe with TLS through asyncio's SSL transport (``open_connection(ssl=...)``,
    what the engine used before ``probe/net/tlsstream.py``), for comparing the two in one process:
    the stdlib ``ctx`` (system OpenSSL) in place of the engine's pyOpenSSL context."""
    from route_monitor.probe.net import connect

    class AsyncioStream:
        def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.reader, self.writer = reader, writer

        async def read(self, max_bytes: int) -> bytes:
            return await self.reader.read(max_bytes)

        async def write(self, buffer: bytes) -> None:
            self.writer.write(buffer)
            await self.writer.drain()

        def abort(self) -> None:
            self.writer.transport.abort()

        def get_extra_info(self, info: str) -> Any:
            return self.writer.get_extra_info(info)

    async def asyncio_tls(sock: Any, context: Any, server_hostname: str) -> Any:
        reader, writer = await asyncio.open_connection(sock=sock, limit=1 << 16, ssl=ctx,
                                                       server_hostname=server_hostname)
        return AsyncioStream(reader, writer)

    probe = await engine_probe_default_store(ctx)
    connect.open_tls = asyncio_tls  # type: ignore[assignment]  # until the next variant's factory
    return probe


VARIANTS: dict[str, tuple[Callable[[ssl.SSLContext], Awaitable[Probe]], float]] = {
    # name: (factory, share of --probes and --rate to use: the per-client variant is ~20x slower)
    "blocking socket, no event loop (floor)": (blocking_socket, 1.0),
    "raw asyncio streams": (raw_streams, 1.0),
    "httpcore AsyncHTTPConnection, shared SSL context": (httpcore_connection, 1.0),
    "httpcore AsyncHTTPConnection, asyncio backend": (httpcore_asyncio_backend, 1.0),
    "httpx shared AsyncClient, keep-alive off": (httpx_shared, 1.0),
    "httpx new AsyncClient per probe": (httpx_new_client, 0.05),
    "route_monitor engine probe": (engine_probe, 1.0),
    "route_monitor engine probe, default context (system store)": (engine_probe_default_store, 1.0),
    "route_monitor engine probe, default context, asyncio SSL transport": (engine_probe_asyncio_ssl, 1.0),
    "route_monitor engine probe, default context (system store), again": (engine_probe_default_store, 1.0),
}


async def paced(probe: Probe, urls: list[str], *, count: int, rate: float) -> dict[str, Any]:
    ok = 0
    tasks: list[asyncio.Task[int]] = []
    cpu0, t0 = time.process_time(), time.monotonic()
    for i in range(count):
        delay = t0 + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(probe(urls[i % len(urls)])))
    results = await asyncio.gather(*tasks, return_exceptions=True)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - t0
    ok = sum(1 for r in results if r == 200)
    errors = sorted({repr(r)[:120] for r in results if isinstance(r, BaseException)})
    return {"probes": count, "ok": ok, "cpu_ms_per_probe": 1000 * cpu / count, "wall_s": wall,
            "achieved_per_s": count / wall, "errors": errors[:3]}


async def run_all(urls: list[str], ca: str | None, *, probes: int, rate: float,
                  only: list[str] | None = None) -> dict[str, Any]:
    ctx = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
    ctx.bench_cafile = ca  # type: ignore[attr-defined]
    out: dict[str, Any] = {}
    for name, (factory, share) in VARIANTS.items():
        if only and not any(o in name for o in only):
            continue
        probe = await factory(ctx)
        await paced(probe, urls, count=20, rate=rate)  # warm-up: imports, first connections
        out[name] = await paced(probe, urls, count=max(20, int(probes * share)), rate=max(1.0, rate * share))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rate", type=float, default=200.0, help="probes per second (default 200)")
    p.add_argument("--probes", type=int, default=2000, help="probes per variant (default 2000)")
    p.add_argument("--targets", type=int, default=1000, help="distinct target URLs (default 1000)")
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--loop", nargs="+", default=["asyncio"], choices=["asyncio", "uvloop"],
                   help="event loop(s) to run every variant on, one after the other (uvloop: pip install uvloop)")
    p.add_argument("--only", action="append", help="only the variants whose name contains this (repeatable)")
    p.add_argument("--schemes", nargs="+", default=["http", "https"], choices=["http", "https", "https-ecdsa", "https-rsa"],
                   help="targets (benchmarks.targets.tls_contexts): http, https, https-ecdsa, https-rsa; default http https")
    args = p.parse_args(argv)
    workdir = Path(f"/tmp/route-monitor-micro-{time.time_ns()}")
    server, ready = measure.start([sys.executable, "-m", "benchmarks.targets", "--ports", "8", "--tls-ports", "2",
                                   "--tls-dir", str(workdir)], ready_line=True)
    assert ready is not None
    results: dict[str, Any] = {}
    try:
        for scheme in args.schemes:
            urls = targets.target_urls(ready, args.targets, scheme=scheme)
            ca = str(ready["ca"]) if scheme.startswith("https") else None
            for loop in args.loop:
                factory = asyncio.new_event_loop
                if loop == "uvloop":
                    import uvloop
                    factory = uvloop.new_event_loop
                key = scheme if loop == "asyncio" else f"{scheme} on {loop}"
                with asyncio.Runner(loop_factory=factory) as runner:
                    results[key] = runner.run(run_all(urls, ca, probes=args.probes, rate=args.rate, only=args.only))
    finally:
        measure.stop(server)
    for scheme, rows in results.items():
        print(f"\n{scheme.upper()} at {args.rate:g} probes/s over {args.targets} URLs (CPU of the prober only)")
        for name, r in rows.items():
            print(f"  {name:52s} {r['cpu_ms_per_probe']:7.3f} ms/probe  ok {r['ok']}/{r['probes']}"
                  f"  {r['achieved_per_s']:6.1f}/s {' '.join(r['errors'])}")
    if args.json:
        args.json.write_text(json.dumps({"rate": args.rate, "targets": args.targets, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
