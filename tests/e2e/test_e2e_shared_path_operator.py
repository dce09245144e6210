"""One page per cause with the operator, end to end: a real control plane, ``route-monitor
operator`` deriving the paths from what router shards and a gateway controller write (written
here controller-style), real Prometheus loading the PrometheusRules the operator applied and the
shared-path rules (``route-monitor rules --operator``), Alertmanager running the shipped
configuration and the PagerDuty stand-in.

Namespace ``e2e-paths``, every monitor probed every second, one loopback backend behind:

- ``a0``..``a7``: Routes admitted by router shard ``a`` (a proxy process, ``tests/support/shardproxy.py``);
- ``b0``..``b2``: Routes admitted by shard ``b`` (another proxy);
- ``d0``..``d4``: Routes admitted by shard ``c`` whose hosts are names the operator resolves
  through a test DNS server (``tests/support/dnsserver.py``: its own ``/etc/resolv.conf``);
- ``g0``..``g3``: HTTPRoutes accepted by Gateway ``edge`` (a third proxy; host ``localhost``, from
  ``/etc/hosts``), so ``dns:cluster`` has the 5 ``d*`` and 4 ``g*`` monitors.

The shared-path thresholds are the defaults (K = 3, F = 50%); ``--shared-path-hold 10s`` keeps the
recovery short. The SharedPathDown route waits 10 s before its first notification (30 s as shipped,
1 s for every other route here), so the incident names every monitor failing together, not the
first three seen.

1. Shard ``a`` and the Gateway's proxy are stopped and the DNS server stops answering, at once:
   exactly one incident per cause (``router:a`` 8 monitors, ``gateway:e2e-paths/edge`` 4,
   ``dns:cluster`` 5), none for ``router:b``, ``router:c`` (its monitors fail for DNS only) or any
   monitor, while every affected monitor burns its budget; the prober is not blind (its canary,
   the API server by IP, answers) and the DNS failures are counted against the targets' budgets.
   Everything back: the three incidents resolve and the stand-in holds no open incident.
2. Then ``b0`` (behind the healthy shard ``b``) breaks, and ``a0`` and ``a1`` (2 of shard ``a``'s 8,
   fewer than K): three pages of their own, ``b0``'s within today's detection time (the page's
   ``for:`` and a few evaluations), no SharedPathDown, and still no page for any monitor that was
   behind the shared outage.

The tests run in this order and share one stack (about 2.5 minutes together on an idle 2-core
machine, 4.5 under a load average of 25).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from alert_rules import names
from alert_rules.model import DEFAULT_EVALUATION_MS
from alert_rules.path_rules import settle_ms
from route_monitor.cli.demo_targets import Reply
from tests.support import dnsserver
from tests.support.cluster import Cluster
from tests.support.gateway import gateway, httproute, set_parent_status
from tests.support.net import free_port, wait_for
from tests.support.operator import VENV_BIN, Operator, admin_client, admit, annotations, get, route
from tests.support.prometheus import (
    ALERTMANAGER_DIR,
    Paging,
    Prometheus,
    adapt_alertmanager_config,
    run_alertmanager,
    run_prometheus,
)
from tests.support.resources import PrometheusRule
from tests.support.servers import Targets
from tests.support.shardproxy import Shard
from tests.support.sink import PAGERDUTY_PATH, TICKET_PATH, recording_server

pytestmark = [pytest.mark.cluster, pytest.mark.prometheus, pytest.mark.timeout(420)]

NS = "e2e-paths"
BEHIND_A = tuple(f"a{i}" for i in range(8))
BEHIND_B = tuple(f"b{i}" for i in range(3))
BY_NAME = tuple(f"d{i}" for i in range(5))
BEHIND_GATEWAY = tuple(f"g{i}" for i in range(4))
MONITORS = (*BEHIND_A, *BEHIND_B, *BY_NAME, *BEHIND_GATEWAY)
DOMAIN = "paths.test"
GATEWAY_PATH = f"gateway:{NS}/edge"
PATHS = {"router:a": 8, "router:b": 3, "router:c": 5, GATEWAY_PATH: 4, "dns:cluster": 9}
PAGE_THRESHOLD = "0.0144"
"""14.4 x the 0.1% budget: the 1h/5m pair's threshold for these 99.9% monitors."""
DETECTION_S = settle_ms(1000, DEFAULT_EVALUATION_MS) / 1000 + 20
"""Today's detection time of a single monitor's outage under the operator's rules: the page's
``for:`` (one probe interval or 30 s, plus one 30 s evaluation), its burn holding after a few
failed probes, a few 1 s evaluations and Alertmanager's 1 s group wait."""
SHARED_GROUP_WAIT = "10s"


