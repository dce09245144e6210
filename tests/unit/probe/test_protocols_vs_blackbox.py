"""Our gRPC, TCP and DNS verdicts against Debian's blackbox_exporter's ``grpc``, ``tcp``
(``query_response``) and ``dns`` modules, both probing the same real servers: the success must
be the same for every case, and the failure class the same where the exporter exposes it
(``probe_grpc_status_code`` and ``probe_grpc_healthcheck_response``; for DNS, whether an
answer came and how many records it held: this exporter has no rcode metric).

Where the two legitimately differ, the case says why (``differs``).
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trustme
from prometheus_client.parser import text_string_to_metric_families

from benchmarks import measure
from route_monitor.probe.result import FailureReason as R
from route_monitor.probe.result import ProbeResult
from tests.support.dnsserver import DNSServer
from tests.support.protocolprobe import DNS_ANSWERS, ca_file, probe, settings
from tests.support.protocolservers import (
    CLOSE,
    ERROR,
    PONG,
    SILENT,
    GRPCHealth,
    LineServer,
)

EXPORTER = "/usr/bin/prometheus-blackbox-exporter"
pytestmark = [pytest.mark.timeout(60),
              pytest.mark.skipif(shutil.which(EXPORTER) is None, reason="prometheus-blackbox-exporter not installed")]

CHECKOUT = "checkout.v1.Checkout"


def _modules(cafile: Path) -> str:
    tls = f"      tls: true\n      tls_config:\n        ca_file: {cafile}\n"
    ping = '      query_response:\n        - send: "PING"\n        - expect: "^\\\\+PONG"\n'
    out = ["modules:"]
    for name, service, extra in (("grpc_server", "", ""), ("grpc_checkout", CHECKOUT, ""),
                                 ("grpc_unknown", "unknown.Service", ""), ("grpc_tls", "", tls)):
        out.append(f"  {name}:\n    prober: grpc\n    timeout: 1s\n    grpc:\n      service: \"{service}\"\n"
                   f"      preferred_ip_protocol: ip4\n      ip_protocol_fallback: false\n{extra}")
    for name, extra in (("tcp_ping", ""), ("tcp_ping_tls", tls)):
        out.append(f"  {name}:\n    prober: tcp\n    timeout: 1s\n    tcp:\n      preferred_ip_protocol: ip4\n"
                   f"      ip_protocol_fallback: false\n{extra}{ping}")
    for name, qname, rcodes, regex in (
            ("dns_shop", "shop.example", "[NOERROR]", None), ("dns_shop_match", "shop.example", "[NOERROR]", "10\\\\.96\\\\."),
            ("dns_shop_mismatch", "shop.example", "[NOERROR]", "10\\\\.97\\\\."),
            ("dns_gone", "gone.example", "[NOERROR]", None), ("dns_gone_ok", "gone.example", "[NOERROR, NXDOMAIN]", None),
            ("dns_broken", "broken.example", "[NOERROR]", None), ("dns_hang", "hang.example", "[NOERROR]", None)):
        answers = f"      validate_answer_rrs:\n        fail_if_none_matches_regexp: [\"{regex}\"]\n" if regex else ""
        out.append(f"  {name}:\n    prober: dns\n    timeout: 1s\n    dns:\n      query_name: {qname}\n"
                   f"      query_type: A\n      transport_protocol: udp\n      preferred_ip_protocol: ip4\n"
                   f"      ip_protocol_fallback: false\n      valid_rcodes: {rcodes}\n{answers}")
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Exporter:
    port: int

    def probe(self, module: str, target: str) -> dict[str, float]:
        """One ``/probe``: every sample as ``name{labels}`` -> value (labels sorted)."""
        query = urllib.parse.urlencode({"module": module, "target": target})
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/probe?{query}", timeout=10) as r:
            text = r.read().decode()
        out: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
                out[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
        return out


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[trustme.CA, Path]:
    return ca_file(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def exporter(ca: tuple[trustme.CA, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exporter]:
    work = tmp_path_factory.mktemp("blackbox")
    config = work / "blackbox.yml"
    config.write_text(_modules(ca[1]))
    port = measure.free_port()
    proc = subprocess.Popen([EXPORTER, f"--config.file={config}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=(work / "log").open("w"), text=True)
    try:
        measure.wait_http(f"http://127.0.0.1:{port}/metrics", 30.0)
        yield Exporter(port)
    finally:
        measure.stop(proc)


async def ours(url: str, spec: dict[str, Any], cafile: Path | None = None) -> ProbeResult:
    return await probe(url, settings(spec), cafile)


# --- TCP -----------------------------------------------------------------------------------

PING = {"tcp": {"steps": [{"send": "PING\n"}, {"expect": "^\\+PONG"}]}}


@pytest.mark.parametrize(("mode", "tls", "reason"), [
    (PONG, False, None),
    (PONG, True, None),
    (ERROR, False, R.EXPECT_MISMATCH),
    (ERROR, True, R.EXPECT_MISMATCH),
    (SILENT, False, R.TIMEOUT),
    (CLOSE, False, R.EXPECT_MISMATCH),
], ids=["pong", "pong-tls", "wrong-answer", "wrong-answer-tls", "silent", "closed"])
async def test_tcp_query_response_agrees(exporter: Exporter, ca: tuple[trustme.CA, Path], mode: str, tls: bool,
                                         reason: R | None) -> None:
    server_tls = None
    if tls:
        server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca[0].issue_cert("localhost", "127.0.0.1").configure_cert(server_tls)
    server = LineServer(mode, tls=server_tls)
    try:
        spec = {"tcp": {**PING["tcp"], "tls": True}} if tls else PING
        result = await ours(f"{'tls' if tls else 'tcp'}://127.0.0.1:{server.port}", spec, ca[1] if tls else None)
        theirs = exporter.probe("tcp_ping_tls" if tls else "tcp_ping", f"127.0.0.1:{server.port}")
    finally:
        server.close()
    assert result.success == bool(theirs["probe_success"]), (result, theirs)
    assert result.reason is reason, result
    # The exporter's tcp module has no metric telling a wrong answer from silence or a close:
    # both fail its expect step the same way; our reason (expect_mismatch / timeout) is finer.


# --- DNS -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dns_server() -> Iterator[DNSServer]:
    server = DNSServer(DNS_ANSWERS, port=0)
    yield server
    server.close()


@pytest.mark.parametrize(("module", "dns", "reason", "rcode"), [
    ("dns_shop", {"name": "shop.example"}, None, "NOERROR"),
    ("dns_shop_match", {"name": "shop.example", "answerRegex": "10\\.96\\."}, None, "NOERROR"),
    ("dns_shop_mismatch", {"name": "shop.example", "answerRegex": "10\\.97\\."}, R.DNS_ANSWER_MISMATCH, "NOERROR"),
    ("dns_gone", {"name": "gone.example"}, R.DNS_RCODE, "NXDOMAIN"),
    ("dns_gone_ok", {"name": "gone.example", "validRcodes": ["NOERROR", "NXDOMAIN"]}, None, "NXDOMAIN"),
    ("dns_broken", {"name": "broken.example"}, R.DNS_RCODE, "SERVFAIL"),
    ("dns_hang", {"name": "hang.example"}, R.TIMEOUT, None),
], ids=["answers", "answer-matches", "answer-mismatch", "nxdomain", "nxdomain-accepted", "servfail", "silent"])
async def test_dns_agrees(exporter: Exporter, dns_server: DNSServer, module: str, dns: dict[str, Any],
                          reason: R | None, rcode: str | None) -> None:
    result = await ours(f"dns://127.0.0.1:{dns_server.port}", {"dns": dns})
    theirs = exporter.probe(module, f"127.0.0.1:{dns_server.port}")
    assert result.success == bool(theirs["probe_success"]), (result, theirs)
    assert result.reason is reason, result
    # This exporter (0.23) exposes no rcode metric (probe_dns_rcode came later): what it does
    # expose is whether an answer came at all and how many answer records it held, which must
    # agree with our class (timeout: no answer; dns_rcode / dns_answer_mismatch: an answer).
    assert theirs["probe_dns_query_succeeded"] == (0 if reason is R.TIMEOUT else 1), theirs
    assert theirs["probe_dns_answer_rrs"] == (1 if rcode == "NOERROR" else 0), theirs
    if rcode is not None and reason is not R.DNS_ANSWER_MISMATCH:
        assert rcode in result.detail, result


# --- gRPC ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("module", "service", "serving", "reason", "status_code"), [
    ("grpc_server", "", True, None, 0),
    ("grpc_checkout", CHECKOUT, True, None, 0),
    ("grpc_checkout", CHECKOUT, False, R.GRPC_NOT_SERVING, 0),
    ("grpc_checkout", CHECKOUT, None, R.GRPC_NOT_SERVING, 0),
    ("grpc_unknown", "unknown.Service", True, R.GRPC_STATUS, 5),
], ids=["server-serving", "service-serving", "not-serving", "unknown-status", "unknown-service"])
async def test_grpc_h2c_agrees(exporter: Exporter, module: str, service: str, serving: bool | None,
                               reason: R | None, status_code: int) -> None:
    server = GRPCHealth()
    server.set("", True)
    if service != "unknown.Service":
        server.set(service, serving)
    try:
        result = await ours(f"grpc://127.0.0.1:{server.port}", {"grpc": {"service": service}})
        theirs = exporter.probe(module, f"127.0.0.1:{server.port}")
    finally:
        server.close()
    assert result.success == bool(theirs["probe_success"]), (result, theirs)
    assert result.reason is reason, result
    # probe_grpc_status_code is the RPC's status (5 NOT_FOUND for a service the server does not
    # know); a NOT_SERVING answer is an OK RPC whose serving status is not SERVING.
    assert theirs["probe_grpc_status_code"] == status_code, theirs
    if status_code == 0:
        shown = next(k for k, v in theirs.items() if k.startswith("probe_grpc_healthcheck_response") and v == 1)
        status = shown.split("serving_status=")[1].rstrip("}")
        assert status in result.detail, (status, result)


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted", "untrusted-ca"])
async def test_grpc_tls_agrees(exporter: Exporter, ca: tuple[trustme.CA, Path], trusted: bool) -> None:
    server = GRPCHealth(ca[0] if trusted else trustme.CA())  # untrusted: a CA neither side trusts
    server.set("", True)
    try:
        result = await ours(f"grpcs://127.0.0.1:{server.port}", {"grpc": {"tls": True}}, ca[1])
        theirs = exporter.probe("grpc_tls", f"127.0.0.1:{server.port}")
    finally:
        server.close()
    assert result.success == bool(theirs["probe_success"]), (result, theirs)
    assert result.reason is (None if trusted else R.CERTIFICATE_INVALID), result
