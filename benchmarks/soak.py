"""Soak: many monitors for a long time through ``standalone`` or the operator; is anything growing?

    .venv/bin/python -m benchmarks.soak [--path standalone|operator] [--monitors 5000] [--interval 30s]
                                        [--minutes 30] [--sample-every 60] [--out FILE]

Starts the local targets (``benchmarks.targets``, 16 loopback ports) and then either one
``route-monitor standalone`` on a folder of ``--monitors`` RouteMonitors (URL targets, one per
distinct URL), or ``route-monitor operator`` on a real control plane with as many RouteMonitors
(``benchmarks/soak_operator.py``). Once every monitor has started (standalone: one interval after
/metrics answers; operator: every monitor ``ready``, then one interval) it takes one sample every
``--sample-every`` seconds for ``--minutes`` (``benchmarks/soak_sample.py``: RSS, threads, open
fds, asyncio tasks, probes, schedule-lag and event-loop-lag p99 of the minute, load average; for
the operator also its own API requests and the apiserver's writes in the minute), prints each
sample as a JSON line, then the slopes (least squares, per minute) of RSS, fds, threads and
tasks, and writes everything with the machine and date to ``--out``
(default ``benchmarks/results/soak-<path>.json``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alert_rules import durations
from benchmarks import measure
from benchmarks.soak_sample import Soaked, sample_run, slopes
from benchmarks.targets import target_urls


def probe_timeout(interval: str) -> str:
    """5 s, or half the interval when that is shorter (a timeout must be shorter than the interval)."""
    return f"{min(5000, int(durations.parse_seconds(interval) * 500))}ms"


def manifests(urls: list[str], interval: str) -> str:
    return "".join(
        f"---\napiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {{name: soak-{i:05d}, "
        f"namespace: soak}}\nspec:\n  target: {{url: '{url}'}}\n  probe: {{interval: {interval}, "
        f"timeout: {probe_timeout(interval)}, warmup: 0s}}\n  slo: {{availability: '99.9'}}\n"
        for i, url in enumerate(urls))


@contextmanager
def standalone_soak(urls: list[str], interval: str, work: Path) -> Iterator[Soaked]:
    folder = work / "manifests"
    folder.mkdir()
    (folder / "soak.yaml").write_text(manifests(urls, interval))
    port = measure.free_port()
    proc, _ = measure.start([".venv/bin/route-monitor", "standalone", str(folder), "--metrics-address",
                             f"127.0.0.1:{port}", "--max-concurrency", "500"], log_path=str(work / "standalone.log"))
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + 120
        while not _answers(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"standalone did not start (log: {work / 'standalone.log'})")
            time.sleep(0.2)
        yield Soaked(pid=proc.pid, metrics_url=url)
    finally:
        measure.stop(proc)


def _answers(url: str) -> bool:
    try:
        measure.wait_http(url, timeout=0)
    except OSError:
        return False
    return True


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"route-monitor-soak-{args.path}-"))
    targets, ready = measure.start([sys.executable, "-m", "benchmarks.targets", "--ports", "16"], ready_line=True,
                                   log_path=str(work / "targets.log"))
    assert ready is not None
    urls = target_urls(ready, args.monitors)
    started = dt.datetime.now(dt.UTC)
    try:
        if args.path == "operator":
            from benchmarks.soak_operator import operator_soak  # needs the control-plane binaries
            soak = operator_soak(urls, args.interval, work, create_first=args.create_first)
        else:
            soak = standalone_soak(urls, args.interval, work)
        with soak as soaked:
            time.sleep(durations.parse_seconds(args.interval))  # every monitor has started
            steady = dt.datetime.now(dt.UTC)
            rows = sample_run(soaked, round(args.minutes * 60 / args.sample_every), args.sample_every,
                              on_row=lambda r: print(json.dumps(r), flush=True))
    finally:
        measure.stop(targets)
    loads = [float(r["load1"] or 0) for r in rows]
    return {"path": args.path, "create_first": args.create_first, "monitors": args.monitors, "interval": args.interval, "minutes": args.minutes,
            "started": started.strftime("%Y-%m-%d %H:%M:%S UTC"), "steady": steady.strftime("%H:%M:%S UTC"),
            "ended": dt.datetime.now(dt.UTC).strftime("%H:%M:%S UTC"),
            "samples": rows, "slope_per_minute": slopes(rows),
            "load1": {"min": min(loads, default=None), "mean": round(sum(loads) / len(loads), 2) if loads else None,
                      "max": max(loads, default=None)},
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                        "nice": os.getpriority(os.PRIO_PROCESS, 0)}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--path", choices=("standalone", "operator"), default="standalone")
    ap.add_argument("--monitors", type=int, default=5000)
    ap.add_argument("--interval", default="30s")
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--sample-every", type=float, default=60.0)
    ap.add_argument("--create-first", action="store_true",
                    help="operator path: create the RouteMonitors before the operator starts (default: after)")
    ap.add_argument("--out", help="JSON result file (default benchmarks/results/soak-<path>.json)")
    args = ap.parse_args(argv)
    result = run(args)
    out = Path(args.out or f"benchmarks/results/soak-{args.path}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({"slope_per_minute": result["slope_per_minute"], "load1": result["load1"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
