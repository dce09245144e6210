"""``--scrape-per-namespace`` (issue 12): probe series reach a Prometheus that enforces namespaces.

Against a control plane of its own (with prometheus-operator's real ServiceMonitor CRD), the
operator running as the test user bound to the base ClusterRole plus the opt-in RBAC of
``deploy/overlays/openshift-user-workload``, and a real Prometheus configured as
prometheus-operator configures one with ``enforcedNamespaceLabel`` (``tests/support/promoperator.py``:
``honor_labels: false``, the ServiceMonitor's namespace as the ``namespace`` target label, rules
scoped to their PrometheusRule's namespace). Covers:

- in a namespace with a monitor, the operator creates the Service, the EndpointSlice (the
  version this apiserver serves: v1beta1 on 1.20) listing the ready addresses of its own
  metrics Service, and a ServiceMonitor asking ``/metrics?namespace=NS``;
- scraped that way, a failing Route's burn alert fires *in the application namespace* and
  ``RouteMonitorProbesAbsent`` stays quiet (not even pending) for it;
- the control: the same Prometheus scraping one central ServiceMonitor labels every series
  ``namespace="route-monitor"``: no burn alert, ProbesAbsent pending for the application's monitor;
- a foreign Service at the name is left untouched and nothing else of ours is written there
  (that namespace's ProbesAbsent goes pending: its series are not scraped, and it says so);
- ``/metrics?namespace=NS`` renders only that namespace's series; a bad name is a 400;
- the last monitor leaving a namespace removes the three objects;
- with two replicas, the duty of a namespace moves with the Leases: the remaining replica
  removes objects that the stopped one wrote.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from lightkube import Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, Service

from alert_rules import names
from route_monitor.operator.replicas.sharding import owner_of
from tests.support import upstream_crds
from tests.support.cluster import ADMIN_TOKEN, OPERATOR_USER, ROOT, Cluster, start_cluster
from tests.support.net import wait_for
from tests.support.operator import Operator, Target, admin_client, annotations, get, route
from tests.support.promoperator import enforce_namespace, enforced_rule_groups, run_enforcing_prometheus, scrape_jobs
from tests.support.resources import PrometheusRule, Route, ServiceMonitor

pytestmark = [pytest.mark.cluster, pytest.mark.prometheus, pytest.mark.timeout(240)]
RBAC = ROOT / "deploy" / "overlays" / "openshift-user-workload" / "scrape-per-namespace-rbac.yaml"
Slice = create_namespaced_resource("discovery.k8s.io", "v1beta1", "EndpointSlice", "endpointslices")
NAME = names.SCRAPE_OBJECT_NAME


def _post(cluster: Cluster, path: str, body: dict[str, Any]) -> None:
    r = httpx.post(f"{cluster.server}{path}", json=body, verify=False, timeout=30,
                   headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert r.status_code == 201, r.text


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("scrape-cluster"))
    try:
        _post(c, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
              upstream_crds.load(upstream_crds.SERVICEMONITOR))
        for obj in yaml.safe_load_all(RBAC.read_text()):  # the opt-in RBAC, bound to the operator's test user
            if obj["kind"].endswith("Binding"):
                obj["subjects"] = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": OPERATOR_USER}]
            ns = obj["metadata"].get("namespace")
            plural = obj["kind"].lower() + "s"
            _post(c, f"/apis/rbac.authorization.k8s.io/v1/{'namespaces/' + ns + '/' if ns else ''}{plural}", obj)
        yield c
    finally:
        c.stop()


def operator_slice(port: int) -> dict[str, Any]:
    """What Kubernetes' EndpointSlice controller keeps for the operator's metrics Service (one
    ready pod; here the operator process on loopback)."""
    return {"apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice",
            "metadata": {"name": "route-monitor-metrics-x1", "namespace": "route-monitor",
                         "labels": {"kubernetes.io/service-name": "route-monitor-metrics"}},
            "addressType": "IPv4", "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}],
            "ports": [{"name": "metrics", "port": port, "protocol": "TCP"}]}


def listed(kube: Client, res: Any) -> list[dict[str, Any]]:
    return [o.to_dict() if hasattr(o, "to_dict") else dict(o) for o in kube.list(res, namespace="*")]


def alerts(prometheus: Any, name: str) -> list[dict[str, Any]]:
    return [a for a in prometheus.api("alerts")["alerts"] if a["labels"]["alertname"] == name]


def test_enforce_namespace_rewrites_every_selector() -> None:
    expr = ('sum(rate(route_monitor_probes_total{namespace="shop",monitor="a"}[5m])) / '
            'ns:route_monitor_x:ratio{monitor="a",exported_namespace="z"}')
    assert enforce_namespace(expr, "other") == (
        'sum(rate(route_monitor_probes_total{namespace="other",monitor="a"}[5m])) / '
        'ns:route_monitor_x:ratio{namespace="other",monitor="a",exported_namespace="z"}')
    assert enforce_namespace("count(ns:route_monitor_x:ratio) or sum(route_monitor_probes_total)", "shop") == (
        'count(ns:route_monitor_x:ratio{namespace="shop"}) or sum(route_monitor_probes_total{namespace="shop"})')


def every_30s(rule_file: dict[str, Any]) -> dict[str, Any]:
    """The monitors' tile-long groups (``RouteMonitorProbesAbsent``, tickets) evaluated every 30 s
    instead of every 5 minutes: this test checks which namespace's alerts fire, not their cadence,
    and a 5-minute group's first evaluation falls anywhere in its first 5 minutes."""
    return {"groups": [{**g, "interval": "30s"} if g["name"].endswith("/long-windows") and
                       "route-monitor.slis" not in g["name"] else g for g in rule_file["groups"]]}


