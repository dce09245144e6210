"""``route-monitor demo``: local targets, the real engine, rules, a live view. No cluster, no network.

Starts four loopback targets (healthy; flaky with a small error rate; slow; HTTPS with a
self-signed certificate that is untrusted and expires in 10 days), writes RouteMonitor
manifests for them, and runs them through the same path as ``standalone`` (files -> resolved
targets -> engine -> ``/metrics`` and rule files). Prints where everything is and how to point
a Prometheus at it, then redraws a live table until Ctrl-C (or ``--duration``). Colours only
on a terminal and without ``NO_COLOR``; the files stay (and the last line says where) unless
``--clean``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
import tempfile
import textwrap
from collections.abc import Mapping
from pathlib import Path

from prometheus_client import CollectorRegistry

from route_monitor.cli import cliargs, demo_protocols
from route_monitor.cli import demo_targets as dt
from route_monitor.cli.liveview import CLEAR, Tracker, render
from route_monitor.files.fileplan import plan
from route_monitor.files.rulefiles import write_rules
from route_monitor.probe.engine import ProbeEngine
from route_monitor.probe.httpserver import MetricsServer
from route_monitor.probe.metrics import ProbeMetrics
from route_monitor.waits import wait_event

MONITORS = """\
apiVersion: routemonitor.io/v1alpha1
kind: RouteMonitor
metadata: {{name: {name}, namespace: demo}}
spec:
  target: {{url: "{url}"}}
  probe: {{interval: 1s, warmup: 0s{probe}}}  # the demo targets are up from the start: count every result
  slo: {slo}
"""


def add_arguments(de: argparse.ArgumentParser) -> None:
    cliargs.metrics_address_flag(de, "127.0.0.1:8080", serves="/metrics is served, or a free port when busy")
    de.add_argument("--duration", type=cliargs.seconds, default=0.0, metavar="DURATION",
                    help="stop after this long, e.g. 5s or 2m (default: until Ctrl-C; a bare number is seconds)")
    de.add_argument("--clean", action="store_true",
                    help="delete the demo's files (manifests, rules, prometheus.yml) when it stops "
                         "(default: keep them and say where)")


async def start_targets(folder: Path) -> tuple[list[asyncio.Server], list[tuple[str, str, str]]]:
    """The demo's targets: (name, url, SLO as YAML flow mapping) each."""
    certfile, keyfile = dt.self_signed(folder, "localhost", days=10)
    healthy = await dt.start_target(dt.healthy())
    flaky = await dt.start_target(dt.flaky(0.05))
    slow = await dt.start_target(dt.slow(0.15, jitter=0.5))
    tls = await dt.start_target(dt.healthy(), tls=dt.server_context(certfile, keyfile))
    grpc, redis = await demo_protocols.start_grpc_health(), await demo_protocols.start_redis_like()
    monitors = [
        ("healthy", f"http://127.0.0.1:{dt.port_of(healthy)}/", '{availability: "99.9"}'),
        ("flaky", f"http://127.0.0.1:{dt.port_of(flaky)}/", '{availability: "99.5"}'),
        ("slow", f"http://127.0.0.1:{dt.port_of(slow)}/",
         '{availability: "99.9", latency: {threshold: 500ms, objective: "95"}}'),
        ("untrusted-tls", f"https://localhost:{dt.port_of(tls)}/", '{availability: "99.9"}'),
        ("grpc-health", f"grpc://127.0.0.1:{dt.port_of(grpc)}", '{availability: "99.9"}'),
        ("redis-ping", f"tcp://127.0.0.1:{dt.port_of(redis)}", '{availability: "99.9"}'),
    ]
    return [healthy, flaky, slow, tls, grpc, redis], monitors


PROBES = {"grpc-health": ", grpc: {}",
          "redis-ping": ', tcp: {steps: [{send: "PING\\r\\n"}, {expect: "^\\\\+PONG"}]}'}
"""The probe settings of the targets that are not HTTP."""


