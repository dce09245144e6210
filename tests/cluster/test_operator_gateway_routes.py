"""GRPCRoute and TCPRoute targets (Contract 13, by Contract 7's rules) through a real control plane
with the upstream Gateway API CRDs, the operator running as the user bound only to
``deploy/clusterrole.yaml``, probing a real gRPC server (grpcio's health servicer) and a real
Redis-like TCP server.

Covers:
- an annotated GRPCRoute -> a RouteMonitor owned by it (``generated-from: grpcroute``); no
  accepted parent yet -> ``TargetResolved=False``/``NoAcceptedParent`` and no probe; once the test
  writes ``status.parents[]`` as a gateway controller would, the gRPC health check goes to its
  hostname on the HTTP (h2c) listener's port and succeeds, and a NOT_SERVING server fails with
  reason ``grpc_not_serving``; its path is ``gateway:<ns>/edge``;
- an annotated TCPRoute -> accepted but the Gateway has no address yet -> ``NoGatewayAddress``;
  once the Gateway's ``status.addresses`` is written, TCP probes reach its TCP listener's port.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from lightkube import Client

from alert_rules import names
from tests.support.cluster import Cluster
from tests.support.gateway import (
    GRPCRoute,
    TCPRoute,
    gateway,
    grpcroute,
    set_gateway_address,
    set_parent_status,
    tcproute,
)
from tests.support.net import wait_for
from tests.support.operator import (
    Operator,
    annotations,
    condition,
    new_namespace,
    running_operator,
    wait_monitor,
)
from tests.support.protocolservers import PONG, GRPCHealth, LineServer

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def operator(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    with running_operator(cluster, tmp_path_factory.mktemp("operator")) as op:
        yield op


@pytest.fixture
def ns(kube: Client, request: pytest.FixtureRequest) -> str:
    return new_namespace(kube, request, "gw")


def resolved(reason: str) -> Callable[[dict[str, Any]], bool]:
    return lambda m: condition(m, "TargetResolved").get("reason") == reason


def ready(m: dict[str, Any]) -> bool:
    return condition(m, "Ready").get("status") == "True"


def probes(operator: Operator, ns: str, monitor: str, result: str) -> float:
    return operator.sample("route_monitor_probes_total", namespace=ns, monitor=monitor, result=result) or 0


def test_annotated_grpcroute_is_health_checked_through_its_accepted_gateway_listener(
        kube: Client, operator: Operator, ns: str) -> None:
    server = GRPCHealth()
    server.set("", True)
    try:
        kube.create(gateway(ns, "edge", ("web", "HTTP", server.port)))
        kube.create(grpcroute(ns, "checkout", ["*.example.com", "localhost"], annotations()))
        waiting = wait_monitor(kube, ns, "checkout", resolved("NoAcceptedParent"), "TargetResolved=NoAcceptedParent")
        assert waiting["metadata"]["labels"][names.LABEL_GENERATED_FROM] == "grpcroute"
        assert [o["kind"] for o in waiting["metadata"]["ownerReferences"]] == ["GRPCRoute"]
        assert probes(operator, ns, "checkout", "success") == 0

        set_parent_status(kube, ns, "checkout", kind=GRPCRoute)
        url = f"grpc://localhost:{server.port}/"
        monitor = wait_monitor(kube, ns, "checkout", ready, "Ready")
        assert monitor["status"]["url"] == url
        assert monitor["status"]["paths"] == ["dns:cluster", f"gateway:{ns}/edge"]
        assert monitor["status"]["protocol"] == "grpc, from the GRPCRoute's Gateway listener web (HTTP)"
        wait_for(lambda: probes(operator, ns, "checkout", "success") >= 2, timeout=20,
                 what="gRPC health checks through the listener's port")
        assert operator.sample(names.TARGET_INFO, namespace=ns, monitor="checkout", kind="grpcroute", url=url) == 1

        server.set("", False)
        wait_for(lambda: (operator.sample("route_monitor_probe_failures_total", namespace=ns, monitor="checkout",
                                          reason="grpc_not_serving") or 0) >= 1,
                 timeout=20, what="NOT_SERVING counted with reason grpc_not_serving")
    finally:
        server.close()


def test_annotated_tcproute_is_probed_at_its_gateway_address(kube: Client, operator: Operator, ns: str) -> None:
    server = LineServer(PONG)
    try:
        kube.create(gateway(ns, "edge", ("redis", "TCP", server.port)))
        kube.create(tcproute(ns, "cache", annotations()))
        set_parent_status(kube, ns, "cache", section="redis", kind=TCPRoute)
        waiting = wait_monitor(kube, ns, "cache", resolved("NoGatewayAddress"), "TargetResolved=NoGatewayAddress")
        assert waiting["metadata"]["labels"][names.LABEL_GENERATED_FROM] == "tcproute"
        assert "Gateway" in condition(waiting, "TargetResolved")["message"]

        set_gateway_address(kube, ns, "edge", "127.0.0.1")
        url = f"tcp://127.0.0.1:{server.port}"
        monitor = wait_monitor(kube, ns, "cache", ready, "Ready")
        assert monitor["status"]["url"] == url
        assert monitor["status"]["protocol"] == "tcp, from the TCPRoute's Gateway listener redis (TCP)"
        wait_for(lambda: probes(operator, ns, "cache", "success") >= 2, timeout=20,
                 what="TCP probes to the Gateway's address and listener port")
        assert operator.sample(names.TARGET_INFO, namespace=ns, monitor="cache", kind="tcproute", url=url) == 1
    finally:
        server.close()
