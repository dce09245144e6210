"""A monitor probed from three zones, end to end (Contract 12): four ``route-monitor operator``
processes, each in a network namespace of its own standing for a zone (``--location a``..``d``,
``tests/support/netns.py``), sharing the monitors through Leases on the real control plane; real
Prometheus scraping the four and loading the monitor's PrometheusRule and the operator's own rules;
Alertmanager running the shipped configuration, with the PagerDuty and ticket stand-in.
The monitor-detail dashboard's per-location panel is queried from the same Prometheus.

Each namespace has two links: ``api`` (a relay to the apiserver; Prometheus scrapes the replica
through it too) and ``data``, its route to the target and to the canary (``--canary-url``), two
host addresses every namespace reaches through its own data link. The monitor has ``vantages: 3``
(quorum: the default majority, 2) and is probed every second; its three owners are the first
three zones of its ranking, the fourth replica is the spare. The tests run in this order and share
the stack:

1. one owner's route to the target is cut (its canary still answers, so its failures count): no
   page, one ``RouteMonitorPartiallyUnreachable`` ticket naming its location, and the monitor's
   ratios under the quorum stay 0 at every evaluation (the budget does not move) while the
   reachability ratio sees the failures, as the dashboard's per-location panel draws them;
2. another owner's data link is cut (target and canary: blind): its Lease is marked blind, the
   spare probes from its zone within the takeover time, so the monitor keeps three vantages
   (three zones counting probes); no failure is counted, no page, one ``RouteMonitorProberBlind``
   ticket; the link back, it takes its place back;
3. the target stops: the page comes within today's detection time plus one interval;
4. the first owner is killed (SIGKILL): the spare probes from its zone within the takeover time
   (Lease duration + 10 s), three vantages again, and ``status.locations`` names the new member.

The two tickets' ``for:`` is 5 minutes as shipped (the promtool scenarios show it); the test's copy
of the rules waits :data:`TICKET_FOR` instead, so the module takes minutes, not ten more. Nothing
else of the rules or of Alertmanager's routing is changed (its group timings are 1 s).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Namespace
from prometheus_client.parser import text_string_to_metric_families

from alert_rules import names
from alert_rules.model import DEFAULT_EVALUATION_MS
from alert_rules.operator_alerts import PROBER_BLIND
from alert_rules.path_rules import settle_ms
from route_monitor.operator.replicas.vantages import owners
from tests.support.cluster import OPERATOR_TOKEN, OPERATOR_USER, Cluster, kubeconfig
from tests.support.net import wait_for
from tests.support.netns import HostAddresses, Link, NetNS, Relay
from tests.support.operator import VENV_BIN, Operator, Target, admin_client, get, route
from tests.support.prometheus import Paging, Prometheus, run_paging, run_prometheus
from tests.support.resources import PrometheusRule, RouteMonitor
from tests.support.sink import PAGERDUTY_PATH, TICKET_PATH

pytestmark = [pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                 reason="needs root and iproute2 (ip netns) to cut a zone's network"),
              pytest.mark.cluster, pytest.mark.prometheus, pytest.mark.timeout(420)]

NS = "e2e-vantages"
MONITOR = "checkout"
ZONES = {"member-a": "a", "member-b": "b", "member-c": "c", "member-d": "d"}
LEASE_NS = "route-monitor"
INTERVAL_S = 1
TAKEOVER = 15 + 10
"""Contract 6: a monitor is probed again within the Lease duration + 10 s."""
DETECTION_S = settle_ms(INTERVAL_S * 1000, DEFAULT_EVALUATION_MS) / 1000 + 20
"""Today's detection time of a monitor's outage under the operator's rules: the page's ``for:``
(one probe interval or 30 s, plus one 30 s evaluation), its burn holding after a few failed probes,
a few 1 s evaluations and Alertmanager's 1 s group wait."""
TICKET_FOR = "10s"
QUORUM_RATIOS = (names.error_ratio_record("5m"), names.error_ratio_record("1h"))


