"""The kustomize layout (issue 12): ``deploy/`` (= ``deploy/base``), ``deploy/overlays/openshift``,
``deploy/overlays/namespaced``, each rendered by ``kubectl kustomize`` and applied (server-side) to
a real control plane of its own.

Covers:
- every layout renders; every Deployment in them is admitted unchanged by restricted-v2
  (``tests/support/scc.py``);
- openshift: the trusted-CA ConfigMap carries the CNO's injection label and the service-CA one the
  service-ca annotation (never both on one), the keys they inject are mounted, and every file
  named in ``$ROUTE_MONITOR_CA_FILES`` is under one of those mounts;
- namespaced: no ClusterRole or ClusterRoleBinding; the ``--namespace`` flags and the namespaces
  holding the operator's Role and RoleBinding are the same list; the Role grants exactly the
  ClusterRole's rules;
- openshift-user-workload: the openshift overlay plus ``--scrape-per-namespace`` and its RBAC;
- applied for real: the operator, running as the overlay's own ServiceAccount (a token from the
  TokenRequest API), monitors an annotated Route in a listed namespace, and is refused anything
  outside them; with ``deploy/`` the same ServiceAccount can read cluster-wide; the openshift
  overlay's objects are accepted as rendered.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.models.rbac_v1 import RoleRef, Subject
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap, Namespace, ServiceAccount
from lightkube.resources.rbac_authorization_v1 import ClusterRoleBinding, RoleBinding

from route_monitor.cli.commands.doctor import rule_labels_of
from route_monitor.cli.doctor import Generated, check_all, selects
from route_monitor.cli.main import parse
from route_monitor.probe.tls.trust import ENV_CA_FILES, ca_files
from tests.support import upstream_crds
from tests.support.cluster import ADMIN_TOKEN, Cluster, kubeconfig, start_cluster
from tests.support.kustomize import LAYOUTS, of_kind, render
from tests.support.net import wait_for
from tests.support.operator import Target, admin_client, annotations, get, route, running_operator
from tests.support.resources import PrometheusRule, RouteMonitor
from tests.support.scc import admit_restricted_v2

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
SA = ("route-monitor", "route-monitor")
"""(namespace, name) of the operator's ServiceAccount."""


def operator_container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [deployment] = of_kind(objects, "Deployment")
    [c] = deployment["spec"]["template"]["spec"]["containers"]
    return dict(c)


# --- rendered -----------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_layout_renders_a_deployment_restricted_v2_admits(layout: str) -> None:
    objects = render(layout)
    [deployment] = of_kind(objects, "Deployment")
    assert admit_restricted_v2(deployment["spec"]["template"]["spec"]).rejections == ()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_layouts_operator_flags_exist(layout: str) -> None:
    c = operator_container(render(layout))
    parse(c["args"], {e["name"]: e["value"] for e in c["env"] if "value" in e})  # args and ROUTE_MONITOR_*


def test_user_workload_overlay_scrapes_per_namespace_on_top_of_openshift() -> None:
    objects, openshift = render("openshift-user-workload"), render("openshift")
    assert "--scrape-per-namespace" in operator_container(objects)["args"]
    assert operator_container(objects)["env"] == operator_container(openshift)["env"]  # the trust mounts stay
    rules = {(g, r, v) for role in of_kind(objects, "ClusterRole") if role["metadata"]["name"].endswith("per-namespace")
             for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    assert ("discovery.k8s.io", "endpointslices", "create") in rules and ("", "services", "patch") not in rules
    # the Endpoints object too (the `endpoints` discovery role), written the same way: no patch
    assert {("", "endpoints", v) for v in ("get", "create", "update", "delete")} <= rules
    assert ("", "endpoints", "patch") not in rules


def test_default_is_the_base() -> None:
    assert render("default") == render("base")


def test_openshift_overlay_mounts_the_injected_ca_bundles_and_names_them() -> None:
    objects = render("openshift")
    maps = {m["metadata"]["name"]: m["metadata"] for m in of_kind(objects, "ConfigMap")}
    injected = {name: ("ca-bundle.crt" if (meta.get("labels") or {}).get("config.openshift.io/inject-trusted-cabundle")
                       == "true" else None) or ("service-ca.crt" if (meta.get("annotations") or {}).get(
                           "service.beta.openshift.io/inject-cabundle") == "true" else None)
                for name, meta in maps.items()}
    assert sorted(injected.values()) == ["ca-bundle.crt", "service-ca.crt"], maps  # one of each, on separate maps
    c = operator_container(objects)
    [deployment] = of_kind(objects, "Deployment")
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["mountPath"]: volumes[m["name"]] for m in c["volumeMounts"]}
    [value] = [e["value"] for e in c["env"] if e["name"] == ENV_CA_FILES]
    files = ca_files({ENV_CA_FILES: value})
    served: list[str] = []
    for path in files:
        folder, _, key = path.rpartition("/")
        volume = mounts[folder]["configMap"]
        assert all(m["readOnly"] for m in c["volumeMounts"] if m["mountPath"] == folder)
        if volume["name"] in injected:  # an injected map: its key is mounted by name (the pod waits for it)
            assert volume["items"] == [{"key": injected[volume["name"]], "path": key}], volume
            served.append(injected[volume["name"]])
        else:  # the user's own extra CA: optional, so its absence never blocks the pod
            assert volume.get("optional") is True, volume
    assert sorted(served) == ["ca-bundle.crt", "service-ca.crt"]


