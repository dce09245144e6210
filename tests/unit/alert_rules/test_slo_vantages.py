"""Uptime under the quorum and reachability of a monitor probed from three locations, read back from
a real Prometheus (Contract 12): the operator's ``status.slo`` and ``route-monitor report``.

Three hours of history for ``zoned`` (``vantages: 3``, quorum 2, objective 99% over 30d), every
location probing 10 times a minute: ``a`` fails 5 of them, ``b`` 1, ``c`` none. Per window the
locations' error ratios are 0.5, 0.1 and 0; under the quorum (the 2nd largest) the monitor's ratio
is 0.1, and over every probe of every location (reachability) 6 / 30 = 0.2. The history is written
as counters with their ``location`` (``promtool tsdb create-blocks-from openmetrics``) and the
generator's own rules (``route-monitor rules``) are evaluated over it by ``promtool tsdb
create-blocks-from rules``: the tiles, the per-location and reachability 1h ratios first, then
the 1h ratio under the quorum, which reads the per-location records. The reachability tiles
start an hour after the other tiles, as after an upgrade from rules that had none.

- ``status.slo``: availability 90% over the period and ``uptime1h`` 90% (under the quorum),
  ``reachability1h`` 80%, and ``reachability`` 80% over the period: every location's failures over
  the probes of the same tiles only (over all the tiles of all probes it would read 86.7%);
  budget and burn rate from the quorum's ratio;
- ``report`` over the last two hours: availability 90% (the tiles under the quorum) with 3
  locations and reachability 80% (the exact counters of every location) in JSON, Markdown and CSV.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from alert_rules import names
from alert_rules.model import DAY_MS, Objective
from route_monitor.operator.slo_loop import SloLoop
from route_monitor.slo.promapi import PrometheusAPI, PromSettings
from route_monitor.slo.state import fields
from tests.support.history import Counter, Gauge, HistoryPrometheus, RuleBackfill, backfilled

pytestmark = pytest.mark.prometheus

NS, MONITOR = "slo-vantages", "zoned"
OBJECTIVE = Objective(Decimal("99"), 30 * DAY_MS)
STEP = 60
REPORT_S = 2 * 3600
REACH_LATE_S = 3600
"""The reachability tiles begin this long after the others."""
FAILS = {"a": 5, "b": 1, "c": 0}
"""Failed probes of the 10 per minute, by location."""


@dataclass(frozen=True)
class Span:
    """The history's times, taken when the module's first test runs (not at collection: in a long
    session that can be more than Prometheus' 5-minute lookback before the status reads "now").
    The history goes on an hour past "now": read a few minutes later (a loaded machine), the period's
    tiles would otherwise end before "now", and a tile-stepped sum takes the last one twice."""

    now: int

    @property
    def start(self) -> int:
        return self.now - 3 * 3600

    @property
    def end(self) -> int:
        """The last sample, an hour after "now" (Prometheus reads none of it before its time)."""
        return self.now + 3600

    @property
    def report_end(self) -> int:
        """The report's range ends on a tile boundary at or before "now", so it holds whole tiles."""
        return self.now // 300 * 300


def counters(span: Span) -> list[Counter]:
    start, end = span.start, span.end
    return [Counter(NS, MONITOR, start, end, STEP, lambda _, bad=bad: (10 - bad, bad), location=where)
            for where, bad in FAILS.items()]


def generated(folder: Path) -> list[dict[str, Any]]:
    """The rule file ``route-monitor rules`` prints for ``zoned`` (whatever groups it is split into)."""
    manifest = folder / "zoned.yaml"
    manifest.write_text(yaml.safe_dump({
        "apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": MONITOR, "namespace": NS},
        "spec": {"target": {"url": "http://zoned.example/"}, "probe": {"interval": "6s", "vantages": 3, "quorum": 2},
                 "slo": {"availability": str(OBJECTIVE.availability)}}}))
    done = subprocess.run([str(Path(sys.executable).parent / "route-monitor"), "rules", str(manifest), "--format",
                           "prometheus"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    groups: list[dict[str, Any]] = yaml.safe_load(done.stdout)["groups"]
    return groups


def pick(groups: list[dict[str, Any]], wanted: set[str]) -> list[dict[str, Any]]:
    """``groups`` keeping only the ``wanted`` records."""
    out = []
    for g in groups:
        rules = [r for r in g["rules"] if r.get("record") in wanted]
        if rules:
            out.append({**{k: v for k, v in g.items() if k != "rules"}, "rules": rules})
    return out


@pytest.fixture(scope="module")
def span() -> Span:
    return Span(now=int(time.time()) // STEP * STEP)


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory, span: Span) -> Iterator[HistoryPrometheus]:
    start, end = span.start, span.end
    from_counters = {names.probes_increase_record("5m"), names.errors_increase_record("5m"),
                     names.location_error_ratio_record("1h"), names.reachability_record("1h")}
    labels = {"namespace": NS, "monitor": MONITOR}  # the constants the generator records, as gauges
    # and the quorum marker, which keeps the shared groups' rules of the same records off this monitor
    constants = [Gauge(names.SLO_PERIOD_RECORD, labels, start, end, STEP, OBJECTIVE.period_ms / 1000),
                 Gauge(names.SLO_OBJECTIVE_RECORD, labels, start, end, STEP, float(OBJECTIVE.availability) / 100),
                 Gauge(names.QUORUM_RECORD, labels, start, end, STEP, 2)]
    folder = tmp_path_factory.mktemp("vantages-history")
    groups = generated(folder)
    reach_tiles = pick(groups, {names.reachability_errors_increase_record("5m")})
    assert len(reach_tiles) == 1, "one reachability tile rule"
    with backfilled(folder / "prometheus", counters=counters(span), gauges=constants,
                    rules=[RuleBackfill(pick(groups, from_counters), start + STEP, end),
                           RuleBackfill(reach_tiles, start + STEP + REACH_LATE_S, end),
                           RuleBackfill(pick(groups, {names.error_ratio_record("1h")}), span.now - 2 * 3600, end)]) as p:
        yield p


def value(prom: HistoryPrometheus, record: str) -> float:
    [found] = prom.query(f'{record}{{namespace="{NS}",monitor="{MONITOR}"}}')
    return float(found["value"][1])


def last_tile(prom: HistoryPrometheus, record: str) -> float:
    """A tile's last value (recorded every 5 minutes at its backfilled group's own offset)."""
    [found] = prom.query(f'last_over_time({record}{{namespace="{NS}",monitor="{MONITOR}"}}[10m])')
    return float(found["value"][1])


def test_the_history_holds_the_records_the_status_reads(prom: HistoryPrometheus) -> None:
    assert value(prom, names.error_ratio_record("1h")) == pytest.approx(0.1)
    assert value(prom, names.reachability_record("1h")) == pytest.approx(0.2)
    assert last_tile(prom, names.probes_increase_record("5m")) == pytest.approx(30 * 5)
    assert last_tile(prom, names.errors_increase_record("5m")) == pytest.approx(3 * 5), "under the quorum: 0.1"
    assert last_tile(prom, names.reachability_errors_increase_record("5m")) == pytest.approx(6 * 5), "a 5, b 1, c 0"


def test_status_slo_shows_uptime_under_the_quorum_and_reachability(prom: HistoryPrometheus) -> None:
    async def one_pass() -> dict[str, Any]:
        async with PrometheusAPI(PromSettings(url=prom.url, timeout=30)) as api:
            loop = SloLoop(api=api, monitors=lambda: {(NS, MONITOR): OBJECTIVE}, on_change=lambda _: None,
                           registry=CollectorRegistry())
            await loop.run_once()
            status = loop.states[(NS, MONITOR)]
            assert status.reason == "BudgetExhausted", status
            assert "reachability 80.0000% over 30d from every location; last hour: " \
                   "uptime 90.0000% under the quorum, reachability 80.0000% from every location" in status.message
            return fields(status)

    got = asyncio.run(one_pass())
    got.pop("updated")
    assert got == {"window": "30d", "availability": "90.0000", "reachability": "80.0000", "budgetRemaining": "-900.0",
                   "burnRate1h": "10.0", "uptime1h": "90.0000", "reachability1h": "80.0000"}


def report(prom: HistoryPrometheus, span: Span, fmt: str) -> str:
    report_end = span.report_end

    def iso(t: int) -> str:
        return dt.datetime.fromtimestamp(t, dt.UTC).isoformat()

    done = subprocess.run([str(Path(sys.executable).parent / "route-monitor"), "report", "--prometheus-url", prom.url,
                           "--from", iso(report_end - REPORT_S), "--to", iso(report_end), "--format", fmt],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_report_prints_uptime_under_the_quorum_and_reachability(prom: HistoryPrometheus, span: Span) -> None:
    doc = json.loads(report(prom, span, "json"))
    [ns] = doc["namespaces"]
    [row] = ns["monitors"]
    assert row["monitor"] == MONITOR
    assert row["availability"] == pytest.approx(0.9)
    assert row["budgetUsed"] == pytest.approx(10.0)
    assert row["probes"] == 30 * REPORT_S // 60
    assert (row["locations"], row["reachability"]) == (3, pytest.approx(0.8))
    note = "3 locations, under the quorum; reachability 80.0000%"
    line = next(line for line in report(prom, span, "markdown").splitlines() if f"| {MONITOR} |" in line)
    assert "| 90.0000 |" in line and note in line, line
    assert note in report(prom, span, "csv")
