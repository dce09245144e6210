"""Where the operator's memory per monitor goes (issue 16): a tracemalloc snapshot diff.

    .venv/bin/python -m benchmarks.memory_per_monitor [--routes 1000] [--frames 8] [--top 25]
                                                     [--out benchmarks/results/memory-per-monitor.json]

Starts the test control plane (``tests/support/cluster.py``), one loopback HTTP target and
``route-monitor operator`` as the RBAC-restricted user, as ``benchmarks.operator_bench`` does,
but the operator runs under ``tracemalloc`` (``--frames`` frames per allocation) and writes a
heap snapshot on ``SIGUSR1`` (after a full collection). Snapshots are taken with the operator
idle and once ``--routes`` annotated Routes are monitored and each has been probed (then a few
seconds more, so that status writes settle). The difference, per monitor, is printed:

- by component: each allocation still alive is charged to the innermost frame of its traceback
  in our code (the world, the probe engine, the reconciler...), else in kopf, the API client...;
- by line (``file:line`` of the allocation) and by whole traceback, the largest first.

RSS is reported too, but tracemalloc itself costs memory per allocation: for RSS use
``benchmarks.operator_bench`` (no tracing) or ``--frames 0`` here (no snapshots, RSS only).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

from benchmarks.memory_child import SIGNAL

COMPONENTS: tuple[tuple[str, str], ...] = (
    ("route_monitor/operator/world.py", "world"),
    ("route_monitor/probe/", "probe engine"),
    ("route_monitor/operator/reconcile.py", "reconciler"),
    ("route_monitor/operator/statuswriter.py", "reconciler"),
    ("route_monitor/operator/status.py", "reconciler"),
    ("route_monitor/operator/outputs/rulesync.py", "reconciler"),
    ("route_monitor/operator/supervisor.py", "supervisor"),
    ("route_monitor/operator/workqueue.py", "supervisor"),
    ("route_monitor/kube/rest.py", "API client"),
    ("route_monitor/kube/transport.py", "API client"),
    ("route_monitor/operator/", "operator, other"),
    ("route_monitor/kube/", "operator, other"),
    ("route_monitor/slo/", "operator, other"),
    ("route_monitor/", "parsed spec, resolve"),
    ("alert_rules/", "alert_rules"),
    ("/kopf/", "kopf"),
    ("/lightkube/", "API client"),
    ("/aiohttp/", "API client"),
    ("/httpx/", "API client"),
    ("/prometheus_client/", "prometheus_client"),
    ("/asyncio/", "asyncio"),
)


def take(pid: int, snapshots: Path, n: int, traced: bool) -> tuple[tracemalloc.Snapshot | None, dict[str, int]]:
    os.kill(pid, SIGNAL)
    path = snapshots / f"snap-{n}.done"
    deadline = time.monotonic() + 300
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no snapshot {path}")
        time.sleep(0.5)
    alloc: dict[str, int] = json.loads((snapshots / f"alloc-{n}.json").read_text()) if traced else \
        json.loads(path.read_text())
    if not traced:
        return None, alloc
    snap = tracemalloc.Snapshot.load(str(path))
    return snap.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__),
                               tracemalloc.Filter(False, "<frozen importlib._bootstrap>")]), alloc


def quiet(op: Any, seconds: float, limit: float = 300) -> None:
    """Wait until the operator has made no API request for ``seconds`` (the status writes of the
    first probe results are done, and the watch events they cause handled)."""
    from benchmarks.operator_bench import _own_counters

    deadline = time.monotonic() + limit
    last, since = -1.0, time.monotonic()
    while time.monotonic() < deadline:
        made = sum(s.value for s in _own_counters(op))
        if made != last:
            last, since = made, time.monotonic()
        elif time.monotonic() - since >= seconds:
            return
        time.sleep(1)


class PeakRss:
    """The highest RSS of ``pid`` seen while it runs (sampled every 0.2 s)."""

    def __init__(self, pid: int) -> None:
        from benchmarks.operator_bench import rss_mib

        self.peak = 0.0
        self.start = time.monotonic()
        self.timeline: list[tuple[float, float]] = []
        """(seconds since the creates began, RSS MiB), one a second."""
        self._stop = threading.Event()

        def sample() -> None:
            while not self._stop.wait(0.2):
                rss = rss_mib(pid)
                self.peak = max(self.peak, rss)
                at = round(time.monotonic() - self.start)
                if not self.timeline or self.timeline[-1][0] < at:
                    self.timeline.append((at, round(rss, 1)))

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak


def component(tb: tracemalloc.Traceback) -> str:
    for frame in reversed(tb):  # innermost first
        name = frame.filename.replace(os.sep, "/")
        for marker, label in COMPONENTS:
            if marker in name and (marker.startswith("/") or "/site-packages/" not in name):
                return label
    return "other: " + (tb[-1].filename.rsplit("/", 2)[-1] if len(tb) else "?")


def short(filename: str) -> str:
    name = filename.replace(os.sep, "/")
    for root in ("/site-packages/", "/lib/python3.11/"):
        if root in name:
            return name.split(root, 1)[1]
    return name.split("/route-monitor/", 1)[-1].split(str(Path.cwd()) + "/", 1)[-1]


def analyse(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, monitors: int, top: int) -> dict[str, Any]:
    kib = 1024 * monitors
    by_tb = after.compare_to(before, "traceback")
    parts: dict[str, float] = {}
    for stat in by_tb:
        parts[component(stat.traceback)] = parts.get(component(stat.traceback), 0) + stat.size_diff
    total = sum(s.size_diff for s in by_tb)
    lines = after.compare_to(before, "lineno")[:top]
    return {
        "heap_kib_per_monitor": round(total / kib, 2),
        "by_component_kib_per_monitor": {k: round(v / kib, 2) for k, v in sorted(parts.items(), key=lambda kv: -kv[1])
                                         if abs(v) / kib >= 0.05},
        "by_line": [{"where": f"{short(s.traceback[0].filename)}:{s.traceback[0].lineno}",
                     "kib_per_monitor": round(s.size_diff / kib, 2), "blocks_per_monitor": round(s.count_diff / monitors, 2)}
                    for s in lines],
        "by_traceback": [{"kib_per_monitor": round(s.size_diff / kib, 2),
                          "blocks_per_monitor": round(s.count_diff / monitors, 2),
                          "frames": [f"{short(f.filename)}:{f.lineno}" for f in reversed(s.traceback)]}
                         for s in by_tb[:top]],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.operator_bench import NS, FirstHits, RuleWatch, api, create_routes, rss_mib, wait_until
    from tests.support.cluster import start_cluster
    from tests.support.operator import Operator

    work = Path(tempfile.mkdtemp(prefix="rm-memory-bench-"))
    snapshots = work / "snapshots"
    snapshots.mkdir()
    cluster = start_cluster(work)
    target = FirstHits()

    class Traced(Operator):
        def spawn(self) -> None:
            env = {**os.environ, "KUBECONFIG": str(self.cluster.operator_kubeconfig)}
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "benchmarks.memory_child", str(snapshots), str(args.frames), "--",
                     "operator", "--metrics-port", str(self.metrics_port),
                     "--health-port", str(self.health_port)],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)

    op = Traced(cluster, work / "operator.log")
    result: dict[str, Any] = {"routes": args.routes, "interval": args.interval, "frames": args.frames}
    try:
        api(cluster, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": NS}}).raise_for_status()
        op.start(timeout=120)
        assert op.proc is not None
        rules = RuleWatch(cluster)
        time.sleep(args.settle)
        rss = {"idle": round(rss_mib(op.proc.pid), 1)}
        before, alloc_before = take(op.proc.pid, snapshots, 0, args.frames > 0)
        first = [f"r{i:05d}" for i in range(args.routes)]
        peak = PeakRss(op.proc.pid)
        create_routes(cluster, first, f"127.0.0.1:{target.port}", args.interval)
        phases = {"created": round(time.monotonic() - peak.start, 1)}
        taken = 1
        if args.mid is not None:  # what the burst holds while it is worked off
            time.sleep(args.mid)
            mid, _ = take(op.proc.pid, snapshots, taken, args.frames > 0)
            taken += 1
            if before is not None and mid is not None:
                result["mid_burst"] = analyse(before, mid, args.routes, args.top)
        wait_until(lambda: all(n in rules.first for n in first), 600, "all PrometheusRules")
        phases["rules"] = round(time.monotonic() - peak.start, 1)
        wait_until(lambda: all(f"/{n}" in target.first for n in first), 180, "all first probes")
        phases["probed"] = round(time.monotonic() - peak.start, 1)
        quiet(op, args.settle)
        phases["quiet"] = round(time.monotonic() - peak.start, 1)
        rss[str(args.routes)] = round(rss_mib(op.proc.pid), 1)
        rss["peak"] = round(peak.stop(), 1)
        result["rss_timeline"] = {"phases_seconds": phases, "mib_by_second": peak.timeline}
        result["rss_mib"] = rss
        result["rss_kib_per_monitor"] = round((rss[str(args.routes)] - rss["idle"]) * 1024 / args.routes, 1)
        after, alloc_after = take(op.proc.pid, snapshots, taken, args.frames > 0)
        result["allocators_kib_per_monitor"] = {k: round((alloc_after[k] - alloc_before[k]) / 1024 / args.routes, 2)
                                                for k in alloc_after if k in alloc_before}
        if before is not None and after is not None:
            result |= analyse(before, after, args.routes, args.top)
        result["probes_served"] = target.total
    finally:
        op.stop()
        cluster.stop()
    return result


def render(result: dict[str, Any]) -> str:
    out = [f"routes {result['routes']}, RSS {result['rss_mib']} MiB ({result['rss_kib_per_monitor']} KiB per monitor"
           f"{', tracemalloc on: inflated' if result['frames'] else ''})"]
    alloc = result["allocators_kib_per_monitor"]
    out.append("allocators, KiB per monitor: " + ", ".join(f"{k} {v}" for k, v in alloc.items() if "size" not in k))
    sizes = sorted(((v, k) for k, v in alloc.items() if "size" in k), reverse=True)[:8]
    out.append("  pymalloc free blocks by size class: " + ", ".join(f"{k.split(':')[0]} {v}" for v, k in sizes))
    if "heap_kib_per_monitor" in result:
        out.append(f"Python heap per monitor: {result['heap_kib_per_monitor']} KiB")
        out += [f"  {v:6.2f}  {k}" for k, v in result["by_component_kib_per_monitor"].items()]
        out.append("by line (KiB, blocks per monitor):")
        out += [f"  {x['kib_per_monitor']:6.2f} {x['blocks_per_monitor']:6.2f}  {x['where']}" for x in result["by_line"]]
        out.append("by traceback (innermost first):")
        for x in result["by_traceback"]:
            out.append(f"  {x['kib_per_monitor']:6.2f} {x['blocks_per_monitor']:6.2f}  " + " < ".join(x["frames"][:5]))
    if "mid_burst" in result:
        out.append(f"mid-burst heap over idle: {result['mid_burst']['heap_kib_per_monitor']} KiB per monitor")
        out += [f"  {v:6.2f}  {k}" for k, v in result["mid_burst"]["by_component_kib_per_monitor"].items()]
        out += [f"  {x['kib_per_monitor']:6.2f} {x['blocks_per_monitor']:6.2f}  {x['where']}"
                for x in result["mid_burst"]["by_line"][:15]]
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--routes", type=int, default=1000)
    p.add_argument("--interval", default="10s")
    p.add_argument("--frames", type=int, default=8, help="tracemalloc frames per allocation (0: RSS only)")
    p.add_argument("--settle", type=float, default=10.0,
                   help="seconds idle before the first snapshot; without API requests before the last")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--mid", type=float, help="also a snapshot this many seconds after the creates returned")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/memory-per-monitor.json"))
    args = p.parse_args()
    result = run(args)
    result["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                         "loadavg": os.getloadavg()}
    result["date"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(render(result))


if __name__ == "__main__":
    main()
