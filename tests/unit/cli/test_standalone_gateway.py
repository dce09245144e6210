"""``route-monitor standalone`` on HTTPRoutes, Gateways and Ingresses read from files
(Contract 7), as a subprocess against real loopback targets.

Covers: an annotated HTTPRoute is probed at its hostname with the port of the Gateway listener
its parentRef names (a file has no status: the parentRefs are taken as written), and a listener
port edited in the file moves the probes; an Ingress with only wildcard hosts is one stderr line
naming the file, the object and the field, while the other monitors run. An annotated GRPCRoute
and TCPRoute are probed (gRPC health over h2c, TCP) through the Gateway's listeners and, for the
TCPRoute, the Gateway's address in the file; ``check`` says which protocol each speaks and why.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support import servers
from tests.support.net import wait_for
from tests.support.protocolservers import PONG, GRPCHealth, LineServer
from tests.support.servers import Targets
from tests.unit.cli.test_standalone import Proc, folder, proc_factory

targets = servers.targets
pytestmark = pytest.mark.timeout(60)
__all__ = ["folder", "proc_factory"]  # fixtures shared with test_standalone


def gateway_and_route(port: int) -> str:
    return textwrap.dedent(f"""\
        apiVersion: gateway.networking.k8s.io/v1
        kind: HTTPRoute
        metadata:
          name: payments
          namespace: shop
          annotations: {{routemonitor.io/slo: "99.9", routemonitor.io/interval: 1s}}
        spec:
          parentRefs: [{{name: edge, sectionName: web}}]
          hostnames: ["*.example.com", localhost]
          rules: [{{matches: [{{path: {{type: PathPrefix, value: /pay}}}}]}}]
        ---
        apiVersion: gateway.networking.k8s.io/v1
        kind: Gateway
        metadata: {{name: edge, namespace: shop}}
        spec:
          gatewayClassName: example
          listeners: [{{name: web, protocol: HTTP, port: {port}}}]
        """)


WILDCARD_INGRESS = textwrap.dedent("""\
    apiVersion: networking.k8s.io/v1
    kind: Ingress
    metadata:
      name: wild
      namespace: shop
      annotations: {routemonitor.io/slo: "99.9"}
    spec:
      rules: [{host: "*.example.com"}]
    """)


def probes(proc: Proc, url: str) -> float:
    return proc.value("route_monitor_target_info", namespace="shop", monitor="payments", kind="httproute",
                      name="payments", url=url) or 0


def test_httproute_probed_through_the_gateway_listener_in_the_files(
        targets: Targets, folder: Path, proc_factory: list[Proc]) -> None:
    first, second = (int(targets.http().rpartition(":")[2]) for _ in range(2))
    (folder / "gateway.yaml").write_text(gateway_and_route(first))
    (folder / "wild.yaml").write_text(WILDCARD_INGRESS)
    proc = Proc(folder)
    proc_factory.append(proc)
    wait_for(lambda: (proc.value("route_monitor_probes_total", namespace="shop", monitor="payments",
                                 result="success") or 0) >= 1, timeout=20, what="the HTTPRoute probed")
    assert probes(proc, f"http://localhost:{first}/pay") == 1
    line = next(ln for ln in proc.stderr.splitlines() if "wild" in ln)
    assert "wild.yaml" in line and "Ingress/shop/wild" in line and "spec.rules[].host" in line
    assert "NoUsableHost" in line and "only wildcard hosts" in line

    (folder / "gateway.yaml").write_text(gateway_and_route(second))
    wait_for(lambda: probes(proc, f"http://localhost:{second}/pay") == 1, timeout=20,
             what="the probes to follow the listener's new port")
    assert proc.stop() == 0


def grpc_and_tcp_routes(grpc_port: int, tcp_port: int) -> str:
    return textwrap.dedent(f"""\
        apiVersion: gateway.networking.k8s.io/v1
        kind: GRPCRoute
        metadata:
          name: checkout
          namespace: shop
          annotations: {{routemonitor.io/slo: "99.9", routemonitor.io/interval: 1s}}
        spec:
          parentRefs: [{{name: edge, sectionName: grpc}}]
          hostnames: [localhost]
        ---
        apiVersion: gateway.networking.k8s.io/v1
        kind: TCPRoute
        metadata:
          name: cache
          namespace: shop
          annotations: {{routemonitor.io/slo: "99.9", routemonitor.io/interval: 1s}}
        spec:
          parentRefs: [{{name: edge, sectionName: redis}}]
        ---
        apiVersion: gateway.networking.k8s.io/v1
        kind: Gateway
        metadata: {{name: edge, namespace: shop}}
        spec:
          gatewayClassName: example
          addresses: [{{type: IPAddress, value: 127.0.0.1}}]
          listeners:
            - {{name: grpc, protocol: HTTP, port: {grpc_port}}}
            - {{name: redis, protocol: TCP, port: {tcp_port}}}
        """)


def test_grpcroute_and_tcproute_probed_through_the_gateway_in_the_files(
        folder: Path, proc_factory: list[Proc]) -> None:
    grpc, line = GRPCHealth(), LineServer(PONG)
    grpc.set("", True)
    try:
        (folder / "gateway.yaml").write_text(grpc_and_tcp_routes(grpc.port, line.port))
        checked = subprocess.run([sys.executable, "-m", "route_monitor.cli.main", "check", str(folder)],
                                 capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0, checked.stderr
        assert "  protocol: grpc, from the GRPCRoute's Gateway listener grpc (HTTP)\n" in checked.stdout
        assert "  protocol: tcp, from the TCPRoute's Gateway listener redis (TCP)\n" in checked.stdout
        proc = Proc(folder)
        proc_factory.append(proc)
        for monitor in ("checkout", "cache"):
            wait_for(lambda m=monitor: (proc.value("route_monitor_probes_total", namespace="shop", monitor=m,  # type: ignore[misc]
                                                   result="success") or 0) >= 1, timeout=20,
                     what=f"{monitor} probed through the Gateway")
        assert proc.value("route_monitor_target_info", namespace="shop", monitor="checkout", kind="grpcroute",
                          name="checkout", url=f"grpc://localhost:{grpc.port}/") == 1
        assert proc.value("route_monitor_target_info", namespace="shop", monitor="cache", kind="tcproute",
                          name="cache", url=f"tcp://127.0.0.1:{line.port}") == 1
        assert proc.stop() == 0
    finally:
        grpc.close()
        line.close()
