"""What probing from k locations costs: series, rule evaluation and probe CPU per monitor, k = 1 vs 3.

For each k, ``k`` real ``route-monitor standalone --location loc-i`` processes (one per location,
as k operator replicas in k zones would) probe the same N monitors (``vantages: k``, the default
quorum) every ``--interval`` against a local HTTP target; one Prometheus (Debian's) scrapes the k
processes and evaluates the rules ``route-monitor rules`` writes for those monitors. Measured over
the same window after a warm-up:

- series: ``route_monitor_*`` series in Prometheus' head, and the series the rules record, per monitor;
- rule evaluation: ``prometheus_rule_group_last_duration_seconds`` summed over the groups, sampled
  at every evaluation of the window and averaged, per monitor; the rules loaded per monitor;
- probe CPU: user + system CPU seconds of the k processes over the window, per monitor per
  location, and Prometheus' own CPU.

    python -m benchmarks.vantages_cost --monitors 200 --locations 1,3 --warmup 90 --measure 300

Prints one JSON object per k and a Markdown table row (``RESULTS-vantages.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from alert_rules import names
from alert_rules.model import MonitorSLO, Objective
from benchmarks import measure
from route_monitor.files.rulefiles import write_rules
from tests.support.prometheus import Prometheus, run_prometheus

PROMETHEUS = "/usr/bin/prometheus"


class Target:
    """A local HTTP target answering 200 to every path, on a thread of its own."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "3")
                self.end_headers()
                self.wfile.write(b"ok\n")

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def slos(n: int, k: int, interval_s: int) -> list[MonitorSLO]:
    return [MonitorSLO(namespace="bench", name=f"app-{i}", objective=Objective(Decimal("99.9")),
                       interval_ms=interval_s * 1000, vantages=k, quorum=k // 2 + 1) for i in range(n)]


def manifests(n: int, k: int, interval_s: int, port: int) -> str:
    return yaml.safe_dump_all([
        {"apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": f"app-{i}", "namespace": "bench"},
         "spec": {"target": {"url": f"http://127.0.0.1:{port}/app-{i}"}, "slo": {"availability": "99.9"},
                  "probe": {"interval": f"{interval_s}s", "timeout": f"{interval_s * 500}ms", "vantages": k}}}
        for i in range(n)])


def rule_seconds(prom: Prometheus) -> tuple[float, float]:
    """(sum of the groups' last evaluation durations, rules loaded) from Prometheus' own /metrics."""
    samples = measure.scrape(f"{prom.url}/metrics")
    return (measure.total(samples, "prometheus_rule_group_last_duration_seconds"),
            measure.total(samples, "prometheus_rule_group_rules"))


def count(prom: Prometheus, expr: str) -> float:
    result = prom.query(f"count({expr}) or vector(0)")
    return float(result[0]["value"][1]) if result else 0.0


def run_one(n: int, k: int, *, interval_s: int, warmup: float, measure_s: float, workdir: Path) -> dict[str, Any]:
    target = Target()
    folder = workdir / f"k{k}"
    (folder / "monitors").mkdir(parents=True)
    (folder / "monitors" / "bench.yaml").write_text(manifests(n, k, interval_s, target.port))
    rules = folder / "rules"
    write_rules(rules, slos(n, k, interval_s))
    procs, ports = [], []
    try:
        for i in range(k):
            port = measure.free_port()
            proc, _ = measure.start([sys.executable, "-m", "route_monitor.cli.main", "standalone",
                                     str(folder / "monitors"), "--metrics-address", f"127.0.0.1:{port}",
                                     "--location", f"loc-{i}"], log_path=str(folder / f"standalone-{i}.log"))
            procs.append(proc)
            ports.append(port)
        for port in ports:
            measure.wait_http(f"http://127.0.0.1:{port}/metrics", timeout=120)
        with run_prometheus(folder / "prometheus", targets=[f"127.0.0.1:{p}" for p in ports], rules_dir=rules,
                            interval=f"{interval_s}s", timeout=120) as prom:
            time.sleep(warmup)
            load_before = os.getloadavg()[0]
            a = [measure.sample(p.pid) for p in procs]
            pa = measure.sample(prom.pid)
            evaluations: list[float] = []
            end = time.monotonic() + measure_s
            while time.monotonic() < end:
                evaluations.append(rule_seconds(prom)[0])
                time.sleep(interval_s)
            b = [measure.sample(p.pid) for p in procs]
            pb = measure.sample(prom.pid)
            loaded = rule_seconds(prom)[1]
            probe_series = count(prom, '{__name__=~"route_monitor_.+", namespace="bench"}')
            recorded = count(prom, '{__name__=~"namespace_monitor.*:.+", namespace="bench"}')
            head = count(prom, '{namespace="bench"}')
    finally:
        for proc in procs:
            measure.stop(proc)
        target.close()
    window = b[0].at - a[0].at
    probe_cores = sum(y.cpu_seconds - x.cpu_seconds for x, y in zip(a, b, strict=True)) / window
    probes_per_s = n * k / interval_s
    eval_s = sum(evaluations) / len(evaluations)
    return {"monitors": n, "locations": k, "interval_s": interval_s,
            "series_per_monitor": round(probe_series / n, 2), "recorded_per_monitor": round(recorded / n, 2),
            "all_series_per_monitor": round(head / n, 2), "rules_per_monitor": round(loaded / n, 2),
            "rule_eval_ms_per_monitor": round(1000 * eval_s / n, 4),
            "probe_cores": round(probe_cores, 4), "probe_cpu_ms_per_probe": round(1000 * probe_cores / probes_per_s, 3),
            "prometheus_cores": round((pb.cpu_seconds - pa.cpu_seconds) / (pb.at - pa.at), 4),
            "loadavg_1m": [round(load_before, 1), round(os.getloadavg()[0], 1)],
            "warmup_s": warmup, "measure_s": measure_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--monitors", type=int, default=200)
    parser.add_argument("--locations", default="1,3", help="comma-separated k values")
    parser.add_argument("--interval", type=int, default=10, help="probe, scrape and evaluation interval (s)")
    parser.add_argument("--warmup", type=float, default=90.0)
    parser.add_argument("--measure", type=float, default=300.0)
    args = parser.parse_args()
    if not shutil.which(PROMETHEUS):
        raise SystemExit(f"{PROMETHEUS} not found (bash scripts/bootstrap.sh --system installs it)")
    print(json.dumps({"machine": f"{platform.node()} {os.cpu_count()} cores {platform.processor() or platform.machine()}",
                      "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}), flush=True)
    with tempfile.TemporaryDirectory(prefix="vantages-cost-") as tmp:
        for k in (int(x) for x in args.locations.split(",")):
            row = run_one(args.monitors, k, interval_s=args.interval, warmup=args.warmup, measure_s=args.measure,
                          workdir=Path(tmp))
            print(json.dumps(row), flush=True)
            print(f"| {k} | {row['series_per_monitor']} | {row['recorded_per_monitor']} | {row['rules_per_monitor']} | "
                  f"{row['rule_eval_ms_per_monitor']} | {row['probe_cores']} | {row['probe_cpu_ms_per_probe']} | "
                  f"{row['prometheus_cores']} | {row['loadavg_1m']} |", flush=True)


if __name__ == "__main__":
    main()
