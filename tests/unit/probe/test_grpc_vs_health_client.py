"""Our gRPC health verdicts against grpcio's own health client on the same real servers.

The kubelet's gRPC probe and ``grpc-health-probe`` are both a ``grpc.health.v1.Health/Check``
call through a gRPC library's client stub, healthy only when the answer is ``SERVING``; any
other answer or RPC status (``NOT_FOUND`` for a service the server does not know) is unhealthy.
grpcio's stub is that client, so each case runs it beside our probe against one server (grpcio's
health servicer, over h2c, TLS and mutual TLS) and requires the same verdict, and for an
unhealthy answer the failure class the client saw: a serving status other than ``SERVING`` is
``grpc_not_serving``, an RPC status is ``grpc_status`` naming that status.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
import trustme
from grpc_health.v1 import health_pb2, health_pb2_grpc

from route_monitor.probe.result import FailureReason as R
from route_monitor.targets.credentials import Credentials
from tests.support.protocolprobe import ca_file, probe, settings
from tests.support.protocolservers import GRPCHealth

pytestmark = pytest.mark.timeout(60)

CHECKOUT = "checkout.v1.Checkout"


@pytest.fixture
def ca(tmp_path: Path) -> tuple[trustme.CA, Path]:
    return ca_file(tmp_path)


def health_client(port: int, service: str, credentials: grpc.ChannelCredentials | None) -> tuple[bool, str, bool]:
    """grpcio's verdict: (healthy, the serving status's or the RPC status's name, whether it is an RPC status)."""
    target = f"localhost:{port}"
    with (grpc.secure_channel(target, credentials) if credentials else grpc.insecure_channel(target)) as channel:
        try:
            answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                               timeout=5)
        except grpc.RpcError as e:
            return False, e.code().name, True
    name = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
    return answer.status == health_pb2.HealthCheckResponse.SERVING, name, False


@pytest.mark.parametrize(("service", "state"), [
    ("", True), (CHECKOUT, True), (CHECKOUT, False), (CHECKOUT, None), ("unknown.Service", "absent"),
], ids=["server-serving", "service-serving", "not-serving", "unknown-status", "unknown-service"])
async def test_h2c_verdicts_agree_with_the_health_client(service: str, state: bool | str | None) -> None:
    server = GRPCHealth()
    server.set("", True)
    if state != "absent":
        server.set(service, state)  # type: ignore[arg-type]
    try:
        ours = await probe(f"grpc://127.0.0.1:{server.port}", settings({"grpc": {"service": service}}))
        healthy, said, rpc_status = health_client(server.port, service, None)
    finally:
        server.close()
    assert ours.success is healthy, (ours, said)
    if not healthy:
        assert ours.reason is (R.GRPC_STATUS if rpc_status else R.GRPC_NOT_SERVING), (ours, said)
        assert said in ours.detail, (ours, said)


@pytest.mark.parametrize("mutual", [False, True], ids=["tls", "mutual-tls"])
@pytest.mark.parametrize("serving", [True, False], ids=["serving", "not-serving"])
async def test_tls_verdicts_agree_with_the_health_client(ca: tuple[trustme.CA, Path], mutual: bool,
                                                         serving: bool) -> None:
    authority, cafile = ca
    server = GRPCHealth(authority, mutual=mutual)
    server.set("", serving)
    client = authority.issue_cert("prober.example")
    key, chain = client.private_key_pem.bytes(), b"".join(b.bytes() for b in client.cert_chain_pems)
    credentials = Credentials(client_pem=client.private_key_and_cert_chain_pem.bytes()) if mutual else None
    try:
        ours = await probe(f"grpcs://localhost:{server.port}", settings({"grpc": {"tls": True}}), cafile,
                           credentials)
        healthy, said, _ = health_client(server.port, "", grpc.ssl_channel_credentials(
            authority.cert_pem.bytes(), *((key, chain) if mutual else (None, None))))
    finally:
        server.close()
    assert ours.success is healthy, (ours, said)
    assert ours.reason is (None if serving else R.GRPC_NOT_SERVING), ours