def watched(objects: list[dict[str, Any]]) -> tuple[list[str], list[str], list[str]]:
    """(``--namespace`` flags, namespaces with the Role, namespaces with the RoleBinding)."""
    flags = [a.split("=", 1)[1] for a in operator_container(objects)["args"] if a.startswith("--namespace=")]
    roles = [r["metadata"]["namespace"] for r in of_kind(objects, "Role") if r["metadata"]["name"] == "route-monitor"]
    bindings = [b["metadata"]["namespace"] for b in of_kind(objects, "RoleBinding")
                if b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "route-monitor"}]
    return sorted(flags), sorted(roles), sorted(bindings)


def test_namespaced_overlay_grants_the_same_rules_only_in_the_listed_namespaces() -> None:
    objects = render("namespaced")
    assert not of_kind(objects, "ClusterRole") and not of_kind(objects, "ClusterRoleBinding")
    flags, roles, bindings = watched(objects)
    assert flags and flags == roles == bindings, (flags, roles, bindings)
    [cluster_role] = [c for c in of_kind(render("base"), "ClusterRole") if c["metadata"]["name"] == "route-monitor"]
    # IngressClasses and Nodes are cluster-wide: a Role cannot grant them (the namespaced operator
    # does not ask for IngressClasses, and names its location with --location or is `cluster`)
    namespaced = [r for r in cluster_role["rules"] if r["resources"] not in (["ingressclasses"], ["nodes"])]
    for role in of_kind(objects, "Role"):
        if role["metadata"]["name"] == "route-monitor":
            assert role["rules"] == namespaced
    for binding in of_kind(objects, "RoleBinding"):
        if binding["roleRef"]["name"] != "route-monitor-prometheus":  # that one is Prometheus' own
            assert binding["subjects"] == [{"kind": "ServiceAccount", "name": SA[1], "namespace": SA[0]}]


KPS_PROMETHEUS = {"metadata": {"name": "kube-prometheus-stack-prometheus", "namespace": "monitoring"},
                  "spec": {"ruleSelector": {"matchLabels": {"release": "kube-prometheus-stack"}},
                           "ruleNamespaceSelector": {},
                           "serviceMonitorSelector": {"matchLabels": {"release": "kube-prometheus-stack"}},
                           "serviceMonitorNamespaceSelector": {}}}
"""A Prometheus as kube-prometheus-stack's chart renders it by default (release ``kube-prometheus-stack``)."""


@pytest.mark.parametrize(("layout", "loaded"), [("base", False), ("kube-prometheus-stack", True)])
def test_kube_prometheus_stack_overlay_is_what_its_prometheus_selects(layout: str, loaded: bool) -> None:
    """doctor's judgement on the rendered objects: the base is silently ignored by
    kube-prometheus-stack's default selectors; the overlay's labels and --rule-label are loaded."""
    objects = render(layout)
    rule_labels = {"app.kubernetes.io/managed-by": "route-monitor", **rule_labels_of(operator_container(objects))}
    [sm] = of_kind(objects, "ServiceMonitor")
    [own_alerts] = of_kind(objects, "PrometheusRule")
    made = Generated(rule_labels=rule_labels, rule_namespaces=("shop",), service_monitor=sm)
    findings = check_all([KPS_PROMETHEUS], made, {})
    assert all(f.level == "ok" for f in findings) is loaded, findings
    assert selects(KPS_PROMETHEUS["spec"]["ruleSelector"], own_alerts["metadata"]["labels"]) is loaded


