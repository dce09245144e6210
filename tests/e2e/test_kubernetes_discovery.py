"""The scrape jobs users get: the job name prometheus-operator gives route-monitor's targets, and
what Prometheus' Kubernetes discovery finds of the objects the operator writes (issue 21).

Rendered (``kubectl kustomize``), for ``deploy/`` and every overlay: the job prometheus-operator
derives for the metrics Service (its ServiceMonitor's ``jobLabel``, else the Service's name) is
exactly the job every operator alert selects; the plain-Prometheus scrape job in
``deploy/prometheus`` is the job its rules select.

Live, against the real apiserver: objects applied as rendered (the metrics Service, Prometheus'
Role) or written by the real operator, found by Prometheus 2.42's Kubernetes discovery (reproduced
in ``tests/support/kubesd.py``, since Debian's Prometheus has none, as the Prometheus
ServiceAccount with a bound token), relabelled and scraped by a real Prometheus with the scrape
job prometheus-operator generates (``tests/support/promcfg.py``), with the layout's own alert rules:

- every layout: ``up{job="route-monitor"}`` is 1 and ``RouteMonitorOperatorDown``'s expression is
  empty while an SLO exists; the control, the same ServiceMonitor without ``jobLabel``, names the
  job ``route-monitor-metrics`` and the page goes pending;
- the plain-Prometheus job, discovered with the ``endpoints`` role, is ``route-monitor``;
- ``--scrape-per-namespace``: the namespace's target is discovered with both roles
  (``endpoints``, prometheus-operator's default, from the v1 Endpoints the operator writes;
  ``endpointslice`` from its EndpointSlice, ``discovery.k8s.io/v1beta1`` on this 1.20 apiserver as
  Prometheus 2.42 picks it) and its probe series arrive labelled with the application namespace;
- the Endpoints follow the operator's ready replicas and go with the namespace's last monitor; a
  foreign Endpoints at the name is left untouched and nothing of ours is written after it;
  Kubernetes' EndpointSlice mirroring controller (running here) mirrors a control's Endpoints and
  leaves ours alone (no second slice listing the replicas again).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from lightkube import Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Endpoints, Namespace, Service, ServiceAccount

from alert_rules import names
from alert_rules.operator_alerts import OPERATOR_DOWN
from tests.support import kustomize, upstream_crds
from tests.support.cluster import ADMIN_TOKEN, KUBE_BIN, OPERATOR_USER, Cluster, start_cluster
from tests.support.kubesd import KubernetesSD, discovering
from tests.support.kustomize import DEPLOY, of_kind, render
from tests.support.net import wait_for
from tests.support.nodeaddr import node_address
from tests.support.operator import Operator, Target, admin_client, annotations, get, route
from tests.support.promcfg import (
    ENDPOINTS,
    ENDPOINTSLICE,
    job_name_of,
    namespaces_of,
    scrape_config,
    selectors_of_job,
    selects,
)
from tests.support.promoperator import enforced_rule_groups, run_enforcing_prometheus
from tests.support.resources import PrometheusRule, Route, ServiceMonitor

LAYOUTS = sorted(set(kustomize.LAYOUTS) - {"base"})
ENFORCING = {"openshift-user-workload"}
"""Layouts for a Prometheus with ``enforcedNamespaceLabel`` (and ``overrideHonorLabels``)."""
PLAIN_JOB = DEPLOY / "prometheus" / "route-monitor.scrape.yml"
PLAIN_RULES = DEPLOY / "prometheus" / "route-monitor-operator.rules.yml"
SCRAPE_RBAC = DEPLOY / "overlays" / "openshift-user-workload" / "scrape-per-namespace-rbac.yaml"
PROMETHEUS_SA = ("monitoring", "prometheus-k8s")
"""The ServiceAccount ``deploy/base/prometheus-role.yaml`` binds (kube-prometheus' Prometheus)."""
OPERATOR_NS = "route-monitor"
Slice = create_namespaced_resource("discovery.k8s.io", "v1beta1", "EndpointSlice", "endpointslices")
NAME = names.SCRAPE_OBJECT_NAME
kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


def operator_alerts(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [rule] = [r for r in of_kind(objects, "PrometheusRule") if r["metadata"]["name"] == "route-monitor-operator-alerts"]
    return rule


def alert_exprs(groups: list[dict[str, Any]]) -> list[str]:
    return [str(r["expr"]) for g in groups for r in g["rules"]]


# --- rendered -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("labels", "job_label", "expected"), [
    pytest.param({"app.kubernetes.io/name": "route-monitor"}, None, "route-monitor-metrics", id="no-jobLabel-service-name"),
    pytest.param({"app.kubernetes.io/name": "route-monitor"}, "app.kubernetes.io/name", "route-monitor", id="jobLabel"),
    pytest.param({}, "app.kubernetes.io/name", "route-monitor-metrics", id="label-missing-service-name"),
    pytest.param({"app.kubernetes.io/name": ""}, "app.kubernetes.io/name", "route-monitor-metrics", id="label-empty"),
])
def test_job_name_rule(labels: dict[str, str], job_label: str | None, expected: str) -> None:
    """prometheus-operator: ``job`` from the Service's name, replaced by the value of the label
    ``jobLabel`` names only when that label has a value (``regex: (.+)``)."""
    sm = {"metadata": {"namespace": "route-monitor", "name": "x"}, "spec": {"endpoints": [{"port": "metrics"}]}}
    if job_label:
        sm["spec"]["jobLabel"] = job_label
    svc = {"metadata": {"name": "route-monitor-metrics", "namespace": "route-monitor", "labels": labels}}
    assert job_name_of(sm, svc) == expected


