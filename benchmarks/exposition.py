"""Cost of one /metrics page: bytes and CPU time of ``ProbeMetrics.exposition()`` for N monitors.

    python benchmarks/exposition.py [--monitors 5000] [--repeat 7]

Each monitor has recorded one successful probe (status 200, phase timings where the checkout has
them), so every per-monitor series is present, as in a running operator. Prints one JSON line:
monitors, bytes, lines and the median seconds of ``repeat`` renderings. Run it on two checkouts
(``PYTHONPATH=/path/to/other/checkout``) to compare.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time

from prometheus_client import CollectorRegistry

from route_monitor.probe.metrics import ProbeMetrics, TargetInfo
from route_monitor.probe.result import ProbeResult


def build(monitors: int) -> ProbeMetrics:
    metrics = ProbeMetrics(CollectorRegistry())
    has_phases = any(f.name == "phases" for f in dataclasses.fields(ProbeResult))
    for i in range(monitors):
        key = (f"ns{i % 50}", f"monitor-{i}")
        series = metrics.add(key, TargetInfo(f"https://m{i}.example/health", "route", f"monitor-{i}"), 0.5)
        result = ProbeResult(key, "https://x/", 0.0, True, None, 0.123, 200, "HTTP 200", 1.9e9)
        if has_phases:
            result = dataclasses.replace(result, phases=(0.001, 0.002, 0.01, 0.05, 0.001))
        series.record(result)
    return metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--monitors", type=int, default=5000, help="monitors on the page (default 5000)")
    parser.add_argument("--repeat", type=int, default=7, help="renderings timed (default 7)")
    args = parser.parse_args()
    metrics = build(args.monitors)
    page = metrics.exposition()
    times = []
    for _ in range(args.repeat):
        t0 = time.process_time()
        metrics.exposition()
        times.append(time.process_time() - t0)
    print(json.dumps({"monitors": args.monitors, "bytes": len(page), "lines": page.count(b"\n"),
                      "median_cpu_seconds": round(statistics.median(times), 4)}))


if __name__ == "__main__":
    main()
