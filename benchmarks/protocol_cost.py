"""CPU and memory of our non-HTTP probes in one process, for profiling and for memory per monitor.

    python -m benchmarks.protocol_cost --kind grpc-tls [--targets 1000] [--rate 100] [--probes 2500]
                                       [--profile FILE]     # cProfile (CPU time) of the measured probes
                                       [--iterations]       # also count event-loop iterations per probe

A :class:`~route_monitor.probe.engine.ProbeEngine` with one URL monitor per target (``tcp``:
``PING``/``+PONG``; ``grpc-tls``: the health check over TLS; ``dns``: an A query) probes the test
suite's real servers, run in a child process so that only the prober's CPU is counted. First
probes are spread over one interval (no start-up burst). Prints one JSON line: CPU ms per probe
(user + system; ``system_ms_per_probe``: the kernel's share), success ratio, RSS once the probes
are counted, and RSS after ``malloc_trim(0)`` (glibc hands freed heap back): the memory still in use. Memory per monitor is the difference of
that last figure between two ``--targets`` at the same ``--rate``; against ``tcp`` (which costs
what plain HTTP does: ``RESULTS-protocols.md``) it gives what a protocol adds per monitor.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import ctypes
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trustme
from prometheus_client import CollectorRegistry

from route_monitor.probe.engine import ProbeEngine, settle_heap
from route_monitor.probe.metrics import ProbeMetrics
from route_monitor.probe.result import ProbeResult
from route_monitor.probe.tls.contexts import TLSContexts
from route_monitor.spec.monitor import parse_routemonitor
from route_monitor.targets.resolve import ResolvedTarget

ROOT = Path(__file__).resolve().parents[1]
SERVERS = """
import json, sys
import trustme
from tests.support.dnsserver import DNSServer
from tests.support.protocolservers import PONG, GRPCHealth, LineServer
kind, cert, key = sys.argv[1:4]
if kind == "tcp":
    servers = [LineServer(PONG) for _ in range(4)]
elif kind == "grpc-tls":
    ca = trustme.CA.from_pem(open(cert, "rb").read(), open(key, "rb").read())
    servers = [GRPCHealth(ca) for _ in range(4)]
    for s in servers:
        s.set("", True)
else:
    servers = [DNSServer({"shop.example": "10.96.4.2"}, port=0)]
print(json.dumps([s.port for s in servers]), flush=True)
sys.stdin.read()
"""
PROBES: dict[str, tuple[str, dict[str, Any]]] = {
    "tcp": ("tcp", {"tcp": {"steps": [{"send": "PING\n"}, {"expect": "^\\+PONG"}]}}),
    "grpc-tls": ("grpcs", {"grpc": {"tls": True}}),
    "dns": ("dns", {"dns": {"name": "shop.example"}}),
}


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _count_selects(loop: asyncio.AbstractEventLoop, seen: dict[str, float]) -> None:
    """Count the loop's iterations (each one polls its selector once; asyncio's own attribute)."""
    selector = loop._selector  # type: ignore[attr-defined]
    select = selector.select

    def counted(timeout: float | None = None) -> Any:
        seen["selects"] += 1
        return select(timeout)

    selector.select = counted


async def run(kind: str, ports: list[int], targets: int, rate: float, probes: int,
              profile: cProfile.Profile | None, iterations: bool = False) -> dict[str, Any]:
    scheme, probe = PROBES[kind]
    interval_ms = round(1000 * targets / rate)
    done = asyncio.Event()
    seen: dict[str, float] = {"n": 0, "ok": 0, "selects": 0}
    if iterations:
        _count_selects(asyncio.get_running_loop(), seen)
    warm = max(200, targets // 5)

    def on_result(r: ProbeResult) -> None:
        seen["n"] += 1
        if warm < seen["n"] <= warm + probes:
            seen["ok"] += r.success
        if seen["n"] == warm:
            seen["cpu0"] = time.process_time()
            seen["sys0"] = os.times().system
            seen["selects0"] = seen["selects"]
            if profile is not None:
                profile.enable()
        if seen["n"] == warm + probes:
            if profile is not None:
                profile.disable()
            seen["cpu1"] = time.process_time()
            seen["sys1"] = os.times().system
            seen["selects1"] = seen["selects"]
            done.set()

    engine = ProbeEngine(metrics=ProbeMetrics(CollectorRegistry()), on_result=on_result,
                         tls=TLSContexts() if kind == "grpc-tls" else None, first_probe_within=interval_ms / 1000)
    async with engine:
        for i in range(targets):
            url = f"{scheme}://127.0.0.1:{ports[i % len(ports)]}"
            spec = parse_routemonitor({
                "apiVersion": "routemonitor.io/v1alpha1", "kind": "RouteMonitor",
                "metadata": {"name": f"t{i:05d}", "namespace": "bench"},
                "spec": {"target": {"url": url}, "slo": {"availability": "99"},
                         "probe": {"interval": f"{interval_ms}ms", "timeout": f"{min(5000, interval_ms // 2)}ms",
                                   **probe}}})
            engine.set_monitor(spec, ResolvedTarget(url=url, kind="url", name=""))
        settle_heap()
        await done.wait()
        rss = _rss_mb()
        gc.collect()
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        rss_in_use = _rss_mb()
    return {"kind": kind, "targets": targets, "rate": rate, "probes": probes, "ok_ratio": seen["ok"] / probes,
            "cpu_ms_per_probe": round(1000 * (seen["cpu1"] - seen["cpu0"]) / probes, 4),
            "system_ms_per_probe": round(1000 * (seen["sys1"] - seen["sys0"]) / probes, 4),
            "rss_mb": round(rss, 2), "rss_in_use_mb": round(rss_in_use, 2),
            **({"loop_iterations_per_probe": round((seen["selects1"] - seen["selects0"]) / probes, 2)}
               if iterations else {})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=sorted(PROBES), required=True)
    ap.add_argument("--targets", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=100.0, help="probes per second (default 100)")
    ap.add_argument("--probes", type=int, default=2500, help="probes measured after the warm-up")
    ap.add_argument("--profile", type=Path, help="write cProfile stats (CPU time) of the measured probes here")
    ap.add_argument("--iterations", action="store_true", help="also count event-loop iterations per probe")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="protocol-cost-") as tmp:
        ca = trustme.CA()
        cert, key = Path(tmp) / "ca.pem", Path(tmp) / "ca.key"
        ca.cert_pem.write_to_path(str(cert))
        ca.private_key_pem.write_to_path(str(key))
        os.environ["SSL_CERT_FILE"] = str(cert)  # the probes' verify context trusts the test CA
        servers = subprocess.Popen([sys.executable, "-c", SERVERS, args.kind, str(cert), str(key)], cwd=ROOT,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                   env=dict(os.environ, PYTHONPATH=str(ROOT)))
        try:
            assert servers.stdout is not None and servers.stdin is not None
            ports = json.loads(servers.stdout.readline())
            profile = cProfile.Profile(time.process_time) if args.profile else None
            print(json.dumps(asyncio.run(run(args.kind, ports, args.targets, args.rate, args.probes, profile,
                                              args.iterations))))
            if profile is not None:
                profile.dump_stats(str(args.profile))
        finally:
            if servers.stdin is not None:
                servers.stdin.close()
            servers.wait(10)


if __name__ == "__main__":
    main()
