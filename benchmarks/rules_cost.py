"""What the generated rules cost Prometheus: N monitors' rules against none, same series, same run.

``--baseline DIR`` also measures the rules another checkout of route-monitor generates for the
same monitors (``git archive main alert_rules route_monitor benchmarks tests | tar -x -C DIR``), right
after this checkout's at each monitor count (new, then old, each run with its own control), so
the old/new ratios come from one sitting on the same machine.

Two Prometheus processes (Debian's) scrape one synthetic exporter every 30 s. The exporter is
the engine's own exposition (``ProbeMetrics``) fed synthetic results at each monitor's interval,
so the series are exactly the engine's. One Prometheus loads the rules ``route-monitor rules``
writes for those monitors (a realistic mix of objectives, periods, intervals and latency SLOs)
and evaluates them every ``--eval``; the other (the control) loads none. Measured over the same
window after a warm-up: each process's CPU (``/proc``), RSS, and the rule groups' own evaluation
time (``prometheus_rule_group_last_duration_seconds``, summed over groups).

Windows: a fresh Prometheus has no history, so the long windows (6h, 3d, 30d) hold only what
was scraped during the run: what is measured is the cost while the windows fill, a lower bound
of the cost with full windows (range reads over longer histories read more samples).

    python -m benchmarks.rules_cost --monitors 500,2000 --warmup 300 --measure 600 [--baseline DIR]
        [--keep shared,fast,long,period]

``--keep`` loads only some kinds of rule groups (the shared groups, each monitor's fast group, its
long-window group, its period group): what a part of the rules costs on its own, e.g. the shared
groups alone, the floor of any design that keeps per-monitor work out of the rules.

Prints one JSON object per monitor count and a Markdown table row.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import AbstractContextManager
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from alert_rules import params, shared
from alert_rules.model import Alerting, LatencyObjective, MonitorSLO, Objective
from benchmarks import measure
from route_monitor.files import rulefiles
from route_monitor.probe.httpserver import MetricsServer
from route_monitor.probe.metrics import ProbeMetrics, TargetInfo
from route_monitor.probe.result import FailureReason, ProbeResult
from tests.support.prometheus import Prometheus, run_prometheus

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
_BASELINE_WRITER = """
import importlib, sys
from pathlib import Path
from benchmarks.rules_cost import monitors
try:
    rulefiles = importlib.import_module("route_monitor.files.rulefiles")
except ImportError:  # a checkout from before the package layout
    rulefiles = importlib.import_module("route_monitor" + ".rulefiles")
rulefiles.write_rules(Path(sys.argv[1]), [slo for slo, _ in monitors(int(sys.argv[2]))])
"""
REASONS = (FailureReason.CONNECTION_REFUSED, FailureReason.TIMEOUT, FailureReason.HTTP_STATUS)


def monitors(n: int, seed: int = 1) -> list[tuple[MonitorSLO, float]]:
    """``n`` monitors, each with its probe interval: 99.9 % (half), 99.5, 99, 99.95; a 30-day
    period for 80 %, 7 days for the rest; 30 % with a latency SLO; 30 s intervals for 70 %,
    60 s for 20 %, 10 s for 10 %."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        availability = rng.choices(["99.9", "99.5", "99", "99.95"], [50, 25, 15, 10])[0]
        period = 30 if rng.random() < 0.8 else 7
        latency = LatencyObjective(threshold_ms=500, objective=Decimal("99")) if rng.random() < 0.3 else None
        interval = rng.choices([30.0, 60.0, 10.0], [70, 20, 10])[0]
        objective = Objective(availability=Decimal(availability), period_ms=period * 86_400_000, latency=latency)
        slo = MonitorSLO(namespace=f"team-{i % 50}", name=f"app-{i}", objective=objective, alerting=Alerting(),
                         interval_ms=int(interval * 1000))
        out.append((slo, interval))
    return out


class Exporter:
    """The engine's exposition of ``ms``' series, fed a synthetic result per monitor per interval
    (0.2 % failures, durations around 80 ms)."""

    def __init__(self, ms: list[tuple[MonitorSLO, float]]) -> None:
        registry = CollectorRegistry()
        self.metrics = ProbeMetrics(registry)
        self.series = [(self.metrics.add((slo.namespace, slo.name), TargetInfo(f"https://{slo.name}.example/",
                                                                              "route", slo.name),
                                         (slo.objective.latency.threshold_ms / 1000
                                          if slo.objective.latency else None),
                                         params.values(slo.objective, slo.interval_ms)), interval)
                       for slo, interval in ms]
        self._stop = threading.Event()
        self._rng = random.Random(7)
        self.server = MetricsServer(registry, "127.0.0.1", 0, render=self.metrics.exposition)
        self.server.start()
        self.port = self.server.port
        threading.Thread(target=self._drive, daemon=True).start()

    def _result(self, key: tuple[str, str]) -> ProbeResult:
        ok = self._rng.random() >= 0.002
        return ProbeResult(key, "", time.time(), ok, None if ok else self._rng.choice(REASONS),
                           self._rng.lognormvariate(-2.5, 0.4), 200 if ok else 503, "")

    def _drive(self) -> None:
        due = [(self._rng.uniform(0, interval), i) for i, (_, interval) in enumerate(self.series)]
        start = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic() - start
            for j, (at, i) in enumerate(due):
                if at <= now:
                    series, interval = self.series[i]
                    series.record(self._result(series.key))
                    due[j] = (at + interval, i)
            time.sleep(0.2)

    def close(self) -> None:
        self._stop.set()
        self.server.stop()


