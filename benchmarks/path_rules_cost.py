"""Rule evaluation cost of the shared-path rules vs the per-monitor rules, in a real Prometheus.

    .venv/bin/python -m benchmarks.path_rules_cost --monitors 1000 [--paths 50] [--measure 120]

N monitors are exported by the real probe engine's metrics (``ProbeMetrics``, fed one result per
monitor every ``--interval`` seconds by a thread, 2% failures), each behind one of ``--paths``
router shards and ``dns:cluster`` (``route_monitor_monitor_path_info``). Prometheus (scrape and
evaluation every ``--interval``) loads every monitor's generated rules and the
``route-monitor-paths`` group. After ``--measure`` seconds it reads
``prometheus_rule_group_last_duration_seconds`` from Prometheus' own ``/metrics`` once per
interval: the path group's last duration against the sum over the monitors' fast groups (the ones
evaluated at the same cadence; the tiled groups run every 5 minutes) and over all their groups,
averaged over the samples of the measuring window.
The per-monitor ``probe_failing`` record and the alerts' path clauses are part of the monitors'
fast groups (they need the monitor's interval): the records' own evaluation time is read per rule
from ``/api/v1/rules`` (``failing_records_ms``); the clauses inside the alerts cannot be told apart
there (compare a run on the commit before them with ``git worktree`` to see their share).

``--rules-for M`` loads the rules of only every (N/M)-th monitor while all N export their series
(the path group reads every monitor's ``route_monitor_monitor_path_info``): the monitors' cost is
then measured on M groups and scaled by N/M (each monitor's groups select its own series only),
so 10,000 monitors are measured without 10,000 monitors' rules saturating a small machine.
Every figure is the median over the samples of the measuring window (a shared, loaded machine).
Prints a JSON line; ``--json FILE`` saves it.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import re
import statistics
import threading
import time
from decimal import Decimal
from pathlib import Path
from tempfile import TemporaryDirectory

import httpx
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from alert_rules import names, params, prometheus_rule_file
from alert_rules.model import MonitorSLO, Objective
from alert_rules.path_rules import path_rule_groups
from alert_rules.render import to_yaml, with_header
from alert_rules.shared import shared_rule_groups
from route_monitor.probe.httpserver import MetricsServer
from route_monitor.probe.metrics import MonitorSeries, ProbeMetrics, TargetInfo
from route_monitor.probe.result import FailureReason, ProbeResult
from tests.support.net import wait_for
from tests.support.prometheus import run_prometheus


def exporter(metrics: ProbeMetrics, registry: CollectorRegistry) -> MetricsServer:
    """The engine's own /metrics endpoint (its fast exposition) on a free loopback port."""
    server = MetricsServer(registry, "127.0.0.1", 0, render=metrics.exposition)
    server.start()
    return server


def feed(all_series: list[MonitorSeries], interval: float, stop: threading.Event) -> None:
    rng = random.Random(1)
    while not stop.wait(interval):
        now = time.time()
        for series in all_series:
            key = series.key
            ok = rng.random() >= 0.02
            series.record(ProbeResult(key, "https://x/", now, ok, None if ok else FailureReason.CONNECTION_REFUSED,
                                      0.05, 200 if ok else None, ""))


LAST_DURATION = "prometheus_rule_group_last_duration_seconds"
_GROUP = re.compile(r'rule_group="[^"]*;([^"]*)"')


def last_durations(prom_url: str) -> dict[str, float]:
    """Each rule group's last evaluation duration, from Prometheus' own /metrics."""
    text = httpx.get(f"{prom_url}/metrics", timeout=30).text
    out = {}
    for family in text_string_to_metric_families(text):
        if family.name == LAST_DURATION:
            for sample in family.samples:
                m = _GROUP.search(f'rule_group="{sample.labels["rule_group"]}"')
                if m:
                    out[m.group(1)] = sample.value
    return out


