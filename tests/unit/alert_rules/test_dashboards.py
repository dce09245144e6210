"""The Grafana dashboards (grafana/): generated, committed, consistent with the names the rest uses.

Covers: regenerating changes nothing (``grafana/build.py --check``); each dashboard has a unique
uid, the datasource variable and (per-monitor dashboards) namespace and monitor variables, and
every query goes through the datasource variable and filters by them; every metric and
recording-rule name a query uses is one that ``alert_rules.names`` defines; the sidecar ConfigMaps
carry ``grafana_dashboard: "1"`` and exactly the committed JSON. That every query returns series
from a real Prometheus is shown in ``test_e2e_paging.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from alert_rules import durations, names
from alert_rules.model import DEFAULT_PERIOD_MS
from alert_rules.windows import alert_windows, windows_of

GRAFANA = Path(__file__).resolve().parents[3] / "grafana"
FILES = ("slo-overview.json", "monitor-detail.json", "operator-health.json")
PER_MONITOR = ("slo-overview.json", "monitor-detail.json")


def load(name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((GRAFANA / name).read_text())
    return result


def targets(dash: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for p in dash["panels"] for t in p.get("targets", [])]


def test_regenerating_changes_nothing() -> None:
    result = subprocess.run([sys.executable, str(GRAFANA / "build.py"), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_uids_are_unique_and_stable() -> None:
    uids = [load(f)["uid"] for f in FILES]
    assert uids == ["route-monitor-overview", "route-monitor-detail", "route-monitor-operator"]


@pytest.mark.parametrize("name", FILES)
def test_queries_use_the_datasource_variable(name: str) -> None:
    dash = load(name)
    assert dash["templating"]["list"][0]["type"] == "datasource"
    assert targets(dash)
    for p in dash["panels"]:
        if p["type"] != "row":
            assert p["datasource"]["uid"] == "${datasource}", p["title"]
            assert all(t["datasource"]["uid"] == "${datasource}" for t in p["targets"])


@pytest.mark.parametrize("name", PER_MONITOR)
def test_per_monitor_dashboards_filter_by_namespace_and_monitor(name: str) -> None:
    dash = load(name)
    variables = [v["name"] for v in dash["templating"]["list"]]
    assert variables[:3] == ["datasource", "namespace", "monitor"]
    for t in targets(dash):
        if "route_monitor" in t["expr"]:
            assert 'namespace=~"$namespace", monitor=~"$monitor"' in t["expr"], t["expr"]


def known_names() -> set[str]:
    windows = [durations.format_ms(ms) for ms in windows_of(alert_windows(DEFAULT_PERIOD_MS))]
    known = {v for v in vars(names).values() if isinstance(v, str)}
    for make in (names.error_ratio_record, names.slow_ratio_record):
        known |= {make(w) for w in windows}
    known |= {names.location_error_ratio_record("5m"), names.reachability_record("5m")}
    metrics = {names.PROBE_DURATION_SECONDS, names.SCHEDULE_LAG_SECONDS, names.EVENT_LOOP_LAG_SECONDS}
    return known | {f"{m}_bucket" for m in metrics}


@pytest.mark.parametrize("name", FILES)
def test_every_metric_name_comes_from_the_names_module(name: str) -> None:
    used = {m for t in targets(load(name)) for m in re.findall(r"(?:namespace_monitor(?:_location)?:)?route_monitor_[\w:]+",
                                                                  t["expr"])}
    assert used
    assert used <= known_names(), used - known_names()


def test_configmaps_carry_the_sidecar_label_and_the_committed_json() -> None:
    docs = [d for d in yaml.safe_load_all((GRAFANA / "configmaps.yaml").read_text()) if d]
    assert len(docs) == len(FILES)
    for doc in docs:
        assert doc["kind"] == "ConfigMap"
        assert doc["metadata"]["namespace"] == "monitoring", "kubectl apply -f must not depend on the context"
        assert doc["metadata"]["labels"]["grafana_dashboard"] == "1"
        (file, text), = doc["data"].items()
        assert json.loads(text) == load(file)


@pytest.mark.parametrize("name", FILES)
def test_no_panel_plots_the_same_query_twice(name: str) -> None:
    for p in load(name)["panels"]:
        exprs = [t["expr"] for t in p.get("targets", [])]
        assert len(exprs) == len(set(exprs)), p["title"]


def test_burn_rate_panel_draws_each_pairs_factor_for_the_monitors_period() -> None:
    """The threshold lines are budget share x period / long window: 14.4, 6, 3 and 1 for 30 days."""
    [panel] = [p for p in load("monitor-detail.json")["panels"] if p["title"] == "Burn rate per window"]
    thresholds = [t["expr"] for t in panel["targets"] if names.SLO_PERIOD_RECORD in t["expr"]]
    period = 30 * 86400
    factors = []
    for expr in thresholds:
        share, _, rest = expr.partition(" * ")
        long_seconds = int(rest.rsplit("/ ", 1)[1])
        factors.append(round(float(share) * period / long_seconds, 6))
    assert factors == [14.4, 6.0, 3.0, 1.0]


def test_overview_rows_link_to_the_monitor_detail_dashboard() -> None:
    [table] = [p for p in load("slo-overview.json")["panels"] if p["type"] == "table" and p["title"] == "Monitors"]
    links = [prop["value"][0]["url"] for o in table["fieldConfig"]["overrides"] for prop in o["properties"]
             if prop["id"] == "links"]
    assert links and all(u.startswith("/d/route-monitor-detail/") and "${__data.fields.monitor}" in u for u in links)


def test_monitor_detail_shades_maintenance_and_shows_excluded_probes() -> None:
    """Contract 9: maintenance windows and pauses as annotations (regions where the engine's gauge
    is 1), excluded probes next to counted ones. The queries run against real Prometheus data in
    ``test_e2e_maintenance.py``."""
    dash = load("monitor-detail.json")
    [shade] = dash["annotations"]["list"]
    assert shade["datasource"]["uid"] == "${datasource}" and shade["enable"]
    assert shade["expr"] == f'{names.MAINTENANCE}{{namespace=~"$namespace", monitor=~"$monitor"}} == 1'
    [results] = [p for p in dash["panels"] if p["title"] == "Probe results"]
    exprs = [t["expr"] for t in results["targets"]]
    assert names.PROBES_TOTAL in exprs[0] and names.PROBES_EXCLUDED_TOTAL in exprs[1]
    assert exprs[1].endswith("or on () vector(0)")  # no excluded probes: 0, not "No data"


def test_budget_panels_read_the_recorded_period_budget() -> None:
    """Budget panels read the hourly-recorded period budget (like Sloth and Pyrra), not a 30-day
    increase() over raw counters; the query-time computation is only the fallback for the first hour."""
    overview, detail = load("slo-overview.json")["panels"], load("monitor-detail.json")["panels"]
    [table] = [p for p in overview if p["type"] == "table" and p["title"] == "Monitors"]
    [lowest] = [p for p in overview if p["title"] == "Lowest budget remaining"]
    [panel] = [p for p in detail if p["title"] == "Error budget remaining over the SLO period"]
    [column] = [t["expr"] for t in table["targets"] if names.BUDGET_REMAINING_RECORD in t["expr"]]
    for expr in (column, lowest["targets"][0]["expr"], panel["targets"][0]["expr"]):
        recorded, _, fallback = expr.removeprefix("min(").partition(" or ")
        assert recorded.startswith(f"last_over_time({names.BUDGET_REMAINING_RECORD}{{"), expr  # hourly: not 5m lookback
        assert "increase(" not in recorded and "increase(" in fallback


def test_overview_shows_each_shared_path_and_its_failing_monitors() -> None:
    """Contract 11: a panel per path (monitors behind it, how many failing), narrowed by ``var-path``,
    the variable RouteMonitorSharedPathDown's dashboard link sets."""
    dash = load("slo-overview.json")
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["path"]["definition"] == f"label_values({names.MONITOR_PATH_INFO}, path)"
    [panel] = [p for p in dash["panels"] if p["title"] == "Shared paths"]
    monitors, failing = (t["expr"] for t in panel["targets"])
    assert monitors.startswith("count by (path)") and 'path=~"$path"' in monitors
    assert names.FAILING_RECORD in failing and 'reason="dns_error"' in failing and 'path=~"$path"' in failing


