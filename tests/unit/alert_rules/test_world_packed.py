"""Sources without an objective are held packed (``route_monitor.operator.packed``): the world
still answers every question as before (lookups, which monitors a change touches, opted-in keys),
an object moves between packed and whole as its ``routemonitor.io/slo`` annotation comes and
goes, and a packed object costs well under half the heap of the dict it replaces."""

from __future__ import annotations

import copy
import tracemalloc
from typing import Any

from alert_rules import names
from route_monitor.operator.world import World, trimmed


def service(name: str, *, ns: str = "shop", version: str = "1", port: int = 80,
            annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """A Service as the API server sends one (Helm labels, managedFields, a cluster IP)."""
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": ns, "uid": f"0b1c2d3e-aaaa-bbbb-cccc-{abs(hash(name)) % 10**12:012d}",
                     "resourceVersion": version, "creationTimestamp": "2026-01-01T00:00:00Z",
                     "labels": {"app": name, "app.kubernetes.io/name": name, "app.kubernetes.io/instance": f"{name}-prod",
                                "app.kubernetes.io/part-of": "store"},
                     "annotations": {"meta.helm.sh/release-name": name, "meta.helm.sh/release-namespace": ns,
                                     **(annotations or {})},
                     "managedFields": [{"manager": "helm", "operation": "Update", "apiVersion": "v1",
                                        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:ports": {}}}}]},
        "spec": {"clusterIP": "10.0.0.12", "clusterIPs": ["10.0.0.12"], "ipFamilies": ["IPv4"],
                 "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster",
                 "ports": [{"name": "http", "port": port, "protocol": "TCP", "targetPort": 8080}],
                 "selector": {"app": name}, "sessionAffinity": "None", "type": "ClusterIP"},
        "status": {"loadBalancer": {}},
    }


def targeting(name: str, service_name: str) -> dict[str, Any]:
    return {"apiVersion": names.API_VERSION, "kind": names.KIND,
            "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}", "resourceVersion": "1"},
            "spec": {"target": {"service": {"name": service_name, "port": "http"}}, "slo": {"availability": "99.9"}}}


def test_a_source_without_an_objective_is_held_packed_and_read_as_before() -> None:
    w = World()
    svc = service("api")
    assert w.observe("service", None, svc) == {("shop", "api")}
    assert isinstance(w.services[("shop", "api")], bytes)
    expected = trimmed(svc, "service")
    del expected["metadata"]["resourceVersion"]
    assert w.lookup("service", ("shop", "api")) == expected
    assert w.opted_in_keys() == set()


def test_changes_to_a_packed_source_touch_what_they_did() -> None:
    w = World()
    w.observe("routemonitor", None, targeting("probe-api", "api"))
    w.observe("service", None, service("api"))
    assert w.observe("service", "MODIFIED", service("api", version="2")) == set(), "a relist, or a version bump"
    assert w.observe("service", "MODIFIED", service("api", version="3", port=8080)) == {("shop", "api"),
                                                                                        ("shop", "probe-api")}
    assert w.lookup("service", ("shop", "api"))["spec"]["ports"][0]["port"] == 8080  # type: ignore[index]
    assert w.observe("service", "DELETED", service("api", version="4")) == {("shop", "api"), ("shop", "probe-api")}
    assert w.lookup("service", ("shop", "api")) is None


def test_an_objective_annotated_or_removed_moves_the_object_between_packed_and_whole() -> None:
    w = World()
    w.observe("service", None, service("api"))
    slo = {names.ANN_SLO: "99.9"}
    assert w.observe("service", "MODIFIED", service("api", version="2", annotations=slo)) == {("shop", "api")}
    assert isinstance(w.services[("shop", "api")], dict) and w.opted_in_keys() == {("shop", "api")}
    assert w.observe("service", "MODIFIED", service("api", version="3")) == {("shop", "api")}, \
        "the generated monitor must learn the annotation is gone"
    assert isinstance(w.services[("shop", "api")], bytes) and w.opted_in_keys() == set()


def test_a_packed_service_costs_under_half_the_heap_of_a_held_dict() -> None:
    items = [service(f"svc{i:05d}") for i in range(2000)]
    for i, s in enumerate(items):
        s["spec"]["clusterIP"] = s["spec"]["clusterIPs"][0] = f"10.0.{i // 250}.{i % 250}"

    def heap(objects: list[dict[str, Any]], annotate: bool) -> float:
        objects = copy.deepcopy(objects)
        if annotate:  # opted in: held as a dict, as every object was before
            for o in objects:
                o["metadata"]["annotations"][names.ANN_SLO] = "99.9"
        w = World()
        tracemalloc.start()
        for o in objects:
            w.observe("service", None, o)
        used, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return used / len(objects)

    whole, packed = heap(items, True), heap(items, False)
    assert packed < whole / 2, (packed, whole)