# --- applied ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A control plane of its own: applying ``deploy/`` binds the ServiceAccount cluster-wide,
    which must not leak into the namespaced checks (or into other modules' cluster)."""
    c = start_cluster(tmp_path_factory.mktemp("overlays-cluster"))
    try:
        crd = upstream_crds.load(upstream_crds.SERVICEMONITOR)
        r = httpx.post(f"{c.server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd, verify=False,
                       headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30)
        assert r.status_code == 201, r.text
        yield c
    finally:
        c.stop()


OLDER_API = {("policy/v1", "PodDisruptionBudget"): "policy/v1beta1"}
"""The test apiserver is 1.20: PodDisruptionBudget is served as policy/v1beta1 only (v1 from 1.21),
with the same fields for what deploy/ sets. Nothing else is changed before applying."""


def apply(cluster: Cluster, objects: list[dict[str, Any]]) -> None:
    objects = [{**o, "apiVersion": OLDER_API.get((o["apiVersion"], o["kind"]), o["apiVersion"])} for o in objects]
    out = subprocess.run(["kubectl", "--kubeconfig", str(cluster.admin_kubeconfig), "apply", "--server-side",
                          "--field-manager=route-monitor-install", "-f", "-"],
                         input=yaml.safe_dump_all(objects), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def service_account_kubeconfig(cluster: Cluster, folder: Path) -> Path:
    """A kubeconfig for the overlay's ServiceAccount (a bound token, as a pod would get)."""
    return token_kubeconfig(cluster, folder, *SA)


def token_kubeconfig(cluster: Cluster, folder: Path, ns: str, name: str) -> Path:
    r = httpx.post(f"{cluster.server}/api/v1/namespaces/{ns}/serviceaccounts/{name}/token", verify=False, timeout=10,
                   headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                   json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                         "spec": {"expirationSeconds": 3600}})
    assert r.status_code == 201, r.text
    path = folder / f"{ns}-{name}.kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig(cluster.server, r.json()["status"]["token"], name)))
    return path


def may(cluster: Cluster, kc: Path, verb: str, resource: str, group: str, namespace: str) -> bool:
    token = yaml.safe_load(kc.read_text())["users"][0]["user"]["token"]
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"group": group, "resource": resource, "verb": verb,
                                              "namespace": namespace}}}
    r = httpx.post(f"{cluster.server}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", json=review,
                   headers={"Authorization": f"Bearer {token}"}, verify=False, timeout=10)
    r.raise_for_status()
    return bool(r.json()["status"]["allowed"])


@pytest.mark.cluster
def test_namespaced_overlay_applied_monitors_listed_namespaces_only(fresh: Cluster, tmp_path: Path) -> None:
    """Runs first in this module (the later ones bind the ServiceAccount cluster-wide)."""
    kube = admin_client(fresh)
    objects = render("namespaced")
    flags, _, _ = watched(objects)
    for ns in [*flags, "elsewhere"]:
        kube.create(Namespace(metadata=ObjectMeta(name=ns)))
    apply(fresh, objects)
    assert not list(kube.list(ClusterRoleBinding, labels={"app.kubernetes.io/name": "route-monitor"}))
    kc = service_account_kubeconfig(fresh, tmp_path)
    listed = flags[0]
    assert may(fresh, kc, "watch", "routes", "route.openshift.io", listed)
    assert may(fresh, kc, "create", "prometheusrules", "monitoring.coreos.com", listed)
    assert may(fresh, kc, "create", "leases", "coordination.k8s.io", SA[0])
    assert not may(fresh, kc, "list", "routes", "route.openshift.io", "elsewhere")
    assert not may(fresh, kc, "list", "routes", "route.openshift.io", "")  # cluster-wide
    assert not may(fresh, kc, "create", "prometheusrules", "monitoring.coreos.com", "elsewhere")

    target = Target()
    args = [a for a in operator_container(objects)["args"] if a.startswith("--namespace=")]
    as_service_account = dataclasses.replace(fresh, operator_kubeconfig=kc)
    try:
        with running_operator(as_service_account, tmp_path, *args) as op:
            kube.create(route("elsewhere", "shop", target.host, annotations()))
            kube.create(route(listed, "shop", target.host, annotations()))
            wait_for(lambda: get(kube, PrometheusRule, "route-monitor-shop", listed) is not None, timeout=30,
                     what=f"the generated PrometheusRule in {listed} (log: {op.log_path})")
            wait_for(lambda: target.count() >= 1, timeout=20, what="the listed namespace's Route probed")
            assert get(kube, RouteMonitor, "shop", "elsewhere") is None
            log = op.log(400)  # "403" as a status: not in a port (":40387") nor a timestamp's milliseconds (",403")
            assert "Forbidden" not in log and not re.search(r"(?<![,:])\b403\b", log), op.log(60)
    finally:
        target.close()


