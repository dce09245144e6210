"""The shipped Alertmanager configuration (deploy/alertmanager/): valid, routed and delivered as documented.

Covers: ``amtool check-config`` accepts the shipped file and its adapted test copy; the routing
tree sends critical route-monitor alerts to PagerDuty, warnings to the ticket webhook and anything
else to no receiver; a real Alertmanager delivers PagerDuty Events API v2 ``trigger`` and
``resolve`` events with summary, severity, source, dashboard and runbook links, the routing key
read from its file and one dedup key per alert group; a page inhibits the ticket of the same
monitor but not of another.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from alert_rules import names, operator_alerts
from tests.support.prometheus import ALERTMANAGER_DIR, ROUTING_KEY, Paging, adapt_alertmanager_config, run_paging
from tests.support.sink import PAGERDUTY_PATH, TICKET_PATH

CONFIG = ALERTMANAGER_DIR / "alertmanager.yml"
DETAIL_UID = json.loads((ALERTMANAGER_DIR.parents[1] / "grafana" / "monitor-detail.json").read_text())["uid"]


def amtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["amtool", *args], capture_output=True, text=True, timeout=30)


def local_config(tmp_path: Path) -> Path:
    path = tmp_path / "alertmanager.yml"
    path.write_text(adapt_alertmanager_config(CONFIG.read_text(), pagerduty_url="http://127.0.0.1:9/v2/enqueue",
                                              ticket_url="http://127.0.0.1:9/ticket",
                                              routing_key_file=tmp_path / "key"))
    return path


def test_shipped_config_passes_amtool_check_config() -> None:
    result = amtool("check-config", str(CONFIG))
    assert result.returncode == 0, result.stdout + result.stderr


def test_adapted_config_with_templates_passes_amtool_check_config(tmp_path: Path) -> None:
    result = amtool("check-config", str(local_config(tmp_path)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 templates" in result.stdout


def test_routing_key_is_read_from_a_file_never_inline() -> None:
    cfg = yaml.safe_load(CONFIG.read_text())
    pagerduty = [pd for r in cfg["receivers"] for pd in r.get("pagerduty_configs", [])]
    assert pagerduty and all("routing_key_file" in pd and "routing_key" not in pd for pd in pagerduty)


def alert_labels(severity: str, alertname: str = names.ALERT_ERROR_BUDGET_BURN) -> dict[str, str]:
    return {"alertname": alertname, names.LABEL_NAMESPACE: "shop", names.LABEL_MONITOR: "checkout",
            names.LABEL_SEVERITY: severity}


@pytest.mark.parametrize(("labels", "receiver"), [
    pytest.param(alert_labels("critical"), "route-monitor-pagerduty", id="fast-burn-pages"),
    pytest.param(alert_labels("critical", names.ALERT_LATENCY_BUDGET_BURN), "route-monitor-pagerduty",
                 id="latency-fast-burn-pages"),
    pytest.param(alert_labels("warning"), "route-monitor-ticket", id="slow-burn-tickets"),
    pytest.param(alert_labels("warning", names.ALERT_PROBES_ABSENT), "route-monitor-ticket", id="absent-tickets"),
    pytest.param(alert_labels("warning", names.ALERT_CERTIFICATE_EXPIRY), "route-monitor-ticket",
                 id="certificate-expiry-tickets"),
    pytest.param(alert_labels("critical", "SomeoneElsesAlert"), "null", id="other-alerts-untouched"),
    pytest.param({"alertname": operator_alerts.OPERATOR_DOWN, names.LABEL_SEVERITY: "critical"},
                 "route-monitor-pagerduty", id="operator-down-pages"),
    pytest.param({"alertname": names.ALERT_SHARED_PATH_DOWN, names.LABEL_PATH: "router:a",
                  names.LABEL_SEVERITY: "critical"}, "route-monitor-pagerduty", id="shared-path-down-pages"),
    pytest.param({"alertname": operator_alerts.SCHEDULE_LAG, names.LABEL_SEVERITY: "warning", "instance": "a"},
                 "route-monitor-ticket", id="operator-lag-tickets"),
])
def test_routing_tree(labels: dict[str, str], receiver: str) -> None:
    result = amtool("config", "routes", "test", f"--config.file={CONFIG}", f"--verify.receivers={receiver}",
                    *(f"{k}={v}" for k, v in labels.items()))
    assert result.returncode == 0, result.stdout + result.stderr


# --- a real Alertmanager delivering to the local PagerDuty / ticket stand-in -----------------

@pytest.fixture
def paging(tmp_path: Path) -> Iterator[Paging]:
    with run_paging(tmp_path / "alertmanager") as p:
        yield p


def alert(monitor: str, severity: str, *, long: str = "1h", short: str = "5m", resolved: bool = False,
          alertname: str = names.ALERT_ERROR_BUDGET_BURN) -> dict[str, Any]:
    a: dict[str, Any] = {
        "labels": {"alertname": alertname, "namespace": "shop", "monitor": monitor, "severity": severity,
                   "long": long, "short": short},
        "annotations": {"summary": f"shop/{monitor} is burning its error budget",
                        "description": "details", "runbook_url": f"https://runbooks.example/{monitor}"},
    }
    if resolved:
        a["endsAt"] = "2000-01-01T00:00:00Z"
    return a


def event(action: str, monitor: str) -> Any:
    return lambda body: body["event_action"] == action and body["payload"]["component"] == monitor


@pytest.mark.prometheus
def test_page_triggers_then_resolves_with_fields_and_one_dedup_key(paging: Paging) -> None:
    paging.alertmanager.post_alerts([alert("checkout", "critical")])
    trigger = paging.sink.wait_for(PAGERDUTY_PATH, event("trigger", "checkout"), what="trigger").body
    assert trigger["routing_key"] == ROUTING_KEY
    payload = trigger["payload"]
    assert payload["summary"] == "shop/checkout is burning its error budget"
    assert payload["severity"] == "critical"
    assert payload["source"] == "shop/checkout"
    links = {link["text"]: link["href"] for link in trigger["links"]}
    assert links["Runbook"] == "https://runbooks.example/checkout"
    assert f"/d/{DETAIL_UID}/" in links["Grafana dashboard"]
    assert "var-namespace=shop&var-monitor=checkout" in links["Grafana dashboard"]

    paging.alertmanager.post_alerts([alert("checkout", "critical", resolved=True)])
    resolve = paging.sink.wait_for(PAGERDUTY_PATH, event("resolve", "checkout"), what="resolve").body
    assert resolve["dedup_key"] == trigger["dedup_key"]
    assert paging.sink.received(TICKET_PATH) == []


@pytest.mark.prometheus
def test_both_page_window_pairs_make_one_incident_and_monitors_make_separate_ones(paging: Paging) -> None:
    paging.alertmanager.post_alerts([alert("checkout", "critical", long="1h", short="5m"),
                                     alert("checkout", "critical", long="6h", short="30m"),
                                     alert("cart", "critical")])
    paging.sink.wait_for(PAGERDUTY_PATH, event("trigger", "cart"), what="cart trigger")
    checkout = paging.sink.wait_for(PAGERDUTY_PATH, event("trigger", "checkout"), what="checkout trigger").body
    time.sleep(2)  # a second group flush would show up as a second event
    checkout_events = [r.body for r in paging.sink.received(PAGERDUTY_PATH) if r.body["payload"]["component"] == "checkout"]
    cart_events = [r.body for r in paging.sink.received(PAGERDUTY_PATH) if r.body["payload"]["component"] == "cart"]
    assert {e["dedup_key"] for e in checkout_events} == {checkout["dedup_key"]}
    assert checkout["payload"]["custom_details"]["windows"] in ("1h/5m 6h/30m", "6h/30m 1h/5m")
    assert cart_events[0]["dedup_key"] != checkout["dedup_key"]


@pytest.mark.prometheus
def test_slow_burn_opens_a_ticket_and_pages_nobody(paging: Paging) -> None:
    paging.alertmanager.post_alerts([alert("checkout", "warning", long="1d", short="2h")])
    ticket = paging.sink.wait_for(TICKET_PATH, what="ticket").body
    assert ticket["status"] == "firing"
    assert ticket["groupLabels"] == {"alertname": names.ALERT_ERROR_BUDGET_BURN, "namespace": "shop",
                                     "monitor": "checkout"}
    assert ticket["alerts"][0]["annotations"]["runbook_url"] == "https://runbooks.example/checkout"
    assert paging.sink.received(PAGERDUTY_PATH) == []


@pytest.mark.prometheus
def test_page_inhibits_the_ticket_of_the_same_monitor_only(paging: Paging) -> None:
    paging.alertmanager.post_alerts([alert("checkout", "critical")])
    paging.sink.wait_for(PAGERDUTY_PATH, event("trigger", "checkout"), what="trigger")
    paging.alertmanager.post_alerts([alert("checkout", "warning", long="1d", short="2h"),
                                     alert("cart", "warning", long="1d", short="2h")])
    paging.sink.wait_for(TICKET_PATH, lambda b: b["groupLabels"]["monitor"] == "cart", what="cart ticket")
    time.sleep(2)
    ticketed = {b.body["groupLabels"]["monitor"] for b in paging.sink.received(TICKET_PATH)}
    assert ticketed == {"cart"}


@pytest.mark.prometheus
def test_operator_down_pages_once_and_silences_every_probes_absent_ticket(paging: Paging) -> None:
    down = {"labels": {"alertname": operator_alerts.OPERATOR_DOWN, "severity": "critical"},
            "annotations": {"summary": "route-monitor is down: 2 SLOs are blind", "description": "d",
                            "runbook_url": "https://runbooks.example/down"}}
    paging.alertmanager.post_alerts([down])
    paging.sink.wait_for(PAGERDUTY_PATH, lambda b: b["event_action"] == "trigger", what="the operator-down page")
    paging.alertmanager.post_alerts([alert(m, "warning", alertname=names.ALERT_PROBES_ABSENT) for m in ("a", "b")]
                                    + [alert("c", "warning", long="1d", short="2h")])
    paging.sink.wait_for(TICKET_PATH, lambda b: b["groupLabels"]["monitor"] == "c", what="an unrelated ticket")
    time.sleep(2)
    ticketed = {(b.body["groupLabels"]["alertname"], b.body["groupLabels"]["monitor"])
                for b in paging.sink.received(TICKET_PATH)}
    assert ticketed == {(names.ALERT_ERROR_BUDGET_BURN, "c")}
    assert len(paging.sink.received(PAGERDUTY_PATH)) == 1, "one page, not one per blind SLO"


def path_down(path: str, affected: int) -> dict[str, Any]:
    return {"labels": {"alertname": names.ALERT_SHARED_PATH_DOWN, "path": path, "severity": "critical"},
            "annotations": {"summary": f"{path} is down: {affected} monitors behind it are failing",
                            "description": "d", "runbook_url": "https://runbooks.example/path"}}


@pytest.mark.prometheus
def test_shared_path_down_is_one_incident_per_path_and_silences_no_ticket(paging: Paging) -> None:
    paging.alertmanager.post_alerts([path_down("router:a", 8), path_down("gateway:infra/edge", 3)])
    paging.sink.wait_for(PAGERDUTY_PATH, lambda b: b["payload"]["source"] == "gateway:infra/edge", what="edge")
    a = paging.sink.wait_for(PAGERDUTY_PATH, lambda b: b["payload"]["source"] == "router:a", what="router:a").body
    assert a["payload"]["summary"] == "router:a is down: 8 monitors behind it are failing"
    links = {link["text"]: link["href"] for link in a["links"]}
    assert links["Grafana dashboard"].endswith("/d/route-monitor-overview/route-monitor-slo-overview?var-path=router:a")
    paging.alertmanager.post_alerts([alert("cart", "warning", long="1d", short="2h")])
    paging.sink.wait_for(TICKET_PATH, lambda b: b["groupLabels"]["monitor"] == "cart", what="an unrelated ticket")
    triggers = [r.body for r in paging.sink.received(PAGERDUTY_PATH) if r.body["event_action"] == "trigger"]
    assert len({t["dedup_key"] for t in triggers}) == len(triggers) == 2


def test_alertmanagerconfig_and_secret_example_mirror_the_shipped_config() -> None:
    cfg = yaml.safe_load(CONFIG.read_text())
    amc = yaml.safe_load((ALERTMANAGER_DIR / "alertmanagerconfig.yaml").read_text())["spec"]
    secret = yaml.safe_load((ALERTMANAGER_DIR / "secret.example.yaml").read_text())
    ours = cfg["route"]["routes"][0]
    assert amc["route"]["groupBy"] == ours["group_by"]
    assert amc["route"]["routes"][0]["groupBy"] == ours["routes"][0]["group_by"] == ["alertname", "path"]
    assert [r["receiver"] for r in amc["route"]["routes"]] == [r["receiver"] for r in ours["routes"]]
    assert amc["inhibitRules"][0]["equal"] == cfg["inhibit_rules"][0]["equal"]
    key_ref = amc["receivers"][0]["pagerdutyConfigs"][0]["routingKey"]
    assert (key_ref["name"], key_ref["key"]) == (secret["metadata"]["name"], next(iter(secret["stringData"])))
    key_file = cfg["receivers"][1]["pagerduty_configs"][0]["routing_key_file"]
    assert key_file == f"/etc/alertmanager/secrets/{key_ref['name']}/{key_ref['key']}"