def test_burn_alerts_fire_in_the_application_namespace(fresh: Cluster, tmp_path: Path) -> None:
    kube = admin_client(fresh)
    for ns in ("shop", "teamowned"):
        kube.create(Namespace(metadata=ObjectMeta(name=ns)))
    foreign = kube.create(Service.from_dict({"metadata": {"name": NAME, "namespace": "teamowned"},
                                             "spec": {"ports": [{"name": "web", "port": 80}]}}))
    op = Operator(fresh, tmp_path / "operator.log", ("--scrape-per-namespace",))
    kube.create(Slice.from_dict(operator_slice(op.metrics_port)))
    failing, healthy = Target(), Target()
    op.start()
    try:
        kube.create(route("shop", "checkout", failing.host, annotations()))
        kube.create(route("teamowned", "app", healthy.host, annotations()))
        # an annotated monitor warms up until its first success (Contract 9): fail after that
        wait_for(lambda: failing.count() >= 1, timeout=30, what="checkout's first (successful) probe")
        time.sleep(1.5)
        failing.status = 500
        for res in (Service, Slice, ServiceMonitor):
            wait_for(lambda r=res: get(kube, r, NAME, "shop") is not None, timeout=30,
                     what=f"{res.__name__} {NAME} in shop (log: {op.log_path})")
        wait_for(lambda: get(kube, PrometheusRule, "route-monitor-app", "teamowned") is not None, timeout=30,
                 what="teamowned's rule")
        sm = get(kube, ServiceMonitor, NAME, "shop")
        assert sm is not None and sm["spec"]["endpoints"][0]["params"] == {"namespace": ["shop"]}
        # the API server refuses loopback addresses in v1 Endpoints (not in v1beta1 slices): said
        # once, and the slice and the ServiceMonitor are written all the same
        # (tests/e2e/test_kubernetes_discovery.py lists the operator at a node-like address instead)
        assert op.log_path.read_text().count("Endpoints shop/route-monitor-probes not written") == 1
        es = get(kube, Slice, NAME, "shop")
        assert es is not None and es["endpoints"] == [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]
        assert es["ports"][0]["port"] == op.metrics_port
        # the foreign Service: logged by the pass that follows teamowned's first monitor (within a
        # second of it, which may be after that monitor's rule), untouched, nothing of ours beside it
        wait_for(lambda: "Service teamowned/route-monitor-probes exists and was not created by route-monitor"
                 in op.log(200), timeout=15, what=f"the foreign Service logged (log: {op.log_path})")
        assert get(kube, ServiceMonitor, NAME, "teamowned") is None and get(kube, Slice, NAME, "teamowned") is None
        assert kube.get(Service, NAME, namespace="teamowned").metadata.resourceVersion == \
            foreign.metadata.resourceVersion

        page = httpx.get(f"http://127.0.0.1:{op.metrics_port}/metrics", params={"namespace": "shop"}, timeout=5).text
        assert 'namespace="shop"' in page and 'namespace="teamowned"' not in page
        assert "route_monitor_reconcile" not in page  # the operator's own health is not in a namespace's page
        bad = httpx.get(f"http://127.0.0.1:{op.metrics_port}/metrics", params={"namespace": "Not/A-Name"}, timeout=5)
        assert bad.status_code == 400

        jobs = scrape_jobs(listed(kube, ServiceMonitor), listed(kube, Service), listed(kube, Slice))
        rules = {f"{r['metadata']['namespace']}-{r['metadata']['name']}": every_30s(enforced_rule_groups(r))
                 for r in listed(kube, PrometheusRule)}
        with run_enforcing_prometheus(tmp_path / "prometheus", jobs, rules) as prom:
            wait_for(lambda: any(a["state"] == "firing" and a["labels"].get("severity") == "critical"
                                 for a in alerts(prom, "RouteMonitorErrorBudgetBurn")), timeout=150,
                     what="the page for shop/checkout (after its 1m for:)")
            [series] = prom.query('route_monitor_probes_total{result="failure"}')
            assert series["metric"]["namespace"] == "shop" and series["metric"]["exported_namespace"] == "shop"
            assert series["metric"]["job"] == NAME
            fired = [a for a in alerts(prom, "RouteMonitorErrorBudgetBurn") if a["state"] == "firing"]
            assert {(a["labels"]["namespace"], a["labels"]["monitor"]) for a in fired} == {("shop", "checkout")}
            absent = {(a["labels"]["namespace"], a["state"]) for a in alerts(prom, "RouteMonitorProbesAbsent")}
            assert ("shop", "pending") not in absent and ("shop", "firing") not in absent
            assert ("teamowned", "pending") in absent  # not scraped there (the foreign Service): it says so

        # the same Prometheus scraping through one central ServiceMonitor instead (deploy/base's,
        # in route-monitor): every series gets namespace="route-monitor" and no rule of shop matches
        central = [{"job_name": "serviceMonitor/route-monitor/route-monitor/0", "honor_labels": False,
                    "scrape_interval": "1s", "scrape_timeout": "1s", "static_configs": [{
                        "targets": [f"127.0.0.1:{op.metrics_port}"],
                        "labels": {"namespace": "route-monitor", "service": "route-monitor-metrics",
                                   "endpoint": "metrics", "job": "route-monitor-metrics"}}]}]
        with run_enforcing_prometheus(tmp_path / "central", central, rules) as prom:
            wait_for(lambda: bool(prom.query('route_monitor_probes_total{exported_namespace="shop"}')), timeout=30,
                     what="the central scrape")
            wait_for(lambda: ("shop", "pending") in {(a["labels"]["namespace"], a["state"])
                                                     for a in alerts(prom, "RouteMonitorProbesAbsent")},
                     timeout=30, what="ProbesAbsent pending for shop under a central ServiceMonitor")
            [series] = prom.query('route_monitor_probes_total{exported_namespace="shop",result="failure"}')
            assert series["metric"]["namespace"] == "route-monitor"
            assert not alerts(prom, "RouteMonitorErrorBudgetBurn")

        kube.delete(Route, "checkout", namespace="shop")
        for res in (ServiceMonitor, Slice, Service):
            wait_for(lambda r=res: get(kube, r, NAME, "shop") is None, timeout=60,
                     what=f"{res.__name__} in shop removed with its last monitor (log: {op.log_path})")
    finally:
        op.stop()
        failing.close()
        healthy.close()


