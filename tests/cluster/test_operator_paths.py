"""Paths (Contract 11) through a real control plane: the operator derives them from what the
router shards and gateway controllers write (written here controller-style), shows them in
``status.paths`` and exports ``route_monitor_monitor_path_info``.

Covers:
- a Route admitted by router shard ``shard-a`` with ``routemonitor.io/paths`` -> ``status.paths``
  holds ``router:shard-a`` and the declared path, one path_info series each;
- the Route admitted by ``shard-b`` instead -> the paths follow, the old series goes, and the SLI
  counters carry on from where they were (no reset);
- an HTTPRoute accepted by Gateway ``edge`` then moved to Gateway ``edge2`` -> ``gateway:<ns>/edge``
  then ``gateway:<ns>/edge2``.
"""

from __future__ import annotations

import time

import pytest
from lightkube import Client
from lightkube.types import PatchType
from prometheus_client.parser import text_string_to_metric_families

from alert_rules import names
from tests.support.gateway import HTTPRoute, gateway, httproute, set_parent_status
from tests.support.net import wait_for
from tests.support.operator import (
    Operator,
    Target,
    annotations,
    route,
    wait_monitor,
)
from tests.support.resources import Route

pytestmark = pytest.mark.cluster


def admit_by(kube: Client, ns: str, name: str, host: str, *routers: str) -> None:
    """What OpenShift's router shards write when they admit a Route: one ``status.ingress[]`` each."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kube.patch(Route.Status, name, {"status": {"ingress": [
        {"host": host, "routerName": r, "wildcardPolicy": "None",
         "routerCanonicalHostname": f"router-{r}.apps.example.com",
         "conditions": [{"type": "Admitted", "status": "True", "lastTransitionTime": now}]} for r in routers]}},
        namespace=ns, patch_type=PatchType.MERGE)


def path_series(operator: Operator, ns: str, monitor: str) -> set[str]:
    """The paths of the monitor's path_info series (whatever other labels, e.g. location, they carry)."""
    return {s.labels["path"] for family in text_string_to_metric_families(operator.metrics_text())
            for s in family.samples
            if s.name == names.MONITOR_PATH_INFO and s.labels.get("namespace") == ns and s.labels.get("monitor") == monitor}


def test_route_paths_follow_the_admitting_shard_without_touching_the_counters(
        kube: Client, operator: Operator, ns: str, target: Target) -> None:
    kube.create(route(ns, "shop", target.host, annotations(paths="cdn:edge")))
    admit_by(kube, ns, "shop", target.host, "shard-a")
    wait_monitor(kube, ns, "shop", lambda m: (m.get("status") or {}).get("paths") == ["cdn:edge", "router:shard-a"],
                 "status.paths with the admitting shard and the declared path")
    wait_for(lambda: path_series(operator, ns, "shop") == {"cdn:edge", "router:shard-a"}, timeout=10,
             what="one route_monitor_monitor_path_info series per path")
    wait_for(lambda: (operator.sample(names.PROBES_TOTAL, namespace=ns, monitor="shop", result="success") or 0) >= 2,
             timeout=15, what="probes counted")
    before = operator.sample(names.PROBES_TOTAL, namespace=ns, monitor="shop", result="success") or 0

    admit_by(kube, ns, "shop", target.host, "shard-b")
    wait_monitor(kube, ns, "shop", lambda m: m["status"].get("paths") == ["cdn:edge", "router:shard-b"],
                 "status.paths to follow the new shard")
    wait_for(lambda: path_series(operator, ns, "shop") == {"cdn:edge", "router:shard-b"}, timeout=10,
             what="the path_info series to follow the new shard")
    after = operator.sample(names.PROBES_TOTAL, namespace=ns, monitor="shop", result="success") or 0
    assert after >= before, "a path change never resets the SLI counters"


def test_httproute_paths_follow_the_accepting_gateway(kube: Client, operator: Operator, ns: str,
                                                      target: Target) -> None:
    port = target.port
    kube.create(gateway(ns, "edge", ("web", "HTTP", port)))
    kube.create(gateway(ns, "edge2", ("web", "HTTP", port)))
    kube.create(httproute(ns, "shop", ["localhost"], "/", annotations()))
    set_parent_status(kube, ns, "shop")
    wait_monitor(kube, ns, "shop",
                 lambda m: (m.get("status") or {}).get("paths") == ["dns:cluster", f"gateway:{ns}/edge"],
                 "status.paths with the accepting Gateway and the resolver (a host name)")
    kube.patch(HTTPRoute, "shop", {"spec": {"parentRefs": [{"name": "edge2", "sectionName": "web"}]}},
               namespace=ns, patch_type=PatchType.MERGE)
    set_parent_status(kube, ns, "shop", gateway_name="edge2")
    wait_monitor(kube, ns, "shop", lambda m: m["status"].get("paths") == ["dns:cluster", f"gateway:{ns}/edge2"],
                 "status.paths to follow the move to another Gateway")
    wait_for(lambda: path_series(operator, ns, "shop") == {"dns:cluster", f"gateway:{ns}/edge2"}, timeout=10,
             what="the path_info series to follow the move")