def prometheus(workdir: Path, exporter_port: int, rules: Path | None,
               eval_interval: str) -> AbstractContextManager[Prometheus]:
    """A Prometheus scraping the exporter every 30 s (up to 15 minutes to load thousands of rules
    on a loaded machine)."""
    return run_prometheus(workdir, targets=[f"127.0.0.1:{exporter_port}"], rules_dir=rules, interval="30s",
                          evaluation_interval=eval_interval, flags=["--storage.tsdb.retention.time=60d"], timeout=900)


def rule_stats(url: str) -> dict[str, float]:
    """The rule groups' counts and last evaluations, the head's series, and the live Go heap (half
    of ``go_memstats_next_gc_bytes``: the heap after the last collection, GOGC=100), steadier than
    RSS, which moves by the heap's garbage between collections."""
    samples = measure.scrape(f"{url}/metrics")
    return {"groups": sum(1 for (n, _) in samples if n == "prometheus_rule_group_last_duration_seconds"),
            "rules": measure.total(samples, "prometheus_rule_group_rules"),
            "last_duration_s": measure.total(samples, "prometheus_rule_group_last_duration_seconds"),
            "head_series": measure.total(samples, "prometheus_tsdb_head_series"),
            "live_heap": measure.total(samples, "go_memstats_next_gc_bytes") / 2,
            "missed": measure.total(samples, "prometheus_rule_group_iterations_missed_total"),
            "iterations": measure.total(samples, "prometheus_rule_group_iterations_total")}


def rule_breakdown(url: str, top: int = 12) -> list[dict[str, Any]]:
    """Where the evaluation time goes: each rule's last ``evaluationTime`` summed by its kind
    (the group's kind, shared or per monitor and its interval, and the record's name or the
    alert's name with its window labels), and per second of wall time (divided by the group's
    interval: what the kind costs), largest first, with its share of the total per second."""
    with urllib.request.urlopen(f"{url}/api/v1/rules", timeout=120) as resp:
        groups = json.load(resp)["data"]["groups"]
    kinds: dict[str, list[float]] = {}
    every: dict[str, float] = {}
    for g in groups:
        scope = "shared" if g["name"] in shared.GROUPS else "monitor"
        gkind = f"{scope}/{g['interval']:g}s"
        for r in g["rules"]:
            name = r["name"] if r["type"] == "recording" else \
                f"ALERT {r['name']}{'/' + r['labels']['long'] if 'long' in r.get('labels', {}) else ''}"
            kinds.setdefault(f"{gkind} {name}", []).append(float(r.get("evaluationTime", 0.0)))
            every[f"{gkind} {name}"] = float(g["interval"])
    rows = sorted(((k, len(v), sum(v), sum(v) / every[k]) for k, v in kinds.items()), key=lambda row: -row[3])
    total = sum(row[3] for row in rows) or 1.0
    return [{"kind": k, "rules": n, "seconds": round(s, 4), "ms_per_s": round(1000 * per_s, 2),
             "share": round(per_s / total, 3)} for k, n, s, per_s in rows[:top]]


GROUP_KINDS = ("shared", "fast", "long", "period")


def group_kind(name: str) -> str:
    """One of :data:`GROUP_KINDS` for a rule group's name."""
    if name in shared.GROUPS:
        return "shared"
    own = re.fullmatch(r"route-monitor/[^/]+/[^/]+(/long-windows|/period)?", name)
    if own is None:
        raise ValueError(f"unknown rule group {name!r}")
    return {None: "fast", "/long-windows": "long", "/period": "period"}[own.group(1)]


def keep_groups(rules: Path, keep: frozenset[str]) -> None:
    """Drop every group not of a kind in ``keep`` from the rule files in ``rules`` (a file left
    with no group is removed)."""
    for path in sorted(rules.glob("*.yml")):
        doc = yaml.safe_load(path.read_text())
        groups = [g for g in doc["groups"] if group_kind(g["name"]) in keep]
        if groups:
            path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
        else:
            path.unlink()


def write_rules(rules: Path, n: int, baseline: Path | None, keep: frozenset[str] = frozenset(GROUP_KINDS)) -> None:
    """This checkout's rule folder for ``n`` monitors (the shared groups in a file of their own,
    as ``standalone`` writes them), or the one ``baseline``'s generator writes; only the groups
    of the kinds in ``keep``."""
    if baseline is None:
        rulefiles.write_rules(rules, [slo for slo, _ in monitors(n)])
    else:
        subprocess.run([sys.executable, "-c", _BASELINE_WRITER, str(rules), str(n)], check=True, cwd=baseline,
                       env={**os.environ, "PYTHONPATH": str(baseline)})
    if keep != frozenset(GROUP_KINDS):
        keep_groups(rules, keep)