def test_monitor_detail_shows_each_location_beside_uptime_and_reachability() -> None:
    """Contract 12: one panel with each location's availability, the monitor's under the quorum and
    its reachability. The queries run against a real Prometheus in ``test_e2e_vantages_netns.py``."""
    [panel] = [p for p in load("monitor-detail.json")["panels"] if p["title"] == "Availability (5m) per location"]
    sel = '{namespace=~"$namespace", monitor=~"$monitor"}'
    assert [(t["expr"], t["legendFormat"]) for t in panel["targets"]] == [
        (f"1 - {names.location_error_ratio_record('5m')}{sel}", "{{namespace}}/{{monitor}} from {{location}}"),
        (f"1 - {names.error_ratio_record('5m')}{sel}", "{{namespace}}/{{monitor}} uptime (quorum)"),
        (f"1 - {names.reachability_record('5m')}{sel}", "{{namespace}}/{{monitor}} reachability")]


def test_counts_of_target_info_count_each_monitor_once() -> None:
    """A monitor of several vantages has a target_info series per location: every query counting
    monitors from it counts by namespace and monitor first."""
    exprs = [t["expr"] for f in FILES for t in targets(load(f)) if names.TARGET_INFO in t["expr"]]
    assert exprs
    for expr in exprs:
        for counted in re.findall(rf"count(?: by \(([\w, ]+)\))? \({names.TARGET_INFO}\b", expr):
            assert ("namespace" in counted and "monitor" in counted) or counted == "instance", expr