class Backend:
    """The application behind every shard: 200, or 503 on the request paths in ``broken``."""

    def __init__(self) -> None:
        self.broken: set[str] = set()

    def __call__(self, method: str, target: str) -> Reply:
        return Reply(status=503, body=b"broken\n") if target in self.broken else Reply(body=b"ok\n")


@dataclass(frozen=True)
class Stack:
    kube: Client
    operator: Operator
    prometheus: Prometheus
    paging: Paging
    backend: Backend
    a: Shard
    edge: Shard
    dns: dnsserver.DNSServer


def shipped_alertmanager(paging_dir: Path, pagerduty_url: str, ticket_url: str) -> str:
    """The shipped configuration with local endpoints and 1 s group timings, the SharedPathDown
    route's group wait :data:`SHARED_GROUP_WAIT` (shipped: 30 s, for the same reason)."""
    key = paging_dir / "routing-key"
    key.write_text("R0UTEM0N1T0RTESTKEY000000000000\n")
    cfg = yaml.safe_load(adapt_alertmanager_config((ALERTMANAGER_DIR / "alertmanager.yml").read_text(),
                                                   pagerduty_url=pagerduty_url, ticket_url=ticket_url,
                                                   routing_key_file=key))

    def shared(route: dict[str, Any]) -> None:
        if f'alertname="{names.ALERT_SHARED_PATH_DOWN}"' in route.get("matchers", []):
            route["group_wait"] = SHARED_GROUP_WAIT
        for sub in route.get("routes", []):
            shared(sub)

    shared(cfg["route"])
    return str(yaml.safe_dump(cfg, sort_keys=False))


@contextmanager
def run_paging_stack(folder: Path) -> Iterator[Paging]:
    folder.mkdir(parents=True, exist_ok=True)
    with recording_server() as sink, run_alertmanager(folder, config_text=shipped_alertmanager(
            folder, sink.url(PAGERDUTY_PATH), sink.url(TICKET_PATH))) as am:
        yield Paging(alertmanager=am, sink=sink)


def create_monitors(kube: Client, ports: dict[str, int]) -> None:
    ann = annotations()
    for shard, monitors, host in (("a", BEHIND_A, f"127.0.0.1:{ports['a']}"), ("b", BEHIND_B, f"127.0.0.1:{ports['b']}")):
        for m in monitors:
            kube.create(route(NS, m, host, ann, path=f"/{m}"))
            admit(kube, NS, m, host, router=shard)
    for m in BY_NAME:
        host = f"{m}.{DOMAIN}:{ports['backend']}"
        kube.create(route(NS, m, host, ann, path=f"/{m}"))
        admit(kube, NS, m, host, router="c")
    kube.create(gateway(NS, "edge", ("web", "HTTP", ports["edge"])))
    for m in BEHIND_GATEWAY:
        kube.create(httproute(NS, m, ["localhost"], f"/{m}", ann))
        set_parent_status(kube, NS, m)


def write_rules(kube: Client, rules: Path) -> None:
    """What prometheus-operator loads: each monitor's PrometheusRule, and the operator's own rules
    with the shared-path group (``route-monitor rules --operator``, as ``deploy/`` ships them)."""
    rules.mkdir(parents=True, exist_ok=True)
    for m in MONITORS:
        rule = get(kube, PrometheusRule, names.prometheus_rule_name(m), NS)
        assert rule is not None, m
        (rules / f"{m}.yml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    subprocess.run([str(VENV_BIN / "route-monitor"), "rules", "--operator", "--format", "prometheus",
                    "--shared-path-hold", "10s", "--output", str(rules / "route-monitor-operator.yml")], check=True)


