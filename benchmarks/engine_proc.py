"""Our engine in its own process, set up the way ``standalone`` sets it up: one
:class:`~route_monitor.probe.engine.ProbeEngine` with one URL monitor per target, metrics on a
fresh registry served over HTTP (prometheus_client's server, which accepts ``name[]=`` filters so
the benchmark can read the health metrics without rendering every monitor's series).

    python -m benchmarks.engine_proc --urls FILE --interval 30 [--ca FILE] [--max-concurrency 500]

``FILE`` holds one URL per line. Prints ``{"metrics_port": N}`` when every monitor is set, and
probes until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path

from prometheus_client import CollectorRegistry, start_http_server

from route_monitor.probe.engine import ProbeEngine, settle_heap
from route_monitor.probe.metrics import ProbeMetrics
from route_monitor.probe.tls.contexts import TLSContexts
from route_monitor.spec.monitor import MonitorSpec, ProbeSettings, UrlTarget
from route_monitor.targets.resolve import ResolvedTarget


def monitors(urls: list[str], interval_s: float) -> list[tuple[MonitorSpec, ResolvedTarget]]:
    interval_ms = int(interval_s * 1000)
    settings = ProbeSettings(interval_ms=interval_ms, timeout_ms=min(10_000, interval_ms * 9 // 10))
    return [(MonitorSpec(namespace="bench", name=f"t{i:05d}", target=UrlTarget(url), probe=settings),
             ResolvedTarget(url=url, kind="url", name="")) for i, url in enumerate(urls)]


async def serve(urls: list[str], *, interval_s: float, ca: str | None, max_concurrency: int) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    registry = CollectorRegistry()
    metrics = ProbeMetrics(registry)
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    tls = TLSContexts.trusting(ca) if ca else None
    async with ProbeEngine(metrics=metrics, max_concurrency=max_concurrency, tls=tls) as engine:
        for spec, target in monitors(urls, interval_s):
            engine.set_monitor(spec, target)
        settle_heap()  # as standalone and the operator do once monitors are loaded
        print(json.dumps({"metrics_port": server.server_port}), flush=True)
        await stop.wait()
    server.shutdown()
    thread.join(5)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--urls", type=Path, required=True, help="file with one target URL per line")
    p.add_argument("--interval", type=float, default=30.0, help="probe interval in seconds (default 30)")
    p.add_argument("--ca", help="CA file to trust for https targets (default: the system store)")
    p.add_argument("--max-concurrency", type=int, default=500, help="probes in flight at most (default 500)")
    args = p.parse_args(argv)
    urls = [line.strip() for line in args.urls.read_text().splitlines() if line.strip()]
    asyncio.run(serve(urls, interval_s=args.interval, ca=args.ca, max_concurrency=args.max_concurrency))
    return 0


if __name__ == "__main__":
    sys.exit(main())
