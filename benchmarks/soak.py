"""Soak: many monitors for a long time through ``standalone``; is anything growing?

    .venv/bin/python -m benchmarks.soak [--monitors 5000] [--interval 30s] [--minutes 30]
                                        [--sample-every 60] [--out benchmarks/results/soak.json]

Starts the local targets (``benchmarks.targets``, loopback only) and one ``route-monitor
standalone`` on a folder of ``--monitors`` RouteMonitors (URL targets, one per distinct URL),
then every ``--sample-every`` seconds reads the process's RSS and thread count
(``/proc/PID/status``), its open file descriptors (``/proc/PID/fd``) and, from its /metrics,
the schedule-lag p99 and event-loop-lag p99 of that minute and the probes done. The first
sample is taken after one interval (every monitor has started). At the end it prints a table
and each series' slope (least squares, per minute) and writes the JSON to ``--out``.

asyncio's task count is not visible from outside the process; the engine keeps one task per
monitor (plus a few), so the thread count and fds stand in for "no unbounded growth".
The operator path of the issue's soak is not covered by this script yet.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from benchmarks import measure
from benchmarks.targets import target_urls


def manifests(urls: list[str], interval: str) -> str:
    return "".join(
        f"---\napiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {{name: soak-{i:05d}, "
        f"namespace: soak}}\nspec:\n  target: {{url: '{url}'}}\n  probe: {{interval: {interval}, timeout: 5s, "
        f"warmup: 0s}}\n  slo: {{availability: '99.9'}}\n" for i, url in enumerate(urls))


def proc_counts(pid: int) -> tuple[int, int]:
    threads = 0
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
    return threads, len(os.listdir(f"/proc/{pid}/fd"))


def slope(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return None if den == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--monitors", type=int, default=5000)
    ap.add_argument("--interval", default="30s")
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--sample-every", type=float, default=60.0)
    ap.add_argument("--out", default="benchmarks/results/soak.json")
    args = ap.parse_args(argv)
    interval_s = float(args.interval.rstrip("s"))
    work = Path(tempfile.mkdtemp(prefix="route-monitor-soak-"))
    targets, ready = measure.start(["python", "-m", "benchmarks.targets", "--ports", "16"], ready_line=True,
                                   log_path=str(work / "targets.log"))
    assert ready is not None
    folder = work / "manifests"
    folder.mkdir()
    (folder / "soak.yaml").write_text(manifests(target_urls(ready, args.monitors), args.interval))
    port = measure.free_port()
    proc, _ = measure.start([".venv/bin/route-monitor", "standalone", str(folder), "--metrics-address",
                             f"127.0.0.1:{port}", "--max-concurrency", "500"], log_path=str(work / "standalone.log"))
    rows: list[dict[str, float | None]] = []
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        measure.wait_http(url, timeout=120)
        t0 = time.monotonic()
        time.sleep(interval_s)  # every monitor has started
        before = measure.scrape(url)
        end = t0 + args.minutes * 60
        while time.monotonic() + args.sample_every <= end + 1:
            time.sleep(args.sample_every)
            after = measure.scrape(url)
            threads, fds = proc_counts(proc.pid)
            rows.append({
                "minute": round((time.monotonic() - t0) / 60, 2),
                "rss_mib": round(measure.sample(proc.pid).rss_bytes / 2**20, 1),
                "open_fds": fds, "threads": threads,
                "probes": measure.total(after, "route_monitor_probes_total") - measure.total(
                    before, "route_monitor_probes_total"),
                "schedule_lag_p99_ms": _ms(measure.quantile(0.99, measure.bucket_delta(
                    before, after, "route_monitor_probe_schedule_lag_seconds"))),
                "loop_lag_p99_ms": _ms(measure.quantile(0.99, measure.bucket_delta(
                    before, after, "route_monitor_event_loop_lag_seconds"))),
            })
            print(json.dumps(rows[-1]), flush=True)
            before = after
    finally:
        measure.stop(proc)
        measure.stop(targets)
    xs = [float(r["minute"] or 0) for r in rows]
    slopes = {k: slope(xs, [float(r[k] or 0) for r in rows]) for k in ("rss_mib", "open_fds", "threads")}
    result = {"monitors": args.monitors, "interval": args.interval, "minutes": args.minutes,
              "samples": rows, "slope_per_minute": slopes, "cpus": os.cpu_count(),
              "loadavg_at_end": os.getloadavg()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({"slope_per_minute": slopes}))
    return 0


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


if __name__ == "__main__":
    raise SystemExit(main())