@pytest.fixture(scope="module")
def stack(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    why = dnsserver.usable()
    if why:
        pytest.skip(why)
    folder = tmp_path_factory.mktemp("e2e-paths")
    kube = admin_client(cluster)
    with ExitStack() as stack:
        kube.create(Namespace(metadata=ObjectMeta(name=NS)))
        stack.callback(kube.delete, Namespace, NS)
        targets = Targets(folder)
        stack.callback(targets.close)
        backend = Backend()
        backend_port = int(targets.http(backend).rpartition(":")[2])
        shards = {s: Shard(free_port(), backend_port, folder / f"shard-{s}.log") for s in ("a", "b", "edge")}
        for shard in shards.values():
            shard.start()
            stack.callback(shard.stop)
        dns = dnsserver.DNSServer({f"{m}.{DOMAIN}": "127.0.0.1" for m in BY_NAME})
        stack.callback(dns.close)
        resolv = dns.resolv_conf(folder / "resolv.conf", timeout=1, attempts=1)
        # this namespace only: monitors other modules left on this worker's control plane would
        # count on the cluster's DNS path too
        operator = Operator(cluster, folder / "operator.log", ("--namespace", NS),
                            launch=lambda command: dnsserver.private_resolver(resolv, command))
        operator.start()
        stack.callback(operator.stop)
        create_monitors(kube, {"backend": backend_port, **{s: shard.port for s, shard in shards.items()}})
        wait_for(lambda: all(get(kube, PrometheusRule, names.prometheus_rule_name(m), NS) for m in MONITORS),
                 timeout=120, what="every monitor's PrometheusRule")
        write_rules(kube, folder / "prometheus" / "rules")
        paging = stack.enter_context(run_paging_stack(folder / "alertmanager"))
        prom = stack.enter_context(run_prometheus(folder / "prometheus", targets=[f"127.0.0.1:{operator.metrics_port}"],
                                                  rules_dir=folder / "prometheus" / "rules",
                                                  alertmanager=paging.alertmanager.address))
        wait_for(lambda: path_values(prom, names.PATH_MONITORS_RECORD) == PATHS, timeout=120,
                 what=f"the paths' monitors recorded: {PATHS}")
        wait_for(lambda: len(prom.query(f'{names.PROBES_TOTAL}{{namespace="{NS}",result="success"}} > 3')) ==
                 len(MONITORS), timeout=120, what="every monitor probed successfully")
        yield Stack(kube, operator, prom, paging, backend, shards["a"], shards["edge"], dns)


def path_values(prom: Prometheus, record: str) -> dict[str, int]:
    return {s["metric"][names.LABEL_PATH]: int(float(s["value"][1])) for s in prom.query(record)}


def pages(stack: Stack, since: int = 0) -> list[dict[str, Any]]:
    return [r.body for r in stack.paging.sink.received(PAGERDUTY_PATH)[since:]]


def per_monitor_alerts(prom: Prometheus) -> list[dict[str, Any]]:
    """The monitors' own alerts, pending or firing (everything but the installation-wide ones)."""
    return prom.query(f'ALERTS{{namespace="{NS}",alertname!="{names.ALERT_SHARED_PATH_DOWN}"}}')


def test_router_gateway_and_dns_outages_are_one_incident_each_and_resolve(stack: Stack) -> None:
    prom, sink = stack.prometheus, stack.paging.sink
    assert pages(stack) == [], "all healthy: nothing pages"

    stack.a.stop()
    stack.edge.stop()
    stack.dns.answers.update({name: dnsserver.SILENT for name in stack.dns.answers})
    expected = {"router:a": len(BEHIND_A), GATEWAY_PATH: len(BEHIND_GATEWAY), "dns:cluster": len(BY_NAME)}
    wait_for(lambda: {p["payload"]["source"] for p in pages(stack) if p["event_action"] == "trigger"} >= set(expected),
             timeout=90, what=f"a page for each of {sorted(expected)}")
    triggers = [p for p in pages(stack) if p["event_action"] == "trigger"]
    assert sorted(p["payload"]["source"] for p in triggers) == sorted(expected), triggers
    for page in triggers:
        path = page["payload"]["source"]
        assert page["payload"]["custom_details"]["alertname"] == names.ALERT_SHARED_PATH_DOWN
        assert page["payload"]["summary"] == f"{path} is down: {expected[path]} monitors behind it are failing"

    # every affected monitor burns its budget (the DNS failures too), and none of them pages
    affected = f'namespace="{NS}",monitor=~"{"|".join((*BEHIND_A, *BEHIND_GATEWAY, *BY_NAME))}"'
    wait_for(lambda: len(prom.query(f"{names.error_ratio_record('5m')}{{{affected}}} > {PAGE_THRESHOLD}")) == 17,
             timeout=30, what="every monitor behind a failed path over its page threshold")
    assert per_monitor_alerts(prom) == [], "no monitor's own alert is even pending while its path is down"
    assert {a["labels"][names.LABEL_PATH] for a in prom.firing(names.ALERT_SHARED_PATH_DOWN)} == set(expected)
    dns_failed = prom.query(f'{names.PROBE_FAILURES_TOTAL}{{namespace="{NS}",reason="{names.REASON_DNS_ERROR}"}} > 0')
    assert sorted(s["metric"]["monitor"] for s in dns_failed) == sorted(BY_NAME)
    assert stack.operator.sample(names.PROBER_BLIND) == 0, "a cluster DNS outage does not blind the prober"
    assert not prom.query(f'{names.PROBES_EXCLUDED_TOTAL}{{reason="{names.EXCLUDED_BLIND}"}} > 0')

    stack.a.start()
    stack.edge.start()
    stack.dns.answers.update({name: "127.0.0.1" for name in stack.dns.answers})
    keys = {p["dedup_key"] for p in triggers}
    wait_for(lambda: {p["dedup_key"] for p in pages(stack) if p["event_action"] == "resolve"} >= keys, timeout=120,
             what="the three incidents resolved")
    sent = pages(stack)
    assert sorted((p["event_action"], p["payload"]["source"]) for p in sent) == sorted(
        [("trigger", p) for p in expected] + [("resolve", p) for p in expected]), sent
    assert sink.received(TICKET_PATH) == [], "no ticket either"
    assert per_monitor_alerts(prom) == [], "no monitor's own alert pending after the recovery"


def test_single_breaks_page_on_their_own(stack: Stack) -> None:
    prom = stack.prometheus
    before = len(pages(stack))
    stack.backend.broken.update({"/b0", "/a0", "/a1"})
    broken_at = time.time()
    sources = {f"{NS}/b0", f"{NS}/a0", f"{NS}/a1"}
    b0 = stack.paging.sink.wait_for(PAGERDUTY_PATH, lambda b: b["payload"]["source"] == f"{NS}/b0", timeout=120,
                                    what="b0's own page")
    assert b0.at - broken_at <= DETECTION_S, f"b0 paged {b0.at - broken_at:.0f}s after it broke"
    wait_for(lambda: {p["payload"]["source"] for p in pages(stack, before)} >= sources, timeout=120,
             what="a0's and a1's own pages")
    assert path_values(prom, names.PATH_FAILING_RECORD).get("router:a") == 2
    assert path_values(prom, names.PATH_DOWN_RECORD)["router:a"] == 0, "2 failing monitors are fewer than K"
    sent = pages(stack, before)
    assert sorted((p["event_action"], p["payload"]["source"]) for p in sent) == sorted(
        ("trigger", s) for s in sources), "three pages of their own, nothing else"
    assert {p["payload"]["custom_details"]["alertname"] for p in sent} == {names.ALERT_ERROR_BUDGET_BURN}
