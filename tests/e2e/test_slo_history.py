"""SLOs read back from a real Prometheus holding weeks of backfilled probe history (issue 13,
Contract 10). The history is written as counters (``promtool tsdb create-blocks-from
openmetrics``) and the generator's own tile, 1h-ratio and period rules are evaluated over it by
``promtool tsdb create-blocks-from rules``; every expected number below is computed by hand from
the increments described here.

Covers:

- ``route-monitor report --month 2026-10``: per monitor the objective, availability over exactly
  the month (outages just before and after it left out, a prober restart in it counted right),
  budget used, full-outage minutes, the alerts that fired in the month (not pending ones, not
  ones from September); a monitor with rules but no probes says so; namespace totals; the same
  month in Europe/Paris (745 hours); Markdown and CSV agree with JSON;
- the operator's SLO loop: exact ``status.slo`` values for a 30d and a 7d monitor (an outage
  outside the 7d period left out), ``BudgetExhausted`` True/False, the budget metric; Prometheus
  stopped -> reason ``SLOUnknown`` with the last values kept, started again -> values again;
  only monitors this replica owns are read (one that moves away is forgotten);
- the real operator against the control plane: the same values in ``status.slo`` (and no write
  while they stay the same), the
  ``Availability`` and ``Budget`` columns in the apiserver's Table output (what ``kubectl get
  rmon`` prints), and Prometheus going away and coming back.

"Live" monitors (``slo-live``) are steady or flat at "now", so the expected values do not depend on
when, within the test, Prometheus is asked: ``steady`` fails exactly 5 probes in 2000 all along
(0.25% for any window), ``flaky`` only has probes between 5 and 1 days ago (and an outage 10
days ago, outside its 7d period).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace
from prometheus_client import CollectorRegistry

from alert_rules import names, params, readback
from alert_rules.model import DAY_MS, MonitorSLO, Objective
from alert_rules.rules import rule_groups
from alert_rules.shared import shared_rule_groups
from route_monitor.operator.slo_loop import SloLoop
from route_monitor.slo.promapi import PrometheusAPI, PromSettings
from route_monitor.slo.state import fields
from tests.support.cluster import ADMIN_TOKEN, Cluster
from tests.support.history import Counter, Gauge, HistoryPrometheus, RuleBackfill, backfilled
from tests.support.operator import Target, admin_client, condition, get, running_operator, wait_monitor
from tests.support.resources import RouteMonitor

pytestmark = pytest.mark.prometheus

STEP = 300
H, D = 3600, 86400
OCT = int(dt.datetime(2026, 10, 1, tzinfo=dt.UTC).timestamp())
NOV = int(dt.datetime(2026, 11, 1, tzinfo=dt.UTC).timestamp())
REPORT_FROM, REPORT_TO = OCT - 2 * D, NOV + D
NOW = int(time.time())
BASE = NOW // STEP * STEP
# the live history reaches into the future: "now" stays inside it however late in a long test
# session this module runs (up to 6 hours after collection)
LIVE_FROM, LIVE_TO = BASE - 11 * D, BASE + 6 * H
LIVE = "slo-live"


def within(t: int, start: int, minutes: int) -> bool:
    return start <= t < start + minutes * 60


# --- report history (5-minute samples; both ends of the month are sample times) -------------
def checkout(t: int) -> tuple[int, int]:
    """20 probes per sample; 30-minute outages on Oct 10 (in the month), Sep 30 and Nov 1 (not)."""
    outages = (OCT + 9 * D + 12 * H, OCT - D + 12 * H, NOV + 6 * H)
    return (0, 20) if any(within(t, o, 30) for o in outages) else (20, 0)


def cart(t: int) -> tuple[int, int]:
    """10 probes per sample, one of them failed at every full hour."""
    return (9, 1) if t % H == 0 else (10, 0)


def gateway(t: int) -> tuple[int, int]:
    """30 probes per sample; a 20-minute outage on Oct 15 at 08:00."""
    return (0, 30) if within(t, OCT + 14 * D + 8 * H, 20) else (30, 0)


EDGE_OUTAGE = OCT + 11 * D + 3 * H
EDGE_RESTART = OCT + 19 * D + 6 * H + 17


def offgrid(t: int) -> tuple[int, int]:
    """48 probes per sample, sampled at 17 s past every 5 minutes (a scrape offset: no sample on a
    day's edge, so ``increase()`` would stretch every day to its edges); a 72-minute outage on Oct
    12 at 03:00 fails exactly 720 probes (15 samples); the prober restarts on Oct 20 at 06:00:17."""
    return (0, 48) if within(t, EDGE_OUTAGE, 72) else (48, 0)


OFFGRID = Counter("edge", "offgrid", REPORT_FROM + 17, REPORT_TO, STEP, offgrid, resets=frozenset({EDGE_RESTART}))


def report_history() -> tuple[list[Counter], list[Gauge]]:
    counters = [OFFGRID, Counter("shop", "checkout", REPORT_FROM, REPORT_TO, STEP, checkout,
                        resets=frozenset({OCT + 19 * D})),
                Counter("shop", "cart", REPORT_FROM, REPORT_TO, STEP, cart),
                Counter("pay", "gateway", REPORT_FROM, REPORT_TO, STEP, gateway)]
    objectives = [Gauge(names.SLO_OBJECTIVE_RECORD, {"namespace": ns, "monitor": m}, REPORT_FROM, REPORT_TO, STEP, v)
                  for ns, m, v in (("shop", "checkout", 0.999), ("shop", "cart", 0.99), ("pay", "gateway", 0.9995))]
    # legacy has rules and no prober: only its own rules' marker states its objective (every tile)
    objectives.append(Gauge(names.RULES_OBJECTIVE_RECORD, {"namespace": "shop", "monitor": "legacy"},
                            REPORT_FROM, REPORT_TO, 300, 0.995))

    def alert(monitor: str, ns: str, state: str, severity: str, start: int, minutes: int) -> Gauge:
        labels = {"alertname": names.ALERT_ERROR_BUDGET_BURN, "alertstate": state, "namespace": ns,
                  "monitor": monitor, "severity": severity, "long": "1h" if severity == "critical" else "1d",
                  "short": "5m" if severity == "critical" else "2h"}
        return Gauge("ALERTS", labels, start, start + minutes * 60, 60)

    alerts = [alert("gateway", "pay", "firing", "critical", OCT + 14 * D + 8 * H + 120, 18),
              alert("cart", "shop", "pending", "warning", OCT + 3 * D, 30),
              alert("checkout", "shop", "firing", "critical", OCT - D + 12 * H + 120, 20)]
    return counters, objectives + alerts


# --- live history (what the operator reads at "now") -----------------------------------------
def steady(t: int) -> tuple[int, int]:
    """5 failed in 2000 at every sample (created 3 days ago: its 30d period holds 3 days)."""
    return (1995, 5)


FLAKY_FROM, FLAKY_TO = BASE - 5 * D, BASE - D


def flaky(t: int) -> tuple[int, int]:
    """Probes only from 5 to 1 days ago, with a 30-minute outage 2 days ago; another 10 days ago
    (outside its 7d period); nothing since (flat counters: no 1h burn rate)."""
    if within(t, BASE - 10 * D, 30):
        return (0, 2000)
    if not FLAKY_FROM <= t <= FLAKY_TO:
        return (0, 0)
    return (0, 2000) if within(t, BASE - 2 * D, 30) else (2000, 0)


LIVE_MONITORS = {(LIVE, "steady"): Objective(Decimal("99"), 30 * DAY_MS),
                 (LIVE, "flaky"): Objective(Decimal("99.9"), 7 * DAY_MS)}
FLAKY_PROBES = ((FLAKY_TO - FLAKY_FROM) // STEP + 1) * 2000
FLAKY_FAILED = 6 * 2000
EXPECTED = {
    "steady": {"window": "30d", "availability": "99.7500", "budgetRemaining": "75.0", "burnRate1h": "0.25"},
    # 1 - 12000/2306000 = 0.99479619...; 1 - 0.00520381/0.001 = -4.2038...
    "flaky": {"window": "7d", "availability": "99.4796", "budgetRemaining": "-420.4"},
}


def backfill_rules() -> list[RuleBackfill]:
    """The generator's own rules over the live history: the 5-minute tiles all along; the 1h
    ratio and the period (only read at "now") over the last hours."""
    tiles = {names.probes_increase_record("5m"), names.errors_increase_record("5m")}
    recent = {names.error_ratio_record("1h"), names.SLO_PERIOD_RECORD}

    def pick(wanted: set[str]) -> list[dict[str, Any]]:
        groups = []
        monitors = [g for (ns, name), objective in LIVE_MONITORS.items() for g in rule_groups(MonitorSLO(ns, name, objective))]
        for g in [*shared_rule_groups(), *monitors]:
                rules = [r for r in g["rules"] if r.get("record") in wanted]
                if rules:
                    groups.append({**{k: v for k, v in g.items() if k != "rules"}, "rules": rules})
        return groups

    return [RuleBackfill(pick(tiles), LIVE_FROM + 60, LIVE_TO), RuleBackfill(pick(recent), BASE - 3 * H + 60, LIVE_TO)]


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HistoryPrometheus]:
    counters, gauges = report_history()
    counters += [Counter(LIVE, "steady", BASE - 3 * D, LIVE_TO, STEP, steady),
                 Counter(LIVE, "flaky", LIVE_FROM, LIVE_TO, STEP, flaky)]
    # the objectives as the probers export them, which the shared rules record the period from
    gauges += [Gauge(metric, {"namespace": ns, "monitor": name}, BASE - 3 * H, LIVE_TO, STEP, value)
               for (ns, name), objective in LIVE_MONITORS.items()
               for metric, value in params.values(objective, 30_000)]
    with backfilled(tmp_path_factory.mktemp("history"), counters=counters, gauges=gauges,
                    rules=backfill_rules()) as p:
        live = p.query(f'count by (monitor) ({names.probes_increase_record("5m")}{{namespace="{LIVE}"}})')
        assert len(live) == len(LIVE_MONITORS), (
            f"the backfilled tiles of {LIVE} are not served at 'now' ({live}); blocks "
            f"{sorted(b.name for b in p.data.iterdir())}; log: {(p.workdir / 'prometheus.log').read_text()[-3000:]}")
        yield p


def test_flaky_expectation_is_what_the_increments_say() -> None:
    c = Counter(LIVE, "flaky", LIVE_FROM, LIVE_TO, STEP, flaky)
    assert c.counted(BASE - 7 * D, BASE) == (FLAKY_PROBES, FLAKY_FAILED) == (2_306_000, 12_000)


# --- the report ----------------------------------------------------------------------------------
def report(prom: HistoryPrometheus, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).parent / "route-monitor"), "report", "--prometheus-url", prom.url,
                           *args], capture_output=True, text=True, timeout=120)


def by_monitor(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for ns in doc["namespaces"]:
        out[(ns["namespace"], "")] = ns["total"]
        out.update({(ns["namespace"], m["monitor"]): m for m in ns["monitors"]})
    return out


def hand(total: int, failed: int, objective: str, hours: int) -> dict[str, Any]:
    ratio = failed / total
    return {"availability": round(1 - ratio, 8), "budgetUsed": round(ratio / (1 - float(objective)), 8),
            "fullOutageMinutes": round(ratio * hours * 60, 8), "probes": total, "failed": failed}


def assert_matches(row: dict[str, Any], want: dict[str, Any]) -> None:
    for key in ("availability", "budgetUsed"):  # percent to 4 decimals
        assert round(row[key] * 100, 4) == round(want[key] * 100, 4), (key, row, want)
    assert round(row["fullOutageMinutes"], 4) == round(want["fullOutageMinutes"], 4), row
    assert (row["probes"], row["failed"]) == (want["probes"], want["failed"]), row


def test_report_for_a_past_month_matches_the_numbers_by_hand(prom: HistoryPrometheus) -> None:
    result = report(prom, "--month", "2026-10", "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["range"] == {"start": "2026-10-01T00:00:00+00:00", "end": "2026-11-01T00:00:00+00:00",
                            "timezone": "UTC", "seconds": 31 * D, "clipped": False}
    rows = by_monitor(doc)
    samples = 31 * 24 * 12
    # checkout: 20 per sample, one 30-minute outage (6 samples) in October; restarted on Oct 20
    assert_matches(rows[("shop", "checkout")], hand(samples * 20, 120, "0.999", 744))
    assert rows[("shop", "checkout")]["fullOutageMinutes"] == pytest.approx(30.0, abs=1e-6)
    # cart: 10 per sample, 1 failed at each of the 744 full hours
    assert_matches(rows[("shop", "cart")], hand(samples * 10, 744, "0.99", 744))
    assert_matches(rows[("pay", "gateway")], hand(samples * 30, 120, "0.9995", 744))
    assert rows[("shop", "legacy")]["noData"] is True and rows[("shop", "legacy")]["availability"] is None
    assert rows[("shop", "legacy")]["objective"] == "99.5"
    assert [rows[k]["objective"] for k in (("shop", "checkout"), ("shop", "cart"), ("pay", "gateway"))] == \
        ["99.9", "99", "99.95"]
    # alerts: the gateway's page fired in October; cart's ticket was only pending; checkout's page was in September
    assert rows[("pay", "gateway")]["alertsFired"] == [f"{names.ALERT_ERROR_BUDGET_BURN} critical 1h/5m"]
    assert rows[("shop", "cart")]["alertsFired"] == [] and rows[("shop", "checkout")]["alertsFired"] == []
    # the shop total: all its probes; budget weighed by each monitor's own budget
    shop = rows[("shop", "")]
    assert round(shop["availability"] * 100, 4) == round((1 - 864 / (samples * 30)) * 100, 4)
    assert round(shop["budgetUsed"] * 100, 4) == round(864 / (samples * 20 * 0.001 + samples * 10 * 0.01) * 100, 4)


def test_report_counts_are_exact_off_the_days_edges(prom: HistoryPrometheus) -> None:
    """Samples never on a day's edge, a day with 720 failures, a restart: the counts are exactly
    the samples' (``increase()`` a day at a time read 722.5 failures: each day stretched to its edges)."""
    total, failed = OFFGRID.counted(OCT, NOV)
    assert (total, failed) == (31 * 288 * 48, 720)
    result = report(prom, "--month", "2026-10", "--format", "json", "--namespace", "edge")
    assert result.returncode == 0, result.stderr
    row = by_monitor(json.loads(result.stdout))[("edge", "offgrid")]
    assert (row["probes"], row["failed"]) == (total, failed), row
    assert row["availability"] == round(1 - failed / total, 8)
    # a range from inside the outage to inside the day of the restart: both edges off the samples
    start, end = EDGE_OUTAGE + 30 * 60, EDGE_RESTART + 5 * 3600 + 29
    part = report(prom, "--from", iso(start), "--to", iso(end), "--format", "json", "--namespace", "edge")
    assert part.returncode == 0, part.stderr
    row = by_monitor(json.loads(part.stdout))[("edge", "offgrid")]
    assert (row["probes"], row["failed"]) == OFFGRID.counted(start, end), row


def iso(t: int) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat()


def test_status_readback_counts_are_exact(prom: HistoryPrometheus) -> None:
    """What ``status.slo`` divides: the 5-minute tiles (recorded at 60 s past the tile grid, an
    evaluation offset) summed over the 7d period, exactly the probes the samples counted."""
    week = 7 * D
    failed = {s["metric"]["monitor"]: float(s["value"][1]) for s in prom.query(readback.failed_over_period(week))}
    probes = {s["metric"]["monitor"]: float(s["value"][1]) for s in prom.query(readback.probes_over_period(week))}
    assert (probes["flaky"], failed["flaky"]) == (FLAKY_PROBES, FLAKY_FAILED)


def test_report_month_in_a_time_zone_follows_its_midnights(prom: HistoryPrometheus) -> None:
    result = report(prom, "--month", "2026-10", "--timezone", "Europe/Paris", "--format", "json",
                    "--namespace", "shop")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["range"]["start"], doc["range"]["end"]) == ("2026-10-01T00:00:00+02:00", "2026-11-01T00:00:00+01:00")
    assert doc["range"]["seconds"] == 745 * H
    rows = by_monitor(doc)
    assert {ns for ns, _ in rows} == {"shop"}
    assert_matches(rows[("shop", "checkout")], hand(745 * 12 * 20, 120, "0.999", 745))
    assert_matches(rows[("shop", "cart")], hand(745 * 12 * 10, 745, "0.99", 745))


