"""End to end, Contract 9: a hard outage inside a maintenance window pages nobody until the window
ends, then pages; the window's failures never enter the SLO.

Real processes on loopback (``tests/support/e2e.py``): ``route-monitor standalone`` probing a
target every second -> Prometheus (1s scrape and evaluation) with the generated rules ->
Alertmanager with the shipped configuration -> the PagerDuty stand-in. The monitor starts
healthy (its first success ends warm-up); then its file gains a one-off window starting now
(standalone reloads it, probing goes on); the target goes down inside the window. While the
window lasts: no page, no burn alert, the failure counter stays at 0 and the excluded counter
rises, and the dashboard's maintenance annotation shades the window up to its last seconds and its
excluded-probes query shows the window's probes (both read over the window as Grafana does, and
waited for: under load Prometheus lags the clock). After it ends: a page within the usual
detection time. About two to three minutes.
"""

from __future__ import annotations

import datetime as dt
import json
import textwrap
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from alert_rules import names
from tests.support.e2e import Switch, standalone
from tests.support.net import wait_for
from tests.support.prometheus import Paging, Prometheus, run_paging, run_prometheus
from tests.support.servers import Targets
from tests.support.sink import PAGERDUTY_PATH

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(400)]
WINDOW_S = 60
GRAFANA = Path(__file__).resolve().parents[2] / "grafana"


def manifest(url: str, window: tuple[float, float] | None = None) -> str:
    maintenance = ""
    if window is not None:
        start, end = (dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ") for t in window)
        maintenance = f'  maintenance: [{{start: "{start}", end: "{end}"}}]\n'
    return textwrap.dedent(f"""\
        apiVersion: routemonitor.io/v1alpha1
        kind: RouteMonitor
        metadata: {{name: checkout, namespace: shop}}
        spec:
          target: {{url: "{url}"}}
          probe: {{interval: 1s, timeout: 500ms}}
          slo: {{availability: "99"}}
        """) + maintenance


def value(prom: Prometheus, expr: str) -> float:
    result = prom.query(expr)
    return float(result[0]["value"][1]) if result else 0.0


def ranged(prom: Prometheus, expr: str, start: float, end: float) -> list[dict[str, Any]]:
    """``expr`` over ``[start, end]`` at 1 s steps, as a dashboard panel or annotation asks for it."""
    result: list[dict[str, Any]] = prom.api("query_range", query=expr, start=start, end=end, step=1)["result"]
    return result


def shaded_until(prom: Prometheus, expr: str, start: float, end: float) -> float:
    """The last time in ``[start, end]`` at which ``expr`` has a series (``start`` - 1: none)."""
    return max((float(t) for series in ranged(prom, expr, start, end) for t, _ in series["values"]),
               default=start - 1)


def reasons(prom: Prometheus, expr: str, start: float, end: float) -> set[str]:
    return {series["metric"].get("reason", "") for series in ranged(prom, expr, start, end)}


def detail_queries() -> tuple[str, str]:
    """The monitor-detail dashboard's maintenance annotation and excluded-probes query, as Grafana sends them."""
    dash = json.loads((GRAFANA / "monitor-detail.json").read_text())
    [shade] = dash["annotations"]["list"]
    [results] = [p for p in dash["panels"] if p["title"] == "Probe results"]
    sub = [("$namespace", ".*"), ("$monitor", ".*"), ("$__rate_interval", "1m")]
    exprs = [shade["expr"], results["targets"][1]["expr"]]
    for var, val in sub:
        exprs = [e.replace(var, val) for e in exprs]
    return exprs[0], exprs[1]


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[Prometheus, Paging, Switch, Path, str]]:
    with ExitStack() as stack:
        targets = Targets(tmp_path)
        stack.callback(targets.close)
        switch = Switch()
        url = targets.http(switch)
        monitors = tmp_path / "monitors"
        monitors.mkdir()
        (monitors / "shop.yaml").write_text(manifest(url))
        rules = tmp_path / "rules"
        metrics = stack.enter_context(standalone(tmp_path, rules, count=1))
        paging = stack.enter_context(run_paging(tmp_path / "alertmanager"))
        prom = stack.enter_context(run_prometheus(tmp_path / "prometheus", targets=[metrics], rules_dir=rules,
                                                  alertmanager=paging.alertmanager.address))
        yield prom, paging, switch, monitors / "shop.yaml", url


def test_outage_inside_a_maintenance_window_pages_only_after_it_ends(
        stack: tuple[Prometheus, Paging, Switch, Path, str]) -> None:
    prom, paging, switch, file, url = stack
    ok = f'{names.PROBES_TOTAL}{{monitor="checkout",result="success"}}'
    failed = f'{names.PROBES_TOTAL}{{monitor="checkout",result="failure"}}'
    excluded = f'{names.PROBES_EXCLUDED_TOTAL}{{monitor="checkout",reason="maintenance"}}'
    wait_for(lambda: value(prom, ok) >= 5, timeout=60, what="counted successful probes in Prometheus")

    start = time.time()
    end = start + WINDOW_S
    file.write_text(manifest(url, (start - 1, end)))  # standalone reloads it; probing goes on
    wait_for(lambda: value(prom, f'{names.MAINTENANCE}{{monitor="checkout"}}') == 1, timeout=20,
             what="route_monitor_maintenance = 1")
    switch.down = True

    shade, excluded_panel = detail_queries()
    while time.time() < end - 2:  # the whole window: nothing pages, nothing is counted
        assert not [r for r in paging.sink.received(PAGERDUTY_PATH) if r.body["payload"]["component"] == "checkout"]
        assert prom.query(f'ALERTS{{monitor="checkout",alertname="{names.ALERT_ERROR_BUDGET_BURN}"}}') == []
        assert value(prom, failed) == 0
        time.sleep(2)
    assert value(prom, excluded) >= WINDOW_S / 2
    # the dashboard over the window, as Grafana asks (range queries over its time range), polled
    # until Prometheus has it all: under load, scrapes and queries lag the clock
    try:
        wait_for(lambda: shaded_until(prom, shade, start, end) >= end - 10, timeout=30,
                 what="the maintenance annotation to shade the window up to its last 10 s")
    except TimeoutError as e:
        raise AssertionError(f"the dashboard's maintenance annotation has no series during the window up to its "
                             f"end ({e}): {prom.api('query_range', query=shade, start=start, end=end, step=1)}") from None
    wait_for(lambda: "maintenance" in reasons(prom, excluded_panel, start, end), timeout=30,
             what="the dashboard's excluded probes to show reason maintenance during the window")

    trigger = paging.sink.wait_for(PAGERDUTY_PATH, lambda b: b["payload"]["component"] == "checkout"
                                   and b["event_action"] == "trigger", timeout=120, what="the page after the window")
    paged_at = trigger.at
    assert trigger.body["payload"]["severity"] == "critical"
    assert paged_at >= end
    assert paged_at - end < 60, f"paged {paged_at - end:.0f}s after the window ended"
    # only failures after the window were counted: at most one per second since it ended
    assert 0 < value(prom, failed) <= time.time() - end + 3