def run_one(n: int, *, warmup: float, measure_s: float, eval_interval: str, workdir: Path,
            baseline: Path | None = None, keep: frozenset[str] = frozenset(GROUP_KINDS)) -> dict[str, Any]:
    ms = monitors(n)
    variant = "new" if baseline is None else "old"
    rules = workdir / f"rules-{variant}-{n}"
    write_rules(rules, n, baseline, keep)
    subprocess.run([PROMTOOL, "check", "rules", *map(str, sorted(rules.glob("*.yml"))[:3])], check=True,
                   capture_output=True)
    exporter = Exporter(ms)
    try:
        with (prometheus(workdir / f"with-{variant}-{n}", exporter.port, rules, eval_interval) as with_rules,
              prometheus(workdir / f"control-{variant}-{n}", exporter.port, None, eval_interval) as control):
            time.sleep(warmup)
            a = {p: measure.sample(prom.pid) for p, prom in (("rules", with_rules), ("control", control))}
            time.sleep(measure_s)
            b = {p: measure.sample(prom.pid) for p, prom in (("rules", with_rules), ("control", control))}
            stats = rule_stats(with_rules.url)
            control_stats = rule_stats(control.url)
            breakdown = rule_breakdown(with_rules.url)
    finally:
        exporter.close()
    cores = {p: (b[p].cpu_seconds - a[p].cpu_seconds) / (b[p].at - a[p].at) for p in b}
    shutil.rmtree(workdir, ignore_errors=True)  # the next run's disk and page cache
    workdir.mkdir(parents=True, exist_ok=True)
    return {"variant": variant, "monitors": n, "eval_interval": eval_interval, "rules_loaded": stats["rules"],
            "groups_kept": ",".join(k for k in GROUP_KINDS if k in keep),
            "groups": stats["groups"], "group_eval_seconds_sum": round(stats["last_duration_s"], 4),
            "rules_head_series": stats["head_series"] - control_stats["head_series"],
            "iterations_missed_share": round(stats["missed"] / max(1.0, stats["iterations"]), 4),
            "rules_live_heap_mib": round((stats["live_heap"] - control_stats["live_heap"]) / 2**20, 1),
            "cores_with_rules": round(cores["rules"], 4), "cores_control": round(cores["control"], 4),
            "rules_cores": round(cores["rules"] - cores["control"], 4),
            "rss_with_rules_mib": round(b["rules"].rss_bytes / 2**20, 1),
            "rss_control_mib": round(b["control"].rss_bytes / 2**20, 1),
            "rules_rss_mib": round((b["rules"].rss_bytes - b["control"].rss_bytes) / 2**20, 1),
            "warmup_s": warmup, "measure_s": measure_s, "breakdown": breakdown}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--monitors", default="500", help="comma-separated monitor counts")
    parser.add_argument("--warmup", type=float, default=300.0, help="seconds before the measured window")
    parser.add_argument("--measure", type=float, default=600.0, help="seconds measured")
    parser.add_argument("--eval", default="30s", help="Prometheus' evaluation interval")
    parser.add_argument("--baseline", type=Path, help="another checkout: measure its rules too, after each of ours")
    parser.add_argument("--baseline-max", type=int, default=5000,
                        help="largest monitor count the baseline is measured at (its rules cost more)")
    parser.add_argument("--keep", default=",".join(GROUP_KINDS),
                        help=f"comma-separated kinds of rule groups to load, of {', '.join(GROUP_KINDS)} (default: all)")
    args = parser.parse_args()
    keep = frozenset(k.strip() for k in args.keep.split(","))
    if not keep or keep - set(GROUP_KINDS):
        parser.error(f"--keep: expected kinds of {', '.join(GROUP_KINDS)}, got {args.keep!r}")
    if not shutil.which(PROMETHEUS):
        raise SystemExit(f"{PROMETHEUS} not found (bash scripts/bootstrap.sh --system installs it)")
    with tempfile.TemporaryDirectory(prefix="rules-cost-") as tmp:
        for n in (int(x) for x in args.monitors.split(",")):
            for baseline in [None, *([args.baseline] if args.baseline and n <= args.baseline_max else [])]:
                row = run_one(n, warmup=args.warmup, measure_s=args.measure, eval_interval=args.eval,
                              workdir=Path(tmp), baseline=baseline, keep=keep)
                print(json.dumps(row), flush=True)
                print(f"| {row['variant']} | {n} | {row['rules_loaded']:.0f} | {row['groups']} | "
                      f"{row['rules_cores']:.3f} | {row['rules_rss_mib']:+.0f} MiB | "
                      f"{row['rules_live_heap_mib']:+.0f} MiB | {row['rules_head_series']:+.0f} | "
                      f"{row['group_eval_seconds_sum']:.3f} s |", flush=True)


if __name__ == "__main__":
    main()