def test_report_markdown_and_csv_say_the_same(prom: HistoryPrometheus) -> None:
    md = report(prom, "--month", "2026-10")
    assert md.returncode == 0, md.stderr
    assert "# SLO report: 2026-10-01T00:00:00Z to 2026-11-01T00:00:00Z (UTC)" in md.stdout
    line = next(x for x in md.stdout.splitlines() if "| checkout |" in x)
    assert "| 99.9 | 99.9328 | 67.20 | 30.00 | 178560 | 120 |" in line, line
    legacy = next(x for x in md.stdout.splitlines() if "| legacy |" in x)
    assert "no probe results in this range" in legacy
    csv_out = report(prom, "--month", "2026-10", "--format", "csv", "-n", "pay")
    assert csv_out.returncode == 0, csv_out.stderr
    lines = csv_out.stdout.splitlines()
    assert lines[0].startswith("range_start,range_end,namespace,monitor,objective_percent,availability_percent")
    assert "pay,gateway,99.95,99.9552,89.61,20.00,267840,120" in lines[1]


def test_report_range_with_no_data_says_so(prom: HistoryPrometheus) -> None:
    result = report(prom, "--from", "2020-01-01", "--to", "2020-01-31")
    assert result.returncode == 0, result.stderr
    assert "No monitor had probe results or rules in this range." in result.stdout