def prometheus_config(metrics: MetricsServer, rules: Path) -> str:
    return textwrap.dedent(f"""\
        global: {{scrape_interval: 15s, evaluation_interval: 15s}}
        rule_files: ["{rules}/*.rules.yml"]
        scrape_configs:
          - job_name: route-monitor
            static_configs: [{{targets: ["{metrics.url.split('/')[2]}"]}}]
        """)


def intro(metrics: MetricsServer, folder: Path) -> str:
    return textwrap.dedent(f"""\
        route-monitor demo: six local targets probed by the real engine (Ctrl-C to stop)
          metrics:    {metrics.url}
          rules:      {folder / 'rules'}/*.rules.yml  (plain Prometheus rule files)
          manifests:  {folder / 'monitors.yaml'}  (try: route-monitor standalone {folder / 'monitors.yaml'})
          Prometheus: prometheus --config.file={folder / 'prometheus.yml'}
                      (scrapes {metrics.url} and loads the rules; or add the job and rule_files to yours)
        """)


def _serve(metrics: ProbeMetrics, registry: CollectorRegistry, address: tuple[str, int]) -> tuple[MetricsServer, str]:
    server = MetricsServer(registry, *address, render=metrics.exposition)
    try:
        server.start()
        return server, ""
    except OSError as e:
        server = MetricsServer(registry, address[0], 0, render=metrics.exposition)
        server.start()
        return server, f"note: {address[0]}:{address[1]} is busy ({e.strerror}); serving on port {server.port}\n"


async def demo(address: tuple[str, int], duration: float, *, tty: bool, color: bool | None = None,
               clean: bool = False) -> int:
    """``color``: colours in the live view (default: on a terminal); ``clean``: delete the
    files when stopping."""
    color = tty if color is None else color
    folder = Path(tempfile.mkdtemp(prefix="route-monitor-demo-"))
    servers, monitors = await start_targets(folder)
    manifests = folder / "monitors.yaml"
    manifests.write_text("---\n".join(MONITORS.format(name=n, url=u, slo=s, probe=PROBES.get(n, ""))
                                      for n, u, s in monitors))
    found = plan([manifests])
    for p in found.problems:
        print(p, file=sys.stderr)
    tracker = Tracker((p.spec, p.target.url) for p in found.monitors.values())
    registry = CollectorRegistry()
    metrics = ProbeMetrics(registry)
    engine = ProbeEngine(metrics=metrics, on_result=tracker)
    server, note = _serve(metrics, registry, address)
    write_rules(folder / "rules", [p.spec.slo() for p in found.monitors.values()])
    (folder / "prometheus.yml").write_text(prometheus_config(server, folder / "rules"))
    header = note + intro(server, folder)
    print(header, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if duration > 0:
        loop.call_later(duration, stop.set)
    try:
        async with engine:
            for m in found.monitors.values():
                engine.set_monitor(m.spec, m.target)
            every = 1.0 if tty else 10.0
            while not stop.is_set():
                if not await wait_event(stop, every):
                    if tty:
                        print(CLEAR + header + render(tracker, color=color), flush=True)
                    else:
                        print(render(tracker, color=False) + "\n", flush=True)
    finally:
        server.stop()
        for s in servers:
            s.close()
    print(render(tracker, color=color))
    if clean:
        shutil.rmtree(folder, ignore_errors=True)
        print(f"\nstopped; removed {folder}")
    else:
        print(f"\nstopped; the rules, manifests and prometheus.yml stay in {folder} (--clean removes them)")
    return 0


def wants_color(env: Mapping[str, str], tty: bool) -> bool:
    """Colours on a terminal, unless ``NO_COLOR`` is set to anything but "" (https://no-color.org)."""
    return tty and not env.get("NO_COLOR")


def run(args: argparse.Namespace) -> int:
    tty = sys.stdout.isatty()
    return asyncio.run(demo(args.metrics_address, args.duration, tty=tty, color=wants_color(os.environ, tty),
                            clean=getattr(args, "clean", False)))