@dataclass
class Zoned(Operator):
    """An operator process in a network namespace, reached (readiness, /metrics) at ``address``."""

    address: str = ""

    def ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"operator exited with {self.proc.returncode}:\n{self.log(60)}")
        try:
            return httpx.get(f"http://{self.address}:{self.metrics_port}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def metrics_text(self) -> str:
        r = httpx.get(f"http://{self.address}:{self.metrics_port}/metrics", timeout=5)
        r.raise_for_status()
        return r.text


@dataclass
class Zone:
    netns: NetNS
    api: Link
    data: Link
    operator: Zoned
    hosts: tuple[str, ...]
    """The target's and the canary's addresses, routed through ``data``."""

    def connect(self) -> None:
        """Route the hosts through the data link (again: a link going down drops its routes)."""
        for address in self.hosts:
            self.netns.route(address, self.data)


@dataclass
class Stack:
    kube: Client
    zones: dict[str, Zone]
    """member -> its zone's namespace, links and operator."""
    running: dict[str, Zoned]
    target: Target
    target_address: str
    prometheus: Prometheus
    paging: Paging
    owners: tuple[str, ...]
    """The monitor's owners among the four, first owner first."""
    spare: str


def owners_of_monitor() -> tuple[str, ...]:
    return owners((NS, MONITOR), ZONES, frozenset(), 3)


def monitor() -> Any:
    return RouteMonitor.from_dict({
        "apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": MONITOR, "namespace": NS},
        "spec": {"target": {"route": {"name": MONITOR}}, "path": f"/{MONITOR}",
                 "probe": {"interval": f"{INTERVAL_S}s", "vantages": 3}, "slo": {"availability": "99.9"}}})