# --- the operator's loop, in process -----------------------------------------------------------
def test_slo_loop_reads_exact_values_and_survives_prometheus_going_away(prom: HistoryPrometheus) -> None:
    changed: list[tuple[str, str]] = []
    registry = CollectorRegistry()

    async def scenario() -> None:
        # a generous timeout: hundreds of backfilled 2h blocks make a cold 30d query slow on a busy machine
        async with PrometheusAPI(PromSettings(url=prom.url, timeout=60, attempts=2, backoff=0.1)) as api:
            loop = SloLoop(api=api, monitors=lambda: LIVE_MONITORS, on_change=changed.append, registry=registry)
            await loop.run_once()
            for name, want in EXPECTED.items():
                got = fields(loop.states[(LIVE, name)])
                assert {k: v for k, v in got.items() if k != "updated"} == want, loop.states[(LIVE, name)]
            assert loop.states[(LIVE, "flaky")].reason == "BudgetExhausted"
            assert loop.states[(LIVE, "steady")].reason == "BudgetRemaining"
            assert registry.get_sample_value(names.SLO_BUDGET_REMAINING_RATIO,
                                             {"namespace": LIVE, "monitor": "steady"}) == pytest.approx(0.75)
            assert sorted(changed) == [(LIVE, "flaky"), (LIVE, "steady")]
            changed.clear()
            await loop.run_once()
            assert changed == [], "nothing moved: nothing to write"
            prom.stop()
            try:
                await loop.run_once()
                steady_state = loop.states[(LIVE, "steady")]
                assert steady_state.reason == "SLOUnknown" and "unreachable" in steady_state.message
                assert fields(steady_state)["availability"] == "99.7500", "the last values stay"
                assert registry.get_sample_value(names.SLO_READ_ERRORS_TOTAL) == 1
            finally:
                prom.start()
            await loop.run_once()
            assert loop.states[(LIVE, "steady")].reason == "BudgetRemaining"
            assert fields(loop.states[(LIVE, "flaky")])["budgetRemaining"] == "-420.4"
            # another replica takes "flaky": this one forgets it (no status write, no metric series)
            owned = {(LIVE, "steady")}
            mine = SloLoop(api=api, monitors=lambda: LIVE_MONITORS, on_change=changed.append,
                           registry=CollectorRegistry(), owns=lambda key: key in owned)
            await mine.run_once()
            assert set(mine.states) == {(LIVE, "steady")}
            owned.clear()
            await mine.run_once()
            assert mine.states == {}

    asyncio.run(scenario())