@pytest.mark.cluster
def test_default_layout_applied_lets_the_service_account_read_cluster_wide(fresh: Cluster, tmp_path: Path) -> None:
    apply(fresh, render("default"))
    kc = service_account_kubeconfig(fresh, tmp_path)
    assert may(fresh, kc, "watch", "routes", "route.openshift.io", "")
    assert may(fresh, kc, "create", "prometheusrules", "monitoring.coreos.com", "elsewhere")
    assert not may(fresh, kc, "get", "secrets", "", "elsewhere")


@pytest.mark.cluster
def test_teams_with_the_builtin_edit_role_may_create_routemonitors(fresh: Cluster, tmp_path: Path) -> None:
    """deploy/ aggregates RouteMonitor rules into view/edit/admin (the clusterrole-aggregation
    controller runs in the test control plane): a team's ServiceAccount bound to `edit` in its
    namespace may create RouteMonitors there, one bound to `view` may only read them, and neither
    may write their status."""
    apply(fresh, render("default"))
    kube = admin_client(fresh)
    kube.create(Namespace(metadata=ObjectMeta(name="team")))
    for who, role in (("dev", "edit"), ("reader", "view")):
        kube.create(ServiceAccount(metadata=ObjectMeta(name=who, namespace="team")))
        kube.create(RoleBinding(metadata=ObjectMeta(name=who, namespace="team"),
                                roleRef=RoleRef(apiGroup="rbac.authorization.k8s.io", kind="ClusterRole", name=role),
                                subjects=[Subject(kind="ServiceAccount", name=who, namespace="team")]))
    dev = token_kubeconfig(fresh, tmp_path, "team", "dev")
    reader = token_kubeconfig(fresh, tmp_path, "team", "reader")
    wait_for(lambda: may(fresh, dev, "create", "routemonitors", "routemonitor.io", "team"), timeout=30,
             what="the edit role to aggregate route-monitor-edit")
    assert may(fresh, reader, "list", "routemonitors", "routemonitor.io", "team")
    assert not may(fresh, reader, "create", "routemonitors", "routemonitor.io", "team")
    assert not may(fresh, dev, "create", "routemonitors", "routemonitor.io", "elsewhere")
    assert not may(fresh, dev, "patch", "routemonitors/status", "routemonitor.io", "team")


@pytest.mark.cluster
@pytest.mark.parametrize("layout", ["openshift", "openshift-user-workload"])
def test_openshift_overlays_applied_as_rendered(fresh: Cluster, layout: str) -> None:
    objects = render(layout)
    apply(fresh, objects)
    kube = admin_client(fresh)
    for cm in of_kind(objects, "ConfigMap"):
        got = kube.get(ConfigMap, cm["metadata"]["name"], namespace=cm["metadata"]["namespace"])
        assert (got.metadata.labels or {}).items() >= (cm["metadata"].get("labels") or {}).items()
        assert (got.metadata.annotations or {}).items() >= (cm["metadata"].get("annotations") or {}).items()
    deployment = kube.get(Deployment, "route-monitor", namespace="route-monitor")
    env = {e.name: e.value for e in deployment.spec.template.spec.containers[0].env}
    assert env[ENV_CA_FILES] == next(e["value"] for e in operator_container(objects)["env"] if e["name"] == ENV_CA_FILES)