def shortened_tickets(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``groups`` with the two tickets of this test waiting :data:`TICKET_FOR` (see the docstring)."""
    for group in groups:
        for rule in group["rules"]:
            if rule.get("alert") == names.ALERT_PARTIALLY_UNREACHABLE or (
                    rule.get("alert") == PROBER_BLIND and rule["labels"][names.LABEL_SEVERITY] == "warning"):
                rule["for"] = TICKET_FOR
    return groups


def write_rules(kube: Client, rules: Path) -> None:
    """What prometheus-operator loads: the monitor's PrometheusRule and the operator's own rules."""
    rules.mkdir(parents=True, exist_ok=True)
    rule = get(kube, PrometheusRule, names.prometheus_rule_name(MONITOR), NS)
    assert rule is not None
    (rules / f"{MONITOR}.yml").write_text(yaml.safe_dump({"groups": shortened_tickets(rule["spec"]["groups"])}))
    own = subprocess.run([str(VENV_BIN / "route-monitor"), "rules", "--operator", "--format", "prometheus"],
                         check=True, capture_output=True, text=True).stdout
    (rules / "route-monitor-operator.yml").write_text(
        yaml.safe_dump({"groups": shortened_tickets(yaml.safe_load(own)["groups"])}))


def exported(running: dict[str, Zoned]) -> dict[str, str]:
    """member -> the location of the monitor's series it exports (members exporting none left out)."""
    out = {}
    for member, op in running.items():
        for family in text_string_to_metric_families(op.metrics_text()):
            for s in family.samples:
                if s.name == names.PROBES_TOTAL and s.labels.get("namespace") == NS and s.labels["monitor"] == MONITOR:
                    out[member] = s.labels.get(names.LABEL_LOCATION, "")
    return out


def zones_of(*members: str) -> dict[str, str]:
    return {m: ZONES[m] for m in members}


@pytest.fixture(scope="module")
def stack(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("e2e-vantages")
    kube = admin_client(cluster)
    with ExitStack() as stack:
        hosts = HostAddresses(2)
        stack.callback(hosts.close)
        target_address, canary_address = hosts.addresses
        target = Target(address=target_address)
        stack.callback(target.close)
        canary = Target(address=canary_address)
        stack.callback(canary.close)
        kube.create(Namespace(metadata=ObjectMeta(name=NS)))
        stack.callback(kube.delete, Namespace, NS)
        kube.create(route(NS, MONITOR, target.host))
        apiserver = int(cluster.server.rsplit(":", 1)[1])
        zones: dict[str, Zone] = {}
        for member, where in ZONES.items():
            netns = NetNS()
            stack.callback(netns.close)
            api, data = netns.link(), netns.link()
            relay = Relay(api.host_address, apiserver)
            stack.callback(relay.close)
            config = folder / f"{member}.kubeconfig"
            config.write_text(yaml.safe_dump(kubeconfig(f"https://{relay.address}:{relay.port}", OPERATOR_TOKEN,
                                                        OPERATOR_USER)))
            op = Zoned(cluster, folder / f"{member}.log",
                       ("--member-name", member, "--lease-namespace", LEASE_NS, "--location", where,
                        "--canary-url", f"http://{canary.host}/readyz"),
                       kubeconfig=config, launch=lambda command, ns=netns: ns.command(*command), address=api.ns_address)
            zones[member] = Zone(netns, api, data, op, (target_address, canary_address))
            zones[member].connect()
        running: dict[str, Zoned] = {}
        for member, zone in zones.items():  # started together, then waited for: four start-ups overlap
            zone.operator.spawn()
            running[member] = zone.operator
            stack.callback(lambda op=zone.operator: op.stop() if op.proc and op.proc.poll() is None else None)
        for op in running.values():
            wait_for(op.ready, timeout=60, what=f"operator /readyz (log: {op.log_path})")
        kube.create(monitor())
        first = owners_of_monitor()
        wait_for(lambda: exported(running) == zones_of(*first), timeout=60,
                 what=f"{first} probing {MONITOR}, each from its zone")
        wait_for(lambda: get(kube, PrometheusRule, names.prometheus_rule_name(MONITOR), NS) is not None, timeout=30,
                 what="the monitor's PrometheusRule")
        rules = folder / "prometheus" / "rules"
        write_rules(kube, rules)
        paging = stack.enter_context(run_paging(folder / "alertmanager"))
        prom = stack.enter_context(run_prometheus(
            folder / "prometheus", targets=[f"{z.api.ns_address}:{z.operator.metrics_port}" for z in zones.values()],
            rules_dir=rules, alertmanager=paging.alertmanager.address))
        wait_for(lambda: len(prom.query(f'{QUORUM_RATIOS[0]}{{namespace="{NS}"}} == 0')) == 1 and len(prom.query(
            f'{names.location_error_ratio_record("5m")}{{namespace="{NS}"}} == 0')) == 3, timeout=60,
            what="the monitor's ratio and its three locations' ratios recorded, all 0")
        spare = next(m for m in ZONES if m not in first)
        yield Stack(kube, zones, running, target, target_address, prom, paging, first, spare)


# --- what a user reads ---------------------------------------------------------------------------

def pages(s: Stack) -> list[dict[str, Any]]:
    return [r.body for r in s.paging.sink.received(PAGERDUTY_PATH)]


def tickets(s: Stack, alertname: str) -> list[dict[str, str]]:
    """The labels of the distinct firing alerts named ``alertname`` the ticket webhook received."""
    seen = {tuple(sorted(a["labels"].items())) for r in s.paging.sink.received(TICKET_PATH)
            for a in r.body["alerts"] if a["labels"]["alertname"] == alertname and a["status"] == "firing"}
    return [dict(labels) for labels in sorted(seen)]


def highest(prom: Prometheus, record: str, since: float) -> float | None:
    """The largest sample of ``record`` (the test's monitor) since ``since`` (None: no sample)."""
    span = max(2, int(time.time() - since) + 1)
    found = prom.query(f'max_over_time({record}{{namespace="{NS}",monitor="{MONITOR}"}}[{span}s])')
    return max((float(s["value"][1]) for s in found), default=None)


def failures_counted(prom: Prometheus, location: str, since: float) -> float:
    span = max(2, int(time.time() - since) + 1)
    found = prom.query(f'sum(increase({names.PROBES_TOTAL}{{namespace="{NS}",monitor="{MONITOR}",'
                       f'location="{location}",result="failure"}}[{span}s]))')
    return sum(float(s["value"][1]) for s in found)


def detail_panel(title: str) -> dict[str, Any]:
    dash = json.loads((Path(__file__).resolve().parents[2] / "grafana" / "monitor-detail.json").read_text())
    [panel] = [p for p in dash["panels"] if p["title"] == title]
    return dict(panel)


def legend(template: str, labels: dict[str, str]) -> str:
    return re.sub(r"\{\{(\w+)\}\}", lambda m: labels.get(m.group(1), ""), template)


def lease_blind(kube: Client, member: str) -> bool:
    lease = kube.get(Lease, f"route-monitor-{member}", namespace=LEASE_NS)
    return (lease.metadata.annotations or {}).get(names.ANN_BLIND) == "true"


def locations(kube: Client) -> dict[str, str]:
    """status.locations: location -> member."""
    m = get(kube, RouteMonitor, MONITOR, NS) or {}
    return {where: e.get("member", "") for where, e in ((m.get("status") or {}).get("locations") or {}).items()}


def wait_locations(kube: Client, expected: dict[str, str], timeout: float) -> None:
    """Until status.locations (location -> member) is ``expected``; the last one seen in the error."""
    try:
        wait_for(lambda: locations(kube) == expected, timeout=timeout, what=f"status.locations: {expected}")
    except TimeoutError as e:
        raise AssertionError(f"{e}; last seen: {locations(kube)}") from None


# --- the tests, in order ---------------------------------------------------------------------------

def test_a_zone_cut_from_the_target_opens_one_ticket_and_spends_no_budget(stack: Stack) -> None:
    s, prom = stack, stack.prometheus
    cut = s.owners[1]
    where = ZONES[cut]
    cut_at = time.time()
    s.zones[cut].netns.unroute(s.target_address)
    s.paging.sink.wait_for(TICKET_PATH, lambda b: any(
        a["labels"]["alertname"] == names.ALERT_PARTIALLY_UNREACHABLE for a in b["alerts"]), timeout=120,
        what=f"the PartiallyUnreachable ticket for {where}")
    assert [(t["monitor"], t[names.LABEL_LOCATION]) for t in tickets(s, names.ALERT_PARTIALLY_UNREACHABLE)] == [
        (MONITOR, where)]
    assert pages(s) == [], "one zone failing alone never pages"
    assert failures_counted(prom, where, cut_at) > 10, "the cut zone's failures are counted (its canary answers)"
    assert (highest(prom, names.location_error_ratio_record("5m"), cut_at) or 0) > 0.3
    assert (highest(prom, names.reachability_record("5m"), cut_at) or 0) > 0
    for record in QUORUM_RATIOS:  # under the quorum: nothing failed, at any evaluation since the cut
        assert highest(prom, record, cut_at) == 0, record
    tile = highest(prom, names.errors_increase_record("5m"), cut_at)
    assert tile in (None, 0), f"a tile counted {tile} failures"
    assert highest(prom, names.BUDGET_REMAINING_RECORD, cut_at) in (None, 1)
    panel = detail_panel("Availability (5m) per location")  # what the dashboard draws, from this Prometheus
    drawn = {legend(t["legendFormat"], r["metric"]): float(r["value"][1]) for t in panel["targets"]
             for r in prom.query(t["expr"].replace("$namespace", NS).replace("$monitor", MONITOR))}
    line = f"{NS}/{MONITOR}"
    assert set(drawn) == {*(f"{line} from {ZONES[m]}" for m in s.owners), f"{line} uptime (quorum)",
                          f"{line} reachability"}, drawn
    assert drawn[f"{line} from {where}"] < 1 and drawn[f"{line} reachability"] < 1, drawn
    assert drawn[f"{line} uptime (quorum)"] == 1 == min(v for k, v in drawn.items() if k.endswith(
        tuple(f"from {ZONES[m]}" for m in s.owners if m != cut))), drawn
    s.zones[cut].netns.route(s.target_address, s.zones[cut].data)


def test_a_blind_zone_is_replaced_counts_nothing_and_opens_one_ticket(stack: Stack) -> None:
    s, prom = stack, stack.prometheus
    blind = s.owners[2]
    blind_at = time.time()
    s.zones[blind].data.cut()
    wait_for(lambda: lease_blind(s.kube, blind), timeout=20, what=f"{blind}'s Lease marked blind")
    kept = zones_of(s.owners[0], s.owners[1], s.spare)
    wait_for(lambda: exported(s.running) == kept, timeout=TAKEOVER, what=f"the spare probing instead: {kept}")
    took = time.time() - blind_at
    wait_locations(s.kube, {where: member for member, where in kept.items()}, timeout=30)
    s.paging.sink.wait_for(TICKET_PATH, lambda b: any(a["labels"]["alertname"] == PROBER_BLIND for a in b["alerts"]),
                           timeout=60, what="the ProberBlind ticket")
    assert len(tickets(s, PROBER_BLIND)) == 1
    assert pages(s) == [], "a blind zone never pages"
    wait_for(lambda: len(prom.query(f'sum by (location) (increase({names.PROBES_TOTAL}{{namespace="{NS}",'
                                    f'monitor="{MONITOR}"}}[5s])) > 0')) == 3, timeout=15,
             what="three zones counting probes")
    counting = {r["metric"][names.LABEL_LOCATION] for r in prom.query(
        f'sum by (location) (increase({names.PROBES_TOTAL}{{namespace="{NS}",monitor="{MONITOR}"}}[5s])) > 0')}
    assert counting == set(kept.values()), "the monitor keeps three vantages"
    assert failures_counted(prom, ZONES[blind], blind_at) == 0, "the blind zone counts no failure"
    for record in QUORUM_RATIOS:
        assert highest(prom, record, blind_at) == 0, record

    s.zones[blind].data.restore()
    s.zones[blind].connect()
    wait_for(lambda: not lease_blind(s.kube, blind), timeout=30, what=f"{blind}'s blind mark cleared")
    wait_for(lambda: exported(s.running) == zones_of(*s.owners), timeout=30, what=f"{blind} probing again")
    assert took <= TAKEOVER, took
    print(f"replaced after {took:.1f}s")


def test_the_target_down_everywhere_pages_within_todays_detection_time(stack: Stack) -> None:
    s = stack
    down_at = time.time()
    s.target.status = 503
    page = s.paging.sink.wait_for(PAGERDUTY_PATH, lambda b: b["event_action"] == "trigger", timeout=DETECTION_S + 60,
                                  what="the page")
    took = page.at - down_at
    assert page.body["payload"]["source"] == f"{NS}/{MONITOR}"
    assert page.body["payload"]["custom_details"]["alertname"] == names.ALERT_ERROR_BUDGET_BURN
    assert took <= DETECTION_S + INTERVAL_S, f"paged {took:.0f}s after the target went down"
    assert [p["event_action"] for p in pages(s)] == ["trigger"], "one page"
    print(f"paged after {took:.1f}s (detection time {DETECTION_S:.0f}s)")


def test_a_killed_vantage_is_replaced_within_the_takeover_time(stack: Stack) -> None:
    s = stack
    killed = s.owners[0]
    killed_at = time.time()
    s.running.pop(killed).stop(signal.SIGKILL)
    kept = zones_of(s.owners[1], s.owners[2], s.spare)
    wait_for(lambda: exported(s.running) == kept, timeout=TAKEOVER + 15, what=f"three vantages again: {kept}")
    took = time.time() - killed_at
    assert took <= TAKEOVER + 2, f"took {took:.1f}s"  # + a /metrics read
    wait_locations(s.kube, {where: member for member, where in kept.items()}, timeout=30)
    print(f"three vantages again after {took:.1f}s")
