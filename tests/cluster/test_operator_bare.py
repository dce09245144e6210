"""A plain Kubernetes cluster: no Route API (no OpenShift) and no Gateway API installed
(Contract 7). Its own control plane, with only the RouteMonitor and PrometheusRule CRDs.

Covers: the operator starts and becomes ready; each missing kind is logged once at start (one
line per kind) and never again: no retry storm; annotated Services and Ingresses are monitored as
usual; a CRD installed later (the Route's) is watched without a restart.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, Service

from alert_rules import names
from tests.support.cluster import BARE_CRD_FILES, STAND_INS, Cluster, install_crd, start_cluster
from tests.support.gateway import ingress
from tests.support.operator import Operator, admin_client, annotations, route, running_operator, wait_monitor

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("bare-cluster"), BARE_CRD_FILES)
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def operator(bare: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    with running_operator(bare, tmp_path_factory.mktemp("operator")) as op:
        yield op


def missing_lines(op: Operator) -> dict[str, int]:
    text = op.log_path.read_text(errors="replace")
    counts = {kind: text.count(f"{kind} is not served by this cluster") for kind in (
        "Route (route.openshift.io/v1)", "HTTPRoute (gateway.networking.k8s.io/v1)",
        "GRPCRoute (gateway.networking.k8s.io/v1)", "TCPRoute (gateway.networking.k8s.io/v1)",
        "Gateway (gateway.networking.k8s.io/v1)", "Ingress (networking.k8s.io/v1)")}
    return counts


def test_missing_apis_are_logged_once_and_services_and_ingresses_still_work(bare: Cluster,
                                                                            operator: Operator) -> None:
    kube: Client = admin_client(bare)
    kube.create(Namespace(metadata=ObjectMeta(name="plain")))
    kube.create(Service.from_dict({"apiVersion": "v1", "kind": "Service",
                                   "metadata": {"name": "api", "namespace": "plain", "annotations": annotations()},
                                   "spec": {"ports": [{"name": "http", "port": 8080}]}}))
    kube.create(ingress("plain", "web", [("web.example.com", "/healthz")], annotations()))
    svc = wait_monitor(kube, "plain", "api", lambda m: (m.get("status") or {}).get("url"), "the Service's monitor")
    assert svc["status"]["url"] == "http://api.plain.svc.cluster.local:8080/"
    web = wait_monitor(kube, "plain", "web", lambda m: (m.get("status") or {}).get("url"), "the Ingress's monitor")
    assert web["metadata"]["labels"][names.LABEL_GENERATED_FROM] == "ingress"
    assert web["status"]["url"] == "http://web.example.com/healthz"

    expected = {"Route (route.openshift.io/v1)": 1, "HTTPRoute (gateway.networking.k8s.io/v1)": 1,
                "GRPCRoute (gateway.networking.k8s.io/v1)": 1, "TCPRoute (gateway.networking.k8s.io/v1)": 1,
                "Gateway (gateway.networking.k8s.io/v1)": 1, "Ingress (networking.k8s.io/v1)": 0}
    assert missing_lines(operator) == expected, operator.log(40)
    time.sleep(8)  # a retry loop would have logged again by now
    assert missing_lines(operator) == expected, operator.log(40)
    assert "Traceback" not in operator.log_path.read_text(errors="replace")
    assert operator.sample(names.RECONCILE_ERRORS_TOTAL + "_total") in (None, 0.0)


def test_a_crd_installed_later_is_watched_without_a_restart(bare: Cluster, operator: Operator) -> None:
    """The Route CRD installed while the operator runs (OpenShift's API added, or the Gateway API
    installed after the operator): asked for again every minute without a line, its Routes are
    monitored from then on, and the operator says so once."""
    kube: Client = admin_client(bare)
    install_crd(bare, STAND_INS / "route.yaml")
    kube.create(Namespace(metadata=ObjectMeta(name="later")))
    kube.create(route("later", "shop", "shop.example.com", annotations()))
    shop = wait_monitor(kube, "later", "shop", lambda m: (m.get("status") or {}).get("url"),
                        "the Route's monitor", timeout=90)
    assert shop["metadata"]["labels"][names.LABEL_GENERATED_FROM] == "route"
    text = operator.log_path.read_text(errors="replace")
    assert text.count("Route (route.openshift.io/v1) is served now: watching it") == 1, operator.log(40)
    assert "Traceback" not in text
