"""End to end with real processes: probes -> Prometheus -> generated rules -> Alertmanager -> PagerDuty stand-in.

The user story, in order on one stack (``tests/support/e2e.py``):

1. a target fails hard -> PagerDuty receives a ``trigger`` (severity critical, summary, dedup key,
   dashboard and runbook links); it recovers -> a ``resolve`` with the same dedup key;
2. a steady slow burn -> the ticket webhook receives it, PagerDuty never hears of that monitor;
3. every Grafana panel's query returns series from that Prometheus, and the variables resolve.

Timing: probes, scrapes and evaluations every second, and the long windows summed from 30-second
tiles (``standalone --tile 30s``, see ``alert_rules/tiles.py``): the same windows, thresholds and
alerts as production's 5-minute tiles, but the long-window group (``interval`` = the tile) holds a
first full tile one to two tiles after start instead of 5 to 10 minutes. The page comes from the
1h/5m pair about 45 s after the outage starts: its condition holds within seconds, then it waits
31 s (``for:``, the time a shared outage behind one of the monitor's paths would take to be
seen, ``alert_rules/path_rules.py``; the rules are told Prometheus evaluates every second). The
checkout monitor has six hours of clean tiles behind it (``backfill_clean_tiles``), as in
production, so the outage's ~45 failed probes stay far below the 6h/30m pair's 6% (about 0.2% of
six hours of probes): only the 1h/5m pair fires, and the incident resolves once the outage has
slid out of its 5m window, about 5 minutes after it started. The cart's ticket comes from the
long-window group's first evaluations, about a minute after start; step 3 waits for every
monitor's 3d ratio, so every recording rule exists.
Module: about 4 to 5 minutes (the resolve waits for the outage to leave the 1h/5m pair).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from alert_rules import names
from tests.support.e2e import MONITORS, Stack, for_several_vantages_only, run_stack
from tests.support.net import wait_for
from tests.support.sink import PAGERDUTY_PATH, TICKET_PATH

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(900)]
LONG_WINDOWS_WAIT = 240
"""Seconds: the long-window group first records a full tile one to two tiles (30s) after start, and its
windows read it at the next tile-aligned step: about a minute and a half, with ample margin."""
RESOLVE_WAIT = 480
"""Seconds from the trigger: the outage (about 45 s of failures) leaves the 5m window about 5
minutes after it started, some 4 minutes after the trigger, with ample margin."""
GRAFANA = Path(__file__).resolve().parents[2] / "grafana"
DASHBOARDS = ("slo-overview.json", "monitor-detail.json", "operator-health.json")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with run_stack(tmp_path_factory.mktemp("e2e")) as s:
        yield s


def of(monitor: str, action: str) -> Any:
    return lambda b: b["payload"]["component"] == monitor and b["event_action"] == action


def test_hard_failure_pages_and_recovery_resolves(stack: Stack) -> None:
    stack.checkout.down = True
    trigger = stack.paging.sink.wait_for(PAGERDUTY_PATH, of("checkout", "trigger"), timeout=90, what="trigger").body
    stack.checkout.down = False

    payload = trigger["payload"]
    assert payload["severity"] == "critical"
    assert payload["source"] == "shop/checkout"
    assert payload["summary"].startswith("shop/checkout") and "budget" in payload["summary"]
    assert payload["class"] == names.ALERT_ERROR_BUDGET_BURN
    assert re.fullmatch(r"[0-9a-f]{64}", trigger["dedup_key"])
    links = {link["text"]: link["href"] for link in trigger["links"]}
    assert links["Runbook"].startswith(names.DEFAULT_RUNBOOK_BASE)
    assert "/d/route-monitor-detail/" in links["Grafana dashboard"] and "var-monitor=checkout" in links["Grafana dashboard"]
    assert "1h/5m" in payload["custom_details"]["windows"]

    resolve = stack.paging.sink.wait_for(PAGERDUTY_PATH, of("checkout", "resolve"), timeout=RESOLVE_WAIT, what="resolve").body
    assert resolve["dedup_key"] == trigger["dedup_key"]
    # with hours of clean history the short outage never reached the 6h/30m pair (it would hold the incident)
    assert stack.prometheus.query('max_over_time(ALERTS{monitor="checkout", long="6h"}[1h])') == []


def test_slow_burn_opens_a_ticket_and_never_pages(stack: Stack) -> None:
    ticket = stack.paging.sink.wait_for(TICKET_PATH, lambda b: b["groupLabels"].get("monitor") == "cart"
                                        and b["status"] == "firing", timeout=LONG_WINDOWS_WAIT, what="cart ticket").body
    alerts = ticket["alerts"]
    assert {a["labels"]["severity"] for a in alerts} == {"warning"}
    assert {a["labels"]["alertname"] for a in alerts} == {names.ALERT_ERROR_BUDGET_BURN}
    assert {(a["labels"]["long"], a["labels"]["short"]) for a in alerts} <= {("1d", "2h"), ("3d", "6h")}
    paged = [r.body for r in stack.paging.sink.received(PAGERDUTY_PATH) if r.body["payload"]["component"] == "cart"]
    assert paged == []
    assert stack.prometheus.query('ALERTS{monitor="cart", severity="critical"}') == []


# --- dashboards against this Prometheus -----------------------------------------------------

def substitute(expr: str) -> str:
    """What Grafana sends: all namespaces and monitors selected, 1m rate interval, 30d period."""
    for var, value in (("$namespace", ".*"), ("$monitor", ".*"), ("$path", ".*"), ("$period", "30d"),
                       ("$__rate_interval", "1m"), ("$__range", "1h")):
        expr = expr.replace(var, value)
    return expr


def panel_queries() -> list[Any]:
    out = []
    for file in DASHBOARDS:
        for panel in json.loads((GRAFANA / file).read_text())["panels"]:
            for t in panel.get("targets", []):
                if for_several_vantages_only(t["expr"]):
                    continue  # this stack's monitors have one vantage each
                out.append(pytest.param(t["expr"], id=f"{file.removesuffix('.json')}:{panel['title']}:{t['refId']}"))
    return out


@pytest.fixture(scope="module")
def recorded(stack: Stack) -> Stack:
    """The stack once every recording rule, the long-window ones included, has samples."""
    record = names.error_ratio_record("3d")
    wait_for(lambda: len(stack.prometheus.query(record)) == len(MONITORS), timeout=LONG_WINDOWS_WAIT,
             interval=2, what=record)
    return stack


@pytest.mark.parametrize("expr", panel_queries())
def test_every_dashboard_query_returns_series(recorded: Stack, expr: str) -> None:
    assert recorded.prometheus.query(substitute(expr)), f"no series: {substitute(expr)}"


def label_values(stack: Stack, query: str) -> set[str]:
    m = re.fullmatch(r"label_values\((.*), (\w+)\)", query)
    assert m, query
    params = {"match[]": substitute(m.group(1))}
    body = httpx.get(f"{stack.prometheus.url}/api/v1/label/{m.group(2)}/values", params=params, timeout=10).json()
    return set(body["data"])


def test_dashboard_variables_resolve(stack: Stack) -> None:
    for file in DASHBOARDS:
        variables = {v["name"]: v for v in json.loads((GRAFANA / file).read_text())["templating"]["list"]}
        assert variables["datasource"]["query"] == "prometheus"
        if "namespace" in variables:
            assert label_values(stack, variables["namespace"]["definition"]) == {"shop"}
            assert label_values(stack, variables["monitor"]["definition"]) == set(MONITORS)
