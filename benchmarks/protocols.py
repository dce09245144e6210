"""CPU per probe of our engine against blackbox_exporter's ``tcp`` (query_response), ``grpc``
(TLS) and ``dns`` modules: 1,000 targets each at the same rate, the two sides one after the
other in the same invocation, against the same local servers (the test suite's real servers:
a line server answering ``PING`` with ``+PONG``, grpcio's health servicer over TLS, a dnslib
name server). The servers run in this process: only the two probers' CPU is measured.

    python -m benchmarks.protocols [--only tcp,grpc-tls,dns] [--interval 10] [--warmup 10] [--measure 30]
    python -m benchmarks.protocols --only http           # the same for plain HTTP (memory reference)

Writes ``benchmarks/results/protocols-latest.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trustme

from benchmarks import blackbox, measure, ours
from tests.support.dnsserver import DNSServer
from tests.support.protocolservers import PONG, GRPCHealth, LineServer

HERE = Path(__file__).resolve().parent
SERVERS = 4
"""Server ports per protocol: fresh connections spread over several 4-tuple spaces."""


def _tcp(ca: trustme.CA) -> tuple[list[Any], list[int]]:
    servers = [LineServer(PONG) for _ in range(SERVERS)]
    return servers, [s.port for s in servers]


def _grpc(ca: trustme.CA) -> tuple[list[Any], list[int]]:
    servers = [GRPCHealth(ca) for _ in range(SERVERS)]
    for s in servers:
        s.set("", True)
    return servers, [s.port for s in servers]


def _dns(ca: trustme.CA) -> tuple[list[Any], list[int]]:
    server = DNSServer({"shop.example": "10.96.4.2"}, port=0)
    return [server], [server.port]


class _HTTPTargets:
    """:mod:`benchmarks.targets` in its own process: the HTTP monitors' memory, for comparison."""

    def __init__(self) -> None:
        self.proc, ready = measure.start([sys.executable, "-m", "benchmarks.targets", "--ports", str(SERVERS)],
                                         ready_line=True)
        assert ready is not None
        self.ports = [int(p) for p in ready["http"]]  # type: ignore[attr-defined]

    def close(self) -> None:
        measure.stop(self.proc)


def _http(ca: trustme.CA) -> tuple[list[Any], list[int]]:
    server = _HTTPTargets()
    return [server], server.ports


# name: (servers, our URL scheme, our spec.probe fields, exporter module body)
PLAN: dict[str, tuple[Callable[[trustme.CA], tuple[list[Any], list[int]]], str, str, str]] = {
    "tcp": (_tcp, "tcp", "tcp: {steps: [{send: \"PING\\n\"}, {expect: \"^\\\\+PONG\"}]}",
            "prober: tcp\n    tcp:\n      preferred_ip_protocol: ip4\n      ip_protocol_fallback: false\n"
            "      query_response:\n        - send: \"PING\"\n        - expect: \"^\\\\+PONG\"\n"),
    "grpc-tls": (_grpc, "grpcs", "grpc: {tls: true}",
                 "prober: grpc\n    grpc:\n      tls: true\n      preferred_ip_protocol: ip4\n"
                 "      ip_protocol_fallback: false\n      tls_config:\n        ca_file: {ca}\n"),
    "dns": (_dns, "dns", "dns: {name: shop.example}",
            "prober: dns\n    dns:\n      query_name: shop.example\n      query_type: A\n"
            "      transport_protocol: udp\n      preferred_ip_protocol: ip4\n      ip_protocol_fallback: false\n"),
    "http": (_http, "http", "", "prober: http\n    http:\n      preferred_ip_protocol: ip4\n"
             "      ip_protocol_fallback: false\n"),
}
"""``http``: plain HTTP, the reference for memory per monitor (not in the default run)."""


async def one(name: str, n: int, interval: float, warmup: float, measure_s: float, work: Path,
              ca: trustme.CA, ca_file: str) -> list[dict[str, Any]]:
    make, scheme, probe, module = PLAN[name]
    servers, ports = make(ca)
    try:
        ours_targets = [f"{scheme}://127.0.0.1:{ports[i % len(ports)]}" for i in range(n)]
        their_targets = [f"127.0.0.1:{ports[i % len(ports)]}" for i in range(n)]
        config = (f"modules:\n  bench:\n    timeout: {min(10.0, interval * 0.8):g}s\n    "
                  + module.replace("{ca}", ca_file))
        rows = [await ours.run(targets=ours_targets, interval=interval, warmup=warmup, measure_s=measure_s,
                               workdir=work / name / "ours", ca_file=ca_file, probe=probe),
                await blackbox.run(targets=their_targets, interval=interval, warmup=warmup, measure_s=measure_s,
                                   workdir=work / name / "blackbox", module="bench", config_text=config)]
    finally:
        for s in servers:
            s.close()
    for row in rows:
        row["scenario"] = name
    return rows


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="tcp,grpc-tls,dns")
    ap.add_argument("--targets", type=int, default=1000)
    ap.add_argument("--interval", type=float, default=10.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--measure", type=float, default=30.0)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "protocols-latest.json")
    args = ap.parse_args()
    load_before = os.getloadavg()
    ca = trustme.CA()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-protocols-") as tmp:
        work = Path(tmp)
        ca_file = str(work / "ca.pem")
        ca.cert_pem.write_to_path(ca_file)
        for name in args.only.split(","):
            rows += await one(name, args.targets, args.interval, args.warmup, args.measure, work, ca, ca_file)
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "loadavg_before": load_before,
           "loadavg_after": os.getloadavg(),
           "openssl": ssl.OPENSSL_VERSION, "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    for name in args.only.split(","):
        mine, theirs = (r for r in rows if r["scenario"] == name)
        ratio = (mine["cpu_ms_per_probe"] / theirs["cpu_ms_per_probe"]
                 if mine["cpu_ms_per_probe"] and theirs["cpu_ms_per_probe"] else None)
        print(f"{name}: ours {mine['cpu_ms_per_probe']} ms/probe (ok {mine['success_ratio']:.3f}, "
              f"rss {mine['rss_mb']:.0f} MB), exporter {theirs['cpu_ms_per_probe']} ms/probe "
              f"(ok {theirs['success_ratio']:.3f}); ratio {ratio}")


if __name__ == "__main__":
    asyncio.run(main())
