"""One incident per outage in time (``alert_rules/holdoff.py``), under Debian's real promtool.

Covers, on synthetic counters:

- an outage that paged and recovered opens no second incident: a new 95% monitor fails four
  probes right after warm-up; the 1h/5m page fires and resolves a minute after recovery, and
  the 6h/30m pair, summed from 5-minute tiles, only holds the outage two minutes later (its
  windows are over the threshold then: shown), when no page fires any more. It stays quiet;
  the same rules without the hold-off page again then (the scenario can fail);
- the slow tier keeps an incident: after a 90-minute outage the 1h/5m page resolves within
  minutes of recovery while the 6h/30m page, firing since the outage, goes on until its 30m
  window is clear, never interrupted.

The same in a real Prometheus, where the 6h/30m pair lags by a tile more (its group runs at an
offset), is what ``alert_rules/holdoff.py`` describes; these scenarios pin the rule's logic.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from alert_rules import prometheus_rule_file, rules
from alert_rules.fixtures import eval_order
from alert_rules.model import MonitorSLO, Objective
from tests.support import engine_params, promtool
from tests.support.promtool import Job

pytestmark = pytest.mark.prometheus
SEL = 'namespace="shop",monitor="web"'
BURN = "RouteMonitorErrorBudgetBurn"


def counters(outcomes: str) -> list[dict[str, str]]:
    """'.' a successful probe, 'x' a failed one, '-' an excluded one (warm-up), every 30 s."""
    ok = bad = excluded = 0
    series: dict[str, list[int]] = {"success": [], "failure": [], "warmup": []}
    for c in outcomes:
        ok, bad, excluded = ok + (c == "."), bad + (c == "x"), excluded + (c == "-")
        series["success"].append(ok)
        series["failure"].append(bad)
        series["warmup"].append(excluded)
    out = [{"series": f'route_monitor_probes_total{{{SEL},instance="p0:8080",result="{r}"}}',
            "values": " ".join(map(str, series[r]))} for r in ("success", "failure")]
    out.append({"series": f'route_monitor_probes_excluded_total{{{SEL},instance="p0:8080",reason="warmup"}}',
                "values": " ".join(map(str, series["warmup"]))})
    return out


def alerts(**labels: str) -> str:
    extra = "".join(f',{k}="{v}"' for k, v in labels.items())
    return f'ALERTS{{alertname="{BURN}",alertstate="firing",{SEL}{extra}}}'


def count(expr: str, at: str, n: int | None = 1) -> dict[str, Any]:
    return {"expr": f"count({expr})", "eval_time": at, "exp_samples": [] if n is None else
            [{"labels": "{}", "value": n}]}


FAST, SLOW = {"long": "1h", "short": "5m"}, {"long": "6h", "short": "30m"}


def job(name: str, availability: str, outcomes: str, checks: list[dict[str, Any]]) -> Job:
    slo = MonitorSLO("shop", "web", Objective(Decimal(availability)), 30_000)
    return Job(name, prometheus_rule_file([slo]), {
        "rule_files": ["rules.yml"], "evaluation_interval": "1m", "group_eval_order": eval_order([slo]),
        "tests": [{"interval": "30s", "input_series": counters(outcomes) + engine_params.series(slo, len(outcomes)), "promql_expr_test": checks}]})


def recovered_outage() -> Job:
    # 10 min of warm-up, then 5 min of failures (10m to 15m) and successes: the 1h/5m page fires
    # (after its 1m for:) and resolves a couple of minutes after recovery, while the 6h/30m pair,
    # summed from 5-minute tiles, holds the outage for about ten minutes more: longer than its own
    # 5m for:, so without the hold-off it would page again for an outage that is over
    outcomes = "-" * 20 + "x" * 10 + "." * 100
    pair = (f"namespace_monitor:route_monitor_probe_errors:ratio_rate6h{{{SEL}}} > 0.3 and "
            f"namespace_monitor:route_monitor_probe_errors:ratio_rate30m{{{SEL}}} > 0.3")
    return job("recovered-outage", "95", outcomes, [
        count(alerts(**FAST), "13m"),                      # the page: one incident
        count(alerts(**FAST), "20m", None),                # resolved after recovery
        count(pair, "20m"),                                # the 6h/30m windows still hold the outage
        count(f"count_over_time({alerts(**SLOW)}[50m])", "65m", None),
        count(f"count_over_time({alerts(severity='critical')}[44m])", "65m", None),  # and page nobody
    ])


def long_outage() -> Job:
    outcomes = "." * 60 + "x" * 180 + "." * 90  # 30 min fine, 90 min down, 45 min fine
    return job("long-outage", "99.9", outcomes, [
        count(alerts(**FAST), "60m"), count(alerts(**SLOW), "60m"),
        count(alerts(**FAST), "130m", None),               # the fast page resolved after recovery
        count(f"count_over_time({alerts(**SLOW)}[70m]) == 71", "130m"),  # firing at every evaluation since 60m
        count(alerts(severity="critical"), "165m", None),
    ])


def test_a_recovered_outage_opens_one_incident_and_the_slow_tier_keeps_one(tmp_path: Path) -> None:
    results = promtool.run_many([recovered_outage(), long_outage()], tmp_path)
    for name, result in results.items():
        assert result.ok, f"{name}: {result.output}"


def test_without_the_hold_off_the_slow_tier_pages_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules.holdoff, "held_off", lambda *_: "absent(vector(1))")
    [result] = promtool.run_many([recovered_outage()], tmp_path).values()
    assert not result.ok and "6h" in result.output, result.output
