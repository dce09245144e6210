"""``route-monitor standalone`` probing a gRPC Service found by its port's ``appProtocol``, a
Redis-like TCP Service found by its ``tcp-`` port name, and a DNS URL target: real servers, the
real process, its /metrics read as Prometheus reads them. A gRPC server turned NOT_SERVING shows
as failures with reason ``grpc_not_serving``; ``check`` says which protocol and why."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.dnsserver import DNSServer
from tests.support.net import wait_for
from tests.support.protocolservers import PONG, GRPCHealth, LineServer
from tests.unit.cli.test_standalone import Proc

pytestmark = pytest.mark.timeout(90)

MANIFESTS = """\
apiVersion: v1
kind: Service
metadata:
  name: checkout
  namespace: shop
  annotations: {{routemonitor.io/slo: "99.9", routemonitor.io/interval: 1s}}
spec: {{ports: [{{name: api, port: 50051, appProtocol: grpc}}]}}
---
apiVersion: v1
kind: Service
metadata:
  name: cache
  namespace: shop
  annotations: {{routemonitor.io/slo: "99.9", routemonitor.io/interval: 1s}}
spec: {{ports: [{{name: tcp-redis, port: 6379}}]}}
---
apiVersion: routemonitor.io/v1alpha1
kind: RouteMonitor
metadata: {{name: resolver, namespace: shop}}
spec:
  target: {{url: "dns://127.0.0.1:{dns_port}"}}
  probe: {{interval: 1s, timeout: 500ms, warmup: 0s, dns: {{name: shop.example, answerRegex: "10\\\\.96\\\\."}}}}
  slo: {{availability: "99.9"}}
"""


@pytest.fixture
def servers() -> Iterator[tuple[GRPCHealth, LineServer, DNSServer]]:
    grpc, line, dns = GRPCHealth(), LineServer(PONG), DNSServer({"shop.example": "10.96.4.2"}, port=0)
    grpc.set("", True)
    yield grpc, line, dns
    grpc.close()
    line.close()
    dns.close()


def count(proc: Proc, monitor: str, result: str) -> float:
    return proc.value("route_monitor_probes_total", namespace="shop", monitor=monitor, result=result) or 0


def test_grpc_tcp_and_dns_monitors_probe_real_servers(tmp_path: Path,
                                                      servers: tuple[GRPCHealth, LineServer, DNSServer]) -> None:
    grpc, line, dns = servers
    folder = tmp_path / "manifests"
    folder.mkdir()
    (folder / "m.yaml").write_text(MANIFESTS.format(dns_port=dns.port))
    checked = subprocess.run([sys.executable, "-m", "route_monitor.cli.main", "check", str(folder)],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
    assert "  protocol: grpc, from the Service's appProtocol grpc\n" in checked.stdout
    assert "  protocol: tcp, from the Service's port name tcp-redis\n" in checked.stdout
    assert "  protocol: dns (spec.probe)\n" in checked.stdout

    proc = Proc(folder, "--service-url", f"shop/checkout=http://127.0.0.1:{grpc.port}",
                "--service-url", f"shop/cache=http://127.0.0.1:{line.port}")
    try:
        for monitor in ("checkout", "cache", "resolver"):
            wait_for(lambda m=monitor: count(proc, m, "success") >= 2, timeout=30,  # type: ignore[misc]
                     what=f"{monitor} probed successfully")
        assert proc.value("route_monitor_target_info", namespace="shop", monitor="checkout", kind="service",
                          name="checkout", url=f"grpc://127.0.0.1:{grpc.port}/") == 1
        assert proc.value("route_monitor_target_info", namespace="shop", monitor="cache", kind="service",
                          name="cache", url=f"tcp://127.0.0.1:{line.port}/") == 1

        grpc.set("", False)
        wait_for(lambda: (proc.value("route_monitor_probe_failures_total", namespace="shop", monitor="checkout",
                                     reason="grpc_not_serving") or 0) >= 1,
                 timeout=30, what="NOT_SERVING counted as a failure with reason grpc_not_serving")
        assert count(proc, "cache", "failure") == 0 and count(proc, "resolver", "failure") == 0
        assert proc.stop() == 0
    finally:
        if proc.p.poll() is None:
            proc.p.kill()
            proc.p.wait(timeout=10)
