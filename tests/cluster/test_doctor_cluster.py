"""``route-monitor doctor`` against the real control plane, with prometheus-operator's upstream
Prometheus and ServiceMonitor CRDs (issue 12): a Prometheus configured as kube-prometheus-stack
renders it (``release`` selectors) and route-monitor installed from ``deploy/base``:

- as installed from the base: doctor says the rules will not be loaded (naming the label the
  selector wants and --rule-label), the ServiceMonitor is not scraped, and the operator's
  ServiceAccount lacks its permissions (it is not bound here); exit status 1;
- after what the kube-prometheus-stack overlay does (release labels, --rule-label) and the
  ClusterRoleBinding: each of those lines turns to ``ok:``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import httpx
import pytest
import yaml
from lightkube import ApiError, Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Namespace
from lightkube.types import PatchType

from alert_rules import names
from tests.support import upstream_crds
from tests.support.cluster import ADMIN_TOKEN, ROOT, Cluster
from tests.support.net import wait_for
from tests.support.operator import admin_client
from tests.support.resources import Prometheus, RouteMonitor, ServiceMonitor

pytestmark = pytest.mark.cluster
BASE = ROOT / "deploy" / "base"
RELEASE = "kps"


def install_crd(cluster: Cluster, path: Any) -> None:
    crd = upstream_crds.load(path)
    r = httpx.post(f"{cluster.server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd, verify=False,
                   headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=60)
    assert r.status_code in (201, 409), r.text

    def served() -> bool:
        g = httpx.get(f"{cluster.server}/apis/monitoring.coreos.com/v1/{crd['spec']['names']['plural']}", verify=False,
                      headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=10)
        return g.status_code == 200

    wait_for(served, timeout=30, what=f"{crd['metadata']['name']} served")


def create(kube: Client, obj: Any) -> None:
    try:
        kube.create(obj)
    except ApiError as e:
        if e.status.code != 409:
            raise


def doctor(cluster: Cluster) -> tuple[int, list[str]]:
    env = {**os.environ, "KUBECONFIG": str(cluster.admin_kubeconfig)}
    out = subprocess.run([sys.executable, "-m", "route_monitor.cli.main", "doctor"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert not out.stderr.strip(), out.stderr
    return out.returncode, out.stdout.splitlines()


def test_doctor_reads_the_cluster_and_names_each_silent_failure(cluster: Cluster) -> None:
    kube = admin_client(cluster)
    install_crd(cluster, upstream_crds.SERVICEMONITOR)
    install_crd(cluster, upstream_crds.PROMETHEUS)
    for ns in ("monitoring", "doctor-shop"):
        create(kube, Namespace(metadata=ObjectMeta(name=ns)))
    selector = {"matchLabels": {"release": RELEASE}}
    create(kube, Prometheus.from_dict({"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
                                       "metadata": {"name": "k8s", "namespace": "monitoring"},
                                       "spec": {"ruleSelector": selector, "ruleNamespaceSelector": {},
                                                "serviceMonitorSelector": selector,
                                                "serviceMonitorNamespaceSelector": {}}}))
    create(kube, RouteMonitor.from_dict({"apiVersion": names.API_VERSION, "kind": names.KIND,
                                         "metadata": {"name": "checkout", "namespace": "doctor-shop"},
                                         "spec": {"target": {"url": "https://checkout.example/"},
                                                  "slo": {"availability": "99.9"}}}))
    create(kube, ServiceMonitor.from_dict(yaml.safe_load((BASE / "servicemonitor.yaml").read_text())))
    create(kube, Deployment.from_dict(yaml.safe_load((BASE / "deployment.yaml").read_text())))

    code, lines = doctor(cluster)
    assert code == 1
    text = "\n".join(lines)
    assert "problem: Prometheus monitoring/k8s does not load the generated PrometheusRules: its ruleSelector " \
           f"wants release={RELEASE}" in text
    assert "problem: Prometheus monitoring/k8s does not scrape route-monitor" in text
    assert "problem: the operator (system:serviceaccount:route-monitor:route-monitor) may not:" in text
    assert "problem: operator Deployment route-monitor/route-monitor: 0/2 replicas ready" in text  # no nodes here

    # what deploy/overlays/kube-prometheus-stack does, plus the base's ClusterRoleBinding
    kube.patch(ServiceMonitor, "route-monitor", {"metadata": {"labels": {"release": RELEASE}}},
               namespace="route-monitor", patch_type=PatchType.MERGE)
    dep = kube.get(Deployment, "route-monitor", namespace="route-monitor")
    args = [*dep.spec.template.spec.containers[0].args, f"--rule-label=release={RELEASE}"]
    kube.patch(Deployment, "route-monitor", [{"op": "replace", "path": "/spec/template/spec/containers/0/args",
                                              "value": args}], namespace="route-monitor", patch_type=PatchType.JSON)
    binding = yaml.safe_load((BASE / "clusterrolebinding.yaml").read_text())
    r = httpx.post(f"{cluster.server}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json=binding,
                   verify=False, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=10)
    assert r.status_code in (201, 409), r.text

    code, lines = doctor(cluster)
    text = "\n".join(lines)
    assert "ok: Prometheus monitoring/k8s loads the generated PrometheusRules of" in text
    assert "ok: Prometheus monitoring/k8s scrapes route-monitor through ServiceMonitor route-monitor/route-monitor" in text
    assert "ok: the operator (system:serviceaccount:route-monitor:route-monitor) has the permissions it needs" in text
    assert lines[-1] == "1 problem(s)" and code == 1  # only the replicas that cannot run without nodes