# --- the real operator ----------------------------------------------------------------------------
def table(cluster: Cluster, name: str) -> dict[str, Any]:
    r = httpx.get(f"{cluster.server}/apis/{names.API_VERSION}/namespaces/{LIVE}/{names.PLURAL}/{name}", verify=False,
                  timeout=10, headers={"Authorization": f"Bearer {ADMIN_TOKEN}",
                                       "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    r.raise_for_status()
    doc: dict[str, Any] = r.json()
    return doc


def slo_of(m: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in ((m.get("status") or {}).get("slo") or {}).items() if k != "updated"}


@pytest.mark.cluster
def test_operator_writes_status_slo_and_budget_exhausted(cluster: Cluster, prom: HistoryPrometheus,
                                                         tmp_path: Path) -> None:
    kube: Client = admin_client(cluster)
    kube.create(Namespace(metadata=ObjectMeta(name=LIVE)))
    target = Target()
    try:
        for (_, name), objective in LIVE_MONITORS.items():
            kube.create(RouteMonitor.from_dict({
                "apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": name, "namespace": LIVE},
                "spec": {"target": {"url": f"http://{target.host}/"}, "probe": {"interval": "5s"},
                         "slo": {"availability": str(objective.availability),
                                 "period": f"{objective.period_ms // DAY_MS}d"}}}))
        with running_operator(cluster, tmp_path, "--allow-url-targets", "--namespace", LIVE, "--prometheus-url",
                              prom.url, "--prometheus-interval", "1", "--prometheus-timeout", "30") as op:
            for name, want in EXPECTED.items():
                m = wait_monitor(kube, LIVE, name, lambda m, w=want: slo_of(m) == w, f"status.slo of {name}", timeout=90)
                exhausted = condition(m, "BudgetExhausted")
                assert exhausted["status"] == ("True" if name == "flaky" else "False"), exhausted
                assert condition(m, "Ready")["status"] == "True", "the SLO does not change readiness"
            doc = table(cluster, "steady")
            columns = [c["name"] for c in doc["columnDefinitions"]]
            assert doc["rows"][0]["cells"][columns.index("Availability")] == "99.7500"
            assert doc["rows"][0]["cells"][columns.index("Budget")] == "75.0"
            assert table(cluster, "flaky")["rows"][0]["cells"][columns.index("Budget")] == "-420.4"
            assert op.sample(names.SLO_BUDGET_REMAINING_RATIO, namespace=LIVE, monitor="steady") == pytest.approx(0.75)
            lint = subprocess.run(["promtool", "check", "metrics"], input=op.metrics_text(), capture_output=True,
                                  text=True, timeout=30)
            assert lint.returncode == 0, lint.stdout + lint.stderr
            # once the first probe results are written, passes every second read the same values: no more writes
            for name in EXPECTED:
                wait_monitor(kube, LIVE, name, lambda m: condition(m, "Probing").get("reason") == "Probing"
                             and (m.get("status") or {}).get("lastProbe"), "first probe results written")
            time.sleep(1)
            writes = op.sample(names.KUBE_REQUESTS_TOTAL, verb="patch", resource="routemonitors/status")
            seen = [(get(kube, RouteMonitor, n, LIVE) or {}).get("status") for n in ("steady", "flaky")]
            time.sleep(4)
            after = [(get(kube, RouteMonitor, n, LIVE) or {}).get("status") for n in ("steady", "flaky")]
            assert op.sample(names.KUBE_REQUESTS_TOTAL, verb="patch", resource="routemonitors/status") == writes, \
                (seen, after)
            prom.stop()
            try:
                m = wait_monitor(kube, LIVE, "steady",
                                 lambda m: condition(m, "BudgetExhausted").get("reason") == "SLOUnknown",
                                 "SLOUnknown while Prometheus is away", timeout=30)
                assert condition(m, "BudgetExhausted")["status"] == "Unknown"
                assert slo_of(m) == EXPECTED["steady"], "the last values stay"
                assert condition(m, "Probing")["status"] == "True", "probing is not affected"
            finally:
                prom.start()
            wait_monitor(kube, LIVE, "steady",
                         lambda m: condition(m, "BudgetExhausted").get("reason") == "BudgetRemaining",
                         "values again once Prometheus is back", timeout=30)
            assert op.proc is not None and op.proc.poll() is None
    finally:
        target.close()
