"""Annotated Services found by their ports' ``appProtocol`` or name prefix, through a real
control plane and the operator: each gets the protocol its port declares, in its monitor's URL
(``grpc://``, ``tcp://``, ``tls://``, ``dns://``) and in ``status.protocol`` with the reason, and the
operator probes it with that protocol (its ``route_monitor_target_info`` URL); a RouteMonitor
naming a protocol wins over what the port declares; a port without a known protocol stays HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import Service

from alert_rules import names
from tests.support.cluster import Cluster
from tests.support.operator import Operator, annotations, new_namespace, running_operator, wait_monitor
from tests.support.resources import RouteMonitor

pytestmark = pytest.mark.cluster

PORTS: list[tuple[str, dict[str, Any], str, str]] = [
    # (Service, its one port, the monitor's URL scheme and port, status.protocol)
    ("checkout", {"name": "api", "port": 50051, "appProtocol": "grpc"}, "grpc://{host}:50051/",
     "grpc, from the Service's appProtocol grpc"),
    ("payments", {"name": "api", "port": 8081, "appProtocol": "kubernetes.io/h2c"}, "grpc://{host}:8081/",
     "grpc, from the Service's appProtocol kubernetes.io/h2c"),
    ("cache", {"name": "tcp-redis", "port": 6379}, "tcp://{host}:6379/",
     "tcp, from the Service's port name tcp-redis"),
    ("queue", {"name": "tls-amqp", "port": 5671}, "tls://{host}:5671/",
     "tcp, from the Service's port name tls-amqp over TLS"),
    ("resolver", {"name": "dns-udp", "port": 53, "protocol": "UDP"}, "dns://{host}:53/",
     "dns, from the Service's port name dns-udp"),
    ("web", {"name": "http-web", "port": 8080}, "http://{host}:8080/",
     "http (from the Service's port name http-web)"),
    ("plain", {"name": "web", "port": 8080}, "http://{host}:8080/", "http (default)"),
]


@pytest.fixture(scope="module")
def operator(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    with running_operator(cluster, tmp_path_factory.mktemp("operator")) as op:
        yield op


def service(ns: str, name: str, port: dict[str, Any]) -> Service:
    return Service.from_dict({"apiVersion": "v1", "kind": "Service",
                              "metadata": {"name": name, "namespace": ns, "annotations": annotations()},
                              "spec": {"ports": [port]}})


def with_status(m: dict[str, Any]) -> bool:
    return bool((m.get("status") or {}).get("url") and m["status"].get("protocol"))


def test_each_declared_protocol_is_chosen_and_probed(kube: Client, operator: Operator,
                                                     request: pytest.FixtureRequest) -> None:
    ns = new_namespace(kube, request, "svcp")
    for name, port, _, _ in PORTS:
        kube.create(service(ns, name, port))
    for name, _, url, protocol in PORTS:
        expected = url.format(host=f"{name}.{ns}.svc.cluster.local")
        monitor = wait_monitor(kube, ns, name, with_status, f"{name}'s monitor with its protocol")
        assert (monitor["status"]["url"], monitor["status"]["protocol"]) == (expected, protocol)
        assert monitor["metadata"]["labels"][names.LABEL_GENERATED_FROM] == "service"
        assert operator.sample(names.TARGET_INFO, namespace=ns, monitor=name, kind="service", url=expected) == 1


def test_a_routemonitor_naming_a_protocol_wins_over_the_port(kube: Client, operator: Operator,
                                                             request: pytest.FixtureRequest) -> None:
    ns = new_namespace(kube, request, "svcp")
    kube.create(Service.from_dict({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": ns},
                                   "spec": {"ports": [{"name": "grpc-api", "port": 50051}]}}))
    for name, probe in (("as-declared", {}), ("as-tcp", {"protocol": "tcp"})):
        kube.create(RouteMonitor.from_dict({
            "apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": name, "namespace": ns},
            "spec": {"target": {"service": {"name": "api"}}, "slo": {"availability": "99"},
                     "probe": {"interval": "1s", **probe}}}))
    host = f"api.{ns}.svc.cluster.local:50051"
    declared = wait_monitor(kube, ns, "as-declared", with_status, "the monitor with the port's protocol")
    assert (declared["status"]["url"], declared["status"]["protocol"]) == (
        f"grpc://{host}/", "grpc, from the Service's port name grpc-api")
    explicit = wait_monitor(kube, ns, "as-tcp", with_status, "the monitor with its own protocol")
    assert (explicit["status"]["url"], explicit["status"]["protocol"]) == (f"tcp://{host}/", "tcp (spec.probe)")
