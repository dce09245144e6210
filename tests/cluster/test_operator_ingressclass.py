"""An Ingress's path (``ingressclass:<name>``) through a real control plane: the class the Ingress
names, else the legacy ``kubernetes.io/ingress.class`` annotation, else the cluster's default
IngressClass, which the operator watches (as the user bound only to ``deploy/base/clusterrole.yaml``).

Covers:
- the API server's own DefaultIngressClass admission: a new Ingress naming no class gets the
  default's name in ``spec.ingressClassName``; one with the legacy annotation is left alone, and
  its path is the annotation's class, not the default;
- an Ingress created while the cluster had no default class: no class path; an IngressClass
  marked default afterwards -> ``status.paths`` gains ``ingressclass:<it>``; the mark moved to
  another class -> the path follows; no default any more -> the path goes.

IngressClasses are cluster-wide: the test deletes its own at the end, so that other modules'
Ingresses are created without a default class, as before.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lightkube import Client
from lightkube.resources.networking_v1 import Ingress, IngressClass
from lightkube.types import PatchType

from route_monitor.spec.paths import DEFAULT_CLASS_ANNOTATION, LEGACY_INGRESS_CLASS
from tests.support.cluster import Cluster
from tests.support.gateway import ingress
from tests.support.operator import Operator, annotations, new_namespace, running_operator, wait_monitor

pytestmark = pytest.mark.cluster

CLASSES = ("rm-test-nginx", "rm-test-haproxy")


@pytest.fixture(scope="module")
def operator(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    with running_operator(cluster, tmp_path_factory.mktemp("operator")) as op:
        yield op


@pytest.fixture
def classes(kube: Client) -> Iterator[tuple[str, ...]]:
    for name in CLASSES:
        kube.create(IngressClass.from_dict({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                                            "metadata": {"name": name},
                                            "spec": {"controller": f"example.net/{name}"}}))
    yield CLASSES
    for name in CLASSES:
        kube.delete(IngressClass, name)


def mark_default(kube: Client, name: str, default: bool) -> None:
    kube.patch(IngressClass, name, {"metadata": {"annotations": {DEFAULT_CLASS_ANNOTATION: "true" if default else None}}},
               patch_type=PatchType.MERGE)


def paths_are(*want: str) -> object:
    return lambda m: (m.get("status") or {}).get("paths") == sorted(want)


def test_ingress_class_from_the_ingress_the_annotation_or_the_cluster_default(
        kube: Client, operator: Operator, request: pytest.FixtureRequest, classes: tuple[str, ...]) -> None:
    nginx, haproxy = classes
    ns = new_namespace(kube, request, "ic")
    kube.create(ingress(ns, "before", [("localhost", "/")], annotations()))
    wait_monitor(kube, ns, "before", paths_are("dns:cluster"), "no class path while the cluster has no default")

    mark_default(kube, haproxy, True)
    wait_monitor(kube, ns, "before", paths_are("dns:cluster", f"ingressclass:{haproxy}"),
                 "the class marked default afterwards")

    kube.create(ingress(ns, "named", [("localhost", "/")], annotations()))
    assert kube.get(Ingress, "named", namespace=ns).spec.ingressClassName == haproxy, \
        "the API server names the default class in a new Ingress"
    kube.create(ingress(ns, "legacy", [("localhost", "/")], {**annotations(), LEGACY_INGRESS_CLASS: nginx}))
    assert kube.get(Ingress, "legacy", namespace=ns).spec.ingressClassName is None, \
        "the API server leaves an Ingress with the legacy annotation without a class"
    wait_monitor(kube, ns, "named", paths_are("dns:cluster", f"ingressclass:{haproxy}"), "its own class")
    wait_monitor(kube, ns, "legacy", paths_are("dns:cluster", f"ingressclass:{nginx}"),
                 "the annotation's class, not the default")

    mark_default(kube, haproxy, False)
    mark_default(kube, nginx, True)
    wait_monitor(kube, ns, "before", paths_are("dns:cluster", f"ingressclass:{nginx}"),
                 "the path to follow the default mark to another class")
    wait_monitor(kube, ns, "named", paths_are("dns:cluster", f"ingressclass:{haproxy}"), "its own class still")

    mark_default(kube, nginx, False)
    wait_monitor(kube, ns, "before", paths_are("dns:cluster"), "no class path once there is no default")