@kubectl
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_layouts_servicemonitor_names_the_job_its_alerts_select(layout: str) -> None:
    objects = render(layout)
    selected = {job_name_of(sm, svc) for sm in of_kind(objects, "ServiceMonitor") for svc in of_kind(objects, "Service")
                if selects(sm, svc)}
    alert_jobs = selectors_of_job(alert_exprs(operator_alerts(objects)["spec"]["groups"]))
    assert alert_jobs == {"route-monitor"}
    assert selected == alert_jobs, f"{layout}: targets get job {selected}, the operator's alerts select {alert_jobs}"


def test_plain_prometheus_job_is_the_job_its_rules_select() -> None:
    [job] = yaml.safe_load(PLAIN_JOB.read_text())
    rules = yaml.safe_load(PLAIN_RULES.read_text())
    assert selectors_of_job(alert_exprs(rules["groups"])) == {job["job_name"]}


# --- live ---------------------------------------------------------------------------------------
def _post(cluster: Cluster, path: str, body: dict[str, Any]) -> None:
    r = httpx.post(f"{cluster.server}{path}", json=body, verify=False, timeout=30,
                   headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert r.status_code == 201, r.text


def kubectl_apply(cluster: Cluster, objects: list[dict[str, Any]]) -> None:
    out = subprocess.run(["kubectl", "--kubeconfig", str(cluster.admin_kubeconfig), "apply", "--server-side",
                          "--force-conflicts", "--field-manager=route-monitor-install", "-f", "-"],
                         input=yaml.safe_dump_all(objects), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def bound_token(cluster: Cluster, ns: str, name: str) -> str:
    r = httpx.post(f"{cluster.server}/api/v1/namespaces/{ns}/serviceaccounts/{name}/token", verify=False, timeout=10,
                   headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                   json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                         "spec": {"expirationSeconds": 3600}})
    assert r.status_code == 201, r.text
    return str(r.json()["status"]["token"])


def metrics_endpoints(port: int, addresses: tuple[str, ...]) -> list[dict[str, Any]]:
    """What Kubernetes' endpoints and EndpointSlice controllers keep for ``route-monitor-metrics``
    (its ready pods; here the operator process, at a node-like address of this machine)."""
    labels = {"kubernetes.io/service-name": "route-monitor-metrics",
              "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
    return [{"apiVersion": "v1", "kind": "Endpoints",
             "metadata": {"name": "route-monitor-metrics", "namespace": OPERATOR_NS},
             "subsets": [{"addresses": [{"ip": a} for a in addresses],
                          "ports": [{"name": "metrics", "port": port, "protocol": "TCP"}]}]},
            {"apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice",
             "metadata": {"name": "route-monitor-metrics-x1", "namespace": OPERATOR_NS, "labels": labels},
             "addressType": "IPv4", "endpoints": [{"addresses": [a], "conditions": {"ready": True}} for a in addresses],
             "ports": [{"name": "metrics", "port": port, "protocol": "TCP"}]}]


@dataclass
class Setup:
    cluster: Cluster
    kube: Client
    operator: Operator
    prometheus_token: str
    address: str
    """The operator's address as listed in its metrics Service's endpoints."""
    peer: str
    """Another address of the same kind where nothing listens (a second replica that is not up)."""


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    """A control plane of its own; the operator (``--scrape-per-namespace``, as the test user bound
    to the base ClusterRole and the overlay's opt-in RBAC) with one annotated Route in ``shop``;
    the metrics Service's endpoints; Prometheus' ServiceAccount with ``deploy/``'s Role in the
    operator's namespace and, in application namespaces, the read access a cluster's monitoring
    stack grants its Prometheus (OpenShift's user-workload Prometheus reads every namespace)."""
    workdir = tmp_path_factory.mktemp("discovery")
    (workdir / "cluster").mkdir()
    with node_address() as (address, peer):
        yield from _setup(workdir, address, peer)


def _setup(workdir: Path, address: str, peer: str) -> Iterator[Setup]:
    c = start_cluster(workdir / "cluster")
    target = Target()
    op = Operator(c, workdir / "operator.log", ("--scrape-per-namespace",))
    mirroring: subprocess.Popen[bytes] | None = None
    try:
        with open(workdir / "endpointslice-mirroring.log", "ab") as log:  # Kubernetes' own, beside the GC
            mirroring = subprocess.Popen([
                str(KUBE_BIN / "kube-controller-manager"), f"--kubeconfig={c.admin_kubeconfig}",
                "--controllers=endpointslicemirroring", "--bind-address=127.0.0.1", "--secure-port=0", "--port=0",
                "--leader-elect=false"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _post(c, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", upstream_crds.load(upstream_crds.SERVICEMONITOR))
        kube = admin_client(c)
        for ns in (PROMETHEUS_SA[0], "shop"):  # (the control plane has the operator's namespace)
            kube.create(Namespace(metadata=ObjectMeta(name=ns)))
        kube.create(ServiceAccount(metadata=ObjectMeta(name=PROMETHEUS_SA[1], namespace=PROMETHEUS_SA[0])))
        for obj in yaml.safe_load_all(SCRAPE_RBAC.read_text()):  # bound to the operator's test user
            if obj["kind"].endswith("Binding"):
                obj["subjects"] = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": OPERATOR_USER}]
            ns = obj["metadata"].get("namespace")
            _post(c, f"/apis/rbac.authorization.k8s.io/v1/{'namespaces/' + ns + '/' if ns else ''}"
                     f"{obj['kind'].lower()}s", obj)
        kubectl_apply(c, list(yaml.safe_load_all((DEPLOY / "base" / "prometheus-role.yaml").read_text())))
        reader = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                  "metadata": {"name": "test-prometheus-discovery"},
                  "rules": [{"apiGroups": [""], "resources": ["services", "endpoints", "pods"],
                             "verbs": ["get", "list", "watch"]},
                            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                             "verbs": ["get", "list", "watch"]}]}
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "test-prometheus-discovery", "namespace": "shop"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                               "name": "test-prometheus-discovery"},
                   "subjects": [{"kind": "ServiceAccount", "name": PROMETHEUS_SA[1], "namespace": PROMETHEUS_SA[0]}]}
        kubectl_apply(c, [reader, binding])
        kubectl_apply(c, of_kind(render("default"), "Service"))
        kubectl_apply(c, metrics_endpoints(op.metrics_port, (address,)))
        op.start()
        kube.create(route("shop", "checkout", target.host, annotations()))
        wait_for(lambda: get(kube, PrometheusRule, "route-monitor-checkout", "shop") is not None, timeout=30,
                 what=f"shop's generated rule (log: {op.log_path})")
        yield Setup(c, kube, op, bound_token(c, *PROMETHEUS_SA), address, peer)
    finally:
        if op.proc is not None:
            op.stop()
        if mirroring is not None:
            mirroring.terminate()
            mirroring.wait(20)
        target.close()
        c.stop()


def value(prom: Any, expr: str) -> float | None:
    result = prom.query(expr)
    return float(result[0]["value"][1]) if result else None


def rule_files(kube: Client, operator_rule: dict[str, Any], *, enforcing: bool) -> dict[str, dict[str, Any]]:
    """The operator's alerts as rendered plus the monitors' generated rules, as the Prometheus loads
    them; every group evaluated each second (a generated group's own interval, the tile, would
    first run at an offset up to 5 minutes away)."""
    rules = [operator_rule, *(r.to_dict() for r in kube.list(PrometheusRule, namespace="*"))]
    files = {f"{r['metadata']['namespace']}-{r['metadata']['name']}":
             enforced_rule_groups(r) if enforcing else {"groups": r["spec"]["groups"]} for r in rules}
    return {name: {"groups": [{k: v for k, v in g.items() if k != "interval"} for g in f["groups"]]}
            for name, f in files.items()}


def run_layout(setup: Setup, workdir: Path, sm: dict[str, Any], operator_rule: dict[str, Any], *, role: str,
               enforcing: bool) -> Any:
    targets = workdir / "targets.json"
    sd = KubernetesSD(setup.cluster.server, setup.prometheus_token, role, namespaces_of(sm) or [OPERATOR_NS])
    job = scrape_config(sm, 0, role=role, targets_file=targets, enforced_namespace_label="namespace" if enforcing else None)
    return sd, targets, job, rule_files(setup.kube, operator_rule, enforcing=enforcing)


@pytest.mark.cluster
@pytest.mark.prometheus
@pytest.mark.timeout(240)
@kubectl
@pytest.mark.parametrize(("layout", "role"), [*((layout, ENDPOINTS) for layout in sorted(LAYOUTS)),
                                              ("default", ENDPOINTSLICE)])
def test_every_layouts_operator_target_is_up_under_the_job_its_alerts_select(setup: Setup, tmp_path: Path,
                                                                             layout: str, role: str) -> None:
    objects = render(layout)
    kubectl_apply(setup.cluster, of_kind(objects, "Service"))
    [sm] = of_kind(objects, "ServiceMonitor")
    rule = operator_alerts(objects)
    down = next(r["expr"] for g in rule_files(setup.kube, rule, enforcing=layout in ENFORCING)[
        f"{OPERATOR_NS}-route-monitor-operator-alerts"]["groups"] for r in g["rules"] if r["alert"] == OPERATOR_DOWN)
    [job_name] = selectors_of_job([down])
    sd, targets, job, rules = run_layout(setup, tmp_path, sm, rule, role=role, enforcing=layout in ENFORCING)
    with discovering(sd, targets), run_enforcing_prometheus(tmp_path / "prometheus", [job], rules) as prom:
        wait_for(lambda: value(prom, f'up{{job="{job_name}"}}') == 1, timeout=60,
                 what=f"up{{job={job_name!r}}} == 1 ({layout}, role {role}; discovery errors: {sd.errors})")
        # the SLO count the page reads (shop's objective, or the operator's owned monitors where
        # rules see their own namespace only) exists: the page's condition is decided by `up`
        wait_for(lambda: bool(prom.query(f"sum({names.OWNED_MONITORS}{{job=\"{job_name}\"}}) > 0")), timeout=30,
                 what="the operator's owned monitors under the job")
        assert prom.query(down) == [], f"{OPERATOR_DOWN} would page with the operator up ({layout})"
    assert not sd.errors


@pytest.mark.cluster
@pytest.mark.prometheus
@pytest.mark.timeout(180)
@kubectl
def test_without_job_label_the_job_is_the_service_name_and_the_page_stands(setup: Setup, tmp_path: Path) -> None:
    """The control: deploy/'s ServiceMonitor as it was (no jobLabel)."""
    objects = render("default")
    kubectl_apply(setup.cluster, of_kind(objects, "Service"))
    [sm] = of_kind(objects, "ServiceMonitor")
    sm = {**sm, "spec": {k: v for k, v in sm["spec"].items() if k != "jobLabel"}}
    sd, targets, job, rules = run_layout(setup, tmp_path, sm, operator_alerts(objects), role=ENDPOINTS, enforcing=False)
    with discovering(sd, targets), run_enforcing_prometheus(tmp_path / "prometheus", [job], rules) as prom:
        wait_for(lambda: value(prom, 'up{job="route-monitor-metrics"}') == 1, timeout=60, what="the target, job by Service name")
        assert not prom.query('up{job="route-monitor"}')
        wait_for(lambda: bool(prom.query(f"count({names.SLO_OBJECTIVE_RECORD})")), timeout=30, what="shop's SLO recorded")
        wait_for(lambda: any(a["labels"]["alertname"] == OPERATOR_DOWN and a["state"] == "pending"
                             for a in prom.api("alerts")["alerts"]), timeout=60,
                 what=f"{OPERATOR_DOWN} pending while the operator is up")


@pytest.mark.cluster
@pytest.mark.prometheus
@pytest.mark.timeout(180)
def test_plain_prometheus_job_finds_the_operator_as_route_monitor(setup: Setup, tmp_path: Path) -> None:
    [job] = yaml.safe_load(PLAIN_JOB.read_text())
    [sd_config] = job.pop("kubernetes_sd_configs")
    targets = tmp_path / "targets.json"
    sd = KubernetesSD(setup.cluster.server, setup.prometheus_token, sd_config["role"], sd_config["namespaces"]["names"])
    job = {**job, "scrape_interval": "1s", "file_sd_configs": [{"files": [str(targets)]}]}
    rules = {"operator": yaml.safe_load(PLAIN_RULES.read_text())}
    with discovering(sd, targets), run_enforcing_prometheus(tmp_path / "prometheus", [job], rules) as prom:
        wait_for(lambda: value(prom, 'up{job="route-monitor"}') == 1, timeout=60,
                 what=f"the plain job's target (discovery errors: {sd.errors})")
        [series] = prom.query(f'{names.OWNED_MONITORS}{{job="route-monitor"}}')
        assert series["metric"].get("pod") is None  # no pods here; the relabelling leaves it unset
    assert not sd.errors


# --- --scrape-per-namespace ---------------------------------------------------------------------
def wait_objects(setup: Setup, ns: str) -> None:
    for res in (Service, Endpoints, Slice, ServiceMonitor):
        wait_for(lambda r=res: get(setup.kube, r, NAME, ns) is not None, timeout=30,
                 what=f"{res.__name__} {NAME} in {ns} (log: {setup.operator.log_path})")


@pytest.mark.cluster
@pytest.mark.prometheus
@pytest.mark.timeout(180)
@pytest.mark.parametrize("role", [ENDPOINTS, ENDPOINTSLICE])
def test_per_namespace_target_is_discovered_with_either_role(setup: Setup, tmp_path: Path, role: str) -> None:
    wait_objects(setup, "shop")
    ep = get(setup.kube, Endpoints, NAME, "shop")
    assert ep is not None and ep["subsets"] == [{"addresses": [{"ip": setup.address}], "ports": [
        {"name": "metrics", "port": setup.operator.metrics_port, "protocol": "TCP"}]}]
    sm = get(setup.kube, ServiceMonitor, NAME, "shop")
    assert sm is not None
    targets = tmp_path / "targets.json"
    sd = KubernetesSD(setup.cluster.server, setup.prometheus_token, role, namespaces_of(sm) or [])
    job = scrape_config(sm, 0, role=role, targets_file=targets, enforced_namespace_label="namespace")
    with discovering(sd, targets), run_enforcing_prometheus(tmp_path / "prometheus", [job], {}) as prom:
        wait_for(lambda: value(prom, f'up{{job="{NAME}",namespace="shop"}}') == 1, timeout=60,
                 what=f"shop's per-namespace target with role {role} (discovery errors: {sd.errors})")
        wait_for(lambda: bool(prom.query('route_monitor_probes_total{namespace="shop",monitor="checkout"}')),
                 timeout=30, what="shop's probe series")
        assert {s["metric"]["exported_namespace"] for s in prom.query("route_monitor_probes_total")} == {"shop"}
    assert not sd.errors


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_endpoints_follow_the_operators_ready_replicas(setup: Setup) -> None:
    wait_objects(setup, "shop")
    port = setup.operator.metrics_port

    def listed() -> list[str]:
        ep = get(setup.kube, Endpoints, NAME, "shop") or {}
        return [a["ip"] for s in ep.get("subsets") or [] for a in s.get("addresses") or []]

    both = sorted((setup.address, setup.peer))
    try:
        kubectl_apply(setup.cluster, metrics_endpoints(port, (setup.address, setup.peer)))
        wait_for(lambda: listed() == both, timeout=40,
                 what=f"the Endpoints listing the second replica (log: {setup.operator.log_path})")
        es = get(setup.kube, Slice, NAME, "shop")
        assert es is not None and [a for e in es["endpoints"] for a in e["addresses"]] == both
    finally:
        kubectl_apply(setup.cluster, metrics_endpoints(port, (setup.address,)))
    wait_for(lambda: listed() == [setup.address], timeout=40, what="the Endpoints back to one replica")


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_a_foreign_endpoints_object_is_left_untouched(setup: Setup) -> None:
    kube, target = setup.kube, Target()
    kube.create(Namespace(metadata=ObjectMeta(name="teamendpoints")))
    foreign = kube.create(Endpoints.from_dict({"metadata": {"name": NAME, "namespace": "teamendpoints"},
                                               "subsets": [{"addresses": [{"ip": "10.1.2.3"}],
                                                            "ports": [{"name": "web", "port": 80}]}]}))
    try:
        kube.create(route("teamendpoints", "app", target.host, annotations()))
        wait_for(lambda: f"Endpoints teamendpoints/{NAME} exists and was not created by route-monitor"
                 in setup.operator.log(400), timeout=30, what=f"the foreign Endpoints logged (log: {setup.operator.log_path})")
        assert kube.get(Endpoints, NAME, namespace="teamendpoints").metadata.resourceVersion == \
            foreign.metadata.resourceVersion
        assert get(kube, Slice, NAME, "teamendpoints") is None and get(kube, ServiceMonitor, NAME, "teamendpoints") is None
    finally:
        target.close()


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_the_endpoints_go_with_the_namespaces_last_monitor(setup: Setup) -> None:
    kube, target = setup.kube, Target()
    kube.create(Namespace(metadata=ObjectMeta(name="leaving")))
    try:
        kube.create(route("leaving", "app", target.host, annotations()))
        wait_objects(setup, "leaving")
        kube.delete(Route, "app", namespace="leaving")
        for res in (ServiceMonitor, Slice, Endpoints, Service):
            wait_for(lambda r=res: get(kube, r, NAME, "leaving") is None, timeout=60,
                     what=f"{res.__name__} in leaving removed with its last monitor (log: {setup.operator.log_path})")
    finally:
        target.close()


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_kubernetes_mirrors_no_second_slice_of_ours(setup: Setup) -> None:
    """Kubernetes' EndpointSlice mirroring controller (running in this control plane) copies the
    Endpoints of a Service without a selector into a slice of its own: the control below gets
    one. Ours opt out (they have their slice already): by then, shop's slices are ours alone."""
    kube = setup.kube
    wait_objects(setup, "shop")
    kube.create(Namespace(metadata=ObjectMeta(name="mirrored")))
    kube.create(Service.from_dict({"metadata": {"name": "plain", "namespace": "mirrored"},
                                   "spec": {"ports": [{"name": "metrics", "port": 8080}]}}))
    kube.create(Endpoints.from_dict({"metadata": {"name": "plain", "namespace": "mirrored"},
                                     "subsets": [{"addresses": [{"ip": setup.address}],
                                                  "ports": [{"name": "metrics", "port": 8080}]}]}))

    def slices_of(ns: str, service: str) -> list[dict[str, Any]]:
        return [s.to_dict() for s in kube.list(Slice, namespace=ns, labels={"kubernetes.io/service-name": service})]

    wait_for(lambda: bool(slices_of("mirrored", "plain")), timeout=60, what="the control's mirrored slice")
    [mirrored] = slices_of("mirrored", "plain")
    assert mirrored["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == \
        "endpointslicemirroring-controller.k8s.io"
    assert [s["metadata"]["name"] for s in slices_of("shop", NAME)] == [NAME]
