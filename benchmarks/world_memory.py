"""Heap and CPU per object the operator's world holds for sources without an objective (issue 16:
"the watch caches of Routes/Services the operator does not monitor").

    .venv/bin/python -m benchmarks.world_memory [--n 5000]

Feeds ``--n`` realistic Services and Routes (Helm labels and annotations, managedFields, a
cluster IP; a Route admitted by a router) to ``World.observe``, once as they are (no objective:
held packed, ``route_monitor.operator.packed``) and once each with ``routemonitor.io/slo`` (held
as interned dicts, as every object was before), and reports tracemalloc's heap per object, the CPU
of a first observe, of an unchanged relist and of a lookup. Pure Python, no cluster.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
import tracemalloc
from typing import Any

from alert_rules import names
from route_monitor.operator.world import World


def _meta(name: str, i: int) -> dict[str, Any]:
    return {"name": name, "namespace": f"team{i % 50}", "uid": f"0b1c2d3e-aaaa-bbbb-cccc-{i:012d}",
            "resourceVersion": str(100000 + i), "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": name, "app.kubernetes.io/name": name, "app.kubernetes.io/instance": f"{name}-prod",
                       "app.kubernetes.io/part-of": "store"},
            "annotations": {"meta.helm.sh/release-name": name, "meta.helm.sh/release-namespace": f"team{i % 50}"},
            "managedFields": [{"manager": "helm", "operation": "Update", "apiVersion": "v1",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:ports": {}}}}]}


def service(i: int) -> dict[str, Any]:
    ip = f"10.{i // 62500}.{i // 250 % 250}.{i % 250}"
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(f"svc{i:05d}", i),
            "spec": {"clusterIP": ip, "clusterIPs": [ip], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                     "internalTrafficPolicy": "Cluster", "selector": {"app": f"svc{i:05d}"},
                     "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}],
                     "sessionAffinity": "None", "type": "ClusterIP"},
            "status": {"loadBalancer": {}}}


def route(i: int) -> dict[str, Any]:
    host = f"r{i:05d}-team{i % 50}.apps.example.com"
    return {"apiVersion": "route.openshift.io/v1", "kind": "Route", "metadata": _meta(f"r{i:05d}", i),
            "spec": {"host": host, "to": {"kind": "Service", "name": f"svc{i:05d}", "weight": 100},
                     "port": {"targetPort": "http"}, "tls": {"termination": "edge"}, "wildcardPolicy": "None"},
            "status": {"ingress": [{"host": host, "routerName": "default", "wildcardPolicy": "None",
                                    "routerCanonicalHostname": "router-default.apps.example.com",
                                    "conditions": [{"type": "Admitted", "status": "True",
                                                    "lastTransitionTime": "2026-01-01T00:00:01Z"}]}]}}


def measure(kind: str, objects: list[dict[str, Any]], opted_in: bool) -> dict[str, float]:
    objects = copy.deepcopy(objects)
    if opted_in:
        for o in objects:
            o["metadata"]["annotations"][names.ANN_SLO] = "99.9"
    keys = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects]
    n = len(objects)
    w = World()
    tracemalloc.start()
    for o in objects:
        w.observe(kind, None, o)
    heap, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    w = World()
    t0 = time.process_time()
    for o in objects:
        w.observe(kind, None, o)
    t1 = time.process_time()
    for o in objects:
        w.observe(kind, "MODIFIED", o)
    t2 = time.process_time()
    for k in keys:
        w.lookup(kind, k)
    t3 = time.process_time()
    return {"heap_kib_per_object": round(heap / n / 1024, 2), "observe_us": round((t1 - t0) / n * 1e6, 1),
            "relist_us": round((t2 - t1) / n * 1e6, 1), "lookup_us": round((t3 - t2) / n * 1e6, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=5000)
    args = p.parse_args()
    out: dict[str, Any] = {"n": args.n}
    for kind, make in (("service", service), ("route", route)):
        objects = [make(i) for i in range(args.n)]
        out[kind] = {"no objective (packed)": measure(kind, objects, False),
                     "with an objective (dict)": measure(kind, objects, True)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