def failing_records(prom_url: str) -> float:
    """Seconds the monitors' ``probe_failing`` records took at their last evaluation, summed."""
    groups = httpx.get(f"{prom_url}/api/v1/rules", params={"type": "record"}, timeout=60).json()["data"]["groups"]
    return sum(float(r.get("evaluationTime") or 0) for g in groups for r in g["rules"]
               if r.get("name") == names.FAILING_RECORD)


def split(durations: dict[str, float]) -> tuple[float, float, float]:
    """(path group, monitors' fast groups, all monitor groups) in seconds."""
    path = durations.get("route-monitor-paths", 0.0)
    fast = sum(v for k, v in durations.items() if re.fullmatch(r"route-monitor/bench/m\d+", k))
    every = sum(v for k, v in durations.items() if k.startswith("route-monitor/bench/"))
    return path, fast, every


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--monitors", type=int, default=1000)
    p.add_argument("--paths", type=int, default=50)
    p.add_argument("--interval", type=int, default=15, help="probe, scrape and evaluation interval, seconds")
    p.add_argument("--measure", type=int, default=120, help="seconds of evaluations averaged")
    p.add_argument("--rules-for", type=int, help="load the rules of this many monitors only, scaled (default all)")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    step = max(1, args.monitors // (args.rules_for or args.monitors))
    registry = CollectorRegistry()
    metrics = ProbeMetrics(registry)
    keys = [("bench", f"m{i}") for i in range(args.monitors)]
    thresholds = params.values(Objective(Decimal("99.9")), args.interval * 1000)
    all_series = [metrics.add(key, TargetInfo(f"https://m{i}.apps.example.com/", "route", key[1],
                                              ("dns:cluster", f"router:shard-{i % args.paths}")), None, thresholds)
                  for i, key in enumerate(keys)]
    server = exporter(metrics, registry)
    stop = threading.Event()
    threading.Thread(target=feed, args=(all_series, args.interval, stop), daemon=True).start()
    interval = f"{args.interval}s"
    with TemporaryDirectory() as tmp:
        rules = Path(tmp) / "rules"
        rules.mkdir()
        ruled = keys[::step]
        scale = args.monitors / len(ruled)
        for key in ruled:
            slo = MonitorSLO(key[0], key[1], Objective(Decimal("99.9")), interval_ms=args.interval * 1000)
            (rules / f"{key[0]}_{key[1]}.rules.yml").write_text(prometheus_rule_file([slo], shared=False))
        shared = [*shared_rule_groups(), *path_rule_groups()]
        (rules / "route-monitor-paths.rules.yml").write_text(with_header(to_yaml({"groups": shared})))
        target = f"127.0.0.1:{server.port}"
        with run_prometheus(Path(tmp) / "prometheus", targets=[target], rules_dir=rules, interval=interval,
                            timeout=600) as prom:
            wait_for(lambda: bool(prom.query("path:route_monitor_path_monitors:count")), timeout=300, interval=2,
                     what="paths recorded")
            samples = []
            for _ in range(max(1, args.measure // args.interval)):
                time.sleep(args.interval)
                samples.append((*split(last_durations(prom.url)), failing_records(prom.url)))
            path_group, fast, every, failing = (statistics.median(s[i] for s in samples) for i in range(4))
            fast, every, failing = fast * scale, every * scale, failing * scale
    stop.set()
    server.stop()
    out = {"monitors": args.monitors, "monitors_with_rules": len(ruled), "paths": args.paths + 1,
           "interval_s": args.interval, "samples": len(samples),
           "path_group_ms": round(path_group * 1000, 3), "monitor_fast_groups_ms": round(fast * 1000, 3),
           "monitor_all_groups_ms": round(every * 1000, 3), "failing_records_ms": round(failing * 1000, 3),
           "path_vs_fast": round(path_group / fast, 4) if fast else None,
           "path_vs_all": round(path_group / every, 4) if every else None,
           "path_and_failing_vs_all": round((path_group + failing) / every, 4) if every else None,
           "machine": f"{platform.node()} {platform.machine()} python {platform.python_version()}",
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(json.dumps(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