def test_one_replica_writes_each_namespace_and_the_duty_moves_with_the_leases(fresh: Cluster, tmp_path: Path) -> None:
    """Two replicas: the owner of ``(ns, "")`` writes ns's objects. The owner of one namespace stops
    (its Lease goes); when that namespace's last monitor is deleted, the other replica, which never
    wrote there, removes the objects."""
    kube = admin_client(fresh)
    members = ("replica-a", "replica-b")
    spaces = [f"r{i}" for i in range(8)]
    handed = next(ns for ns in spaces if owner_of((ns, ""), members) == "replica-a")
    target = Target()
    replicas = [Operator(fresh, tmp_path / f"{m}.log", ("--scrape-per-namespace", "--member-name", m)) for m in members]
    try:
        for op in replicas:
            op.start()
        for ns in spaces:
            kube.create(Namespace(metadata=ObjectMeta(name=ns)))
            kube.create(route(ns, "web", target.host, annotations()))
        for ns in spaces:
            wait_for(lambda n=ns: get(kube, ServiceMonitor, NAME, n) is not None, timeout=60,
                     what=f"ServiceMonitor in {ns}")
        assert replicas[0].stop() == 0  # SIGTERM: deletes its Lease, replica-b owns everything now
        kube.delete(Route, "web", namespace=handed)
        for res in (ServiceMonitor, Slice, Service):
            wait_for(lambda r=res: get(kube, r, NAME, handed) is None, timeout=60,
                     what=f"{res.__name__} in {handed} removed by the remaining replica (log: {replicas[1].log_path})")
        others = [ns for ns in spaces if ns != handed]
        assert all(get(kube, ServiceMonitor, NAME, ns) is not None for ns in others)
    finally:
        for op in replicas:
            op.stop()
        target.close()
