"""The probes' TLS on pyOpenSSL (``probe/tls/ossl.py``, ``probe/tls/connection.py``) accepts and
refuses what the stdlib ``ssl`` client did, and says why in the same words.

Real servers (the stdlib's ``ssl`` on the system OpenSSL, trustme certificates), real probes:
a host name or IP address the certificate does not name, a wildcard beyond its one label or a
partial one, an expired leaf, an unknown CA and an RSA-1024 key (security level 2) are
``certificate_invalid`` with the stdlib's verify message (each case is also handshaken with the
stdlib client, and both must say the same); an IP SAN matches the
IP literal and a DNS SAN never does; ``insecureSkipVerify`` accepts them all and still reads
notAfter; a server that requires a client certificate refuses a probe without one and accepts
one with it (loaded from memory); ALPN ``h2`` is chosen when offered; SNI is the host name and
is not sent for an IP address. A ``cryptography`` whose bindings lack a function the host check
needs fails with one message naming it.
"""

from __future__ import annotations

import datetime as dt
import socket
import ssl
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from route_monitor.probe.net.connect import Progress, open_stream
from route_monitor.probe.prober import Prober
from route_monitor.probe.result import FailureReason as R
from route_monitor.probe.result import ProbeResult
from route_monitor.probe.tls import ossl
from route_monitor.probe.tls.contexts import TLSContexts
from route_monitor.probe.tls.sslcache import SSLContextCache
from route_monitor.spec.monitor import ProbeSettings
from route_monitor.spec.request import parse_request
from route_monitor.targets.credentials import build as build_credentials
from tests.support.authtargets import AuthTarget, PrivateCA
from tests.support.servers import Targets

pytestmark = pytest.mark.timeout(30)
NOW = dt.datetime.now(dt.UTC)


def _leaf(ca: trustme.CA, name: str, rsa_bits: int = 0) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a leaf for the DNS name ``name`` as written (trustme refuses
    a partial wildcard such as ``w*.example.test``), signed by ``ca``; P-256, or RSA of ``rsa_bits``."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    ca_key = serialization.load_pem_private_key(ca.private_key_pem.bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey)
    key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey = (
        rsa.generate_private_key(65537, rsa_bits) if rsa_bits else ec.generate_private_key(ec.SECP256R1()))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(NOW - dt.timedelta(days=1)).not_valid_after(NOW + dt.timedelta(days=10))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=True)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def _tls12_only() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    return ctx


class Servers:
    """HTTPS servers on loopback, one per certificate kind, on their own loop in a thread."""

    def __init__(self, folder: Path) -> None:
        self.ca, self.other_ca = trustme.CA(), trustme.CA()
        self.cafile = folder / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.cafile))
        (folder / "targets").mkdir()
        self.targets = Targets(folder / "targets")  # the servers' loop and thread (its own CA unused)
        self.sni: list[str | None] = []
        self.ports = {
            "good": self._serve(self.ca.issue_cert("localhost", "127.0.0.1")),
            "dns-only": self._serve(self.ca.issue_cert("localhost")),
            "other-ip": self._serve(self.ca.issue_cert("127.0.0.2")),
            "wrong-host": self._serve(self.ca.issue_cert("wrong.example")),
            "wildcard": self._serve(self.ca.issue_cert("*.example.test")),
            "partial-wildcard": self._serve_pems(*_leaf(self.ca, "w*.example.test")),
            "weak-key": self._serve_pems(*_leaf(self.ca, "localhost", rsa_bits=1024)),
            "expired": self._serve(self.ca.issue_cert("localhost", "127.0.0.1", not_before=NOW - dt.timedelta(days=30),
                                                      not_after=NOW - dt.timedelta(days=1))),
            "unknown-ca": self._serve(self.other_ca.issue_cert("localhost", "127.0.0.1")),
            "h2": self._serve(self.ca.issue_cert("localhost", "127.0.0.1"), alpn=["h2", "http/1.1"]),
            "tls1.2-only": self._serve(self.ca.issue_cert("localhost", "127.0.0.1"), ctx=_tls12_only()),
        }

    def _serve_pems(self, cert_pem: bytes, key_pem: bytes) -> int:
        folder = Path(self.cafile).parent
        (folder / "leaf.pem").write_bytes(cert_pem + key_pem)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")  # the server may serve a weak key: the client must refuse it
        ctx.load_cert_chain(str(folder / "leaf.pem"))
        return self._serve(None, ctx=ctx)

    def _serve(self, cert: trustme.LeafCert | None, alpn: list[str] | None = None,
               ctx: ssl.SSLContext | None = None) -> int:
        ctx = ctx or ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        if cert is not None:
            cert.configure_cert(ctx)
        if alpn:
            ctx.set_alpn_protocols(alpn)

        def on_sni(obj: ssl.SSLObject, name: str | None, _: ssl.SSLContext) -> None:
            self.sni.append(name)
        ctx.sni_callback = on_sni  # type: ignore[assignment]
        return self.targets.tls_port(ctx)

    def stdlib_verdict(self, kind: str, name: str) -> str | None:
        """What the stdlib client (system OpenSSL) says of the same server: None or its verify message."""
        ctx = ssl.create_default_context(cafile=str(self.cafile))
        with socket.create_connection(("127.0.0.1", self.ports[kind]), timeout=5) as raw:
            try:
                with ctx.wrap_socket(raw, server_hostname=name):
                    return None
            except ssl.SSLCertVerificationError as e:
                return str(e.verify_message)

    def close(self) -> None:
        self.targets.close()


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    s = Servers(tmp_path_factory.mktemp("tls"))
    yield s
    s.close()


async def probe(servers: Servers, kind: str, name: str, **kw: object) -> ProbeResult:
    """A probe of the ``kind`` server that verifies ``name``: the URL's host when it is localhost
    or an IP address, else ``tls.serverName`` on a URL by address."""
    prober = Prober(tls=TLSContexts.trusting(str(servers.cafile)))
    port = servers.ports[kind]
    by_url = name == "localhost" or name[0].isdigit()
    url = f"https://{name if by_url else '127.0.0.1'}:{port}/"
    request = parse_request({} if by_url else {"tls": {"serverName": name}})
    settings = ProbeSettings(**{"timeout_ms": 5000, "request": request, **kw})  # type: ignore[arg-type]
    return await prober.probe(prober.request(("ns", "m"), url, settings))


@pytest.mark.parametrize(("kind", "name", "message"), [
    pytest.param("wrong-host", "localhost", "Hostname mismatch, certificate is not valid for 'localhost'.",
                 id="host-name-mismatch"),
    pytest.param("wildcard", "a.www.example.test",
                 "Hostname mismatch, certificate is not valid for 'a.www.example.test'.",
                 id="wildcard-covers-one-label-only"),
    pytest.param("partial-wildcard", "www.example.test",
                 "Hostname mismatch, certificate is not valid for 'www.example.test'.",
                 id="no-partial-wildcards-as-the-stdlib"),
    pytest.param("other-ip", "127.0.0.1", "IP address mismatch, certificate is not valid for '127.0.0.1'.",
                 id="ip-san-mismatch"),
    pytest.param("dns-only", "127.0.0.1", "IP address mismatch, certificate is not valid for '127.0.0.1'.",
                 id="ip-literal-never-matches-a-dns-san"),
    pytest.param("expired", "localhost", "certificate has expired", id="expired-leaf"),
    pytest.param("unknown-ca", "localhost", "unable to get local issuer certificate", id="unknown-ca"),
    pytest.param("weak-key", "localhost", "EE certificate key too weak", id="rsa-1024-under-security-level-2"),
])
async def test_a_certificate_the_stdlib_refuses_is_refused_with_its_words(servers: Servers, kind: str, name: str,
                                                                          message: str) -> None:
    result = await probe(servers, kind, name)
    assert (result.success, result.reason) == (False, R.CERTIFICATE_INVALID), result.detail
    assert result.detail == f"certificate invalid: {message}"
    assert servers.stdlib_verdict(kind, name) == message  # the stdlib client says the same of this server
    assert result.cert_not_after is not None  # read on a second, unverified connection


@pytest.mark.parametrize(("kind", "name"), [
    pytest.param("good", "localhost", id="dns-san"),
    pytest.param("good", "127.0.0.1", id="ip-san-matches-the-ip-literal"),
    pytest.param("wildcard", "www.example.test", id="wildcard-matches-one-label"),
    pytest.param("tls1.2-only", "localhost", id="a-tls-1.2-server"),
])
async def test_a_matching_certificate_is_accepted(servers: Servers, kind: str, name: str) -> None:
    result = await probe(servers, kind, name)
    assert (result.success, result.status_code) == (True, 200), result.detail
    assert servers.stdlib_verdict(kind, name) is None


@pytest.mark.parametrize("kind", ["wrong-host", "expired", "unknown-ca", "dns-only"])
async def test_insecure_skip_verify_accepts_any_certificate_and_reads_not_after(servers: Servers, kind: str) -> None:
    result = await probe(servers, kind, "127.0.0.1", insecure_skip_verify=True)
    assert (result.success, result.status_code) == (True, 200), result.detail
    assert result.cert_not_after is not None


async def test_sni_is_the_host_name_and_none_for_an_ip_address(servers: Servers) -> None:
    servers.sni.clear()
    named = await probe(servers, "good", "localhost")
    by_ip = await probe(servers, "good", "127.0.0.1")
    assert named.success and by_ip.success, (named.detail, by_ip.detail)
    assert servers.sni == ["localhost", None]


async def test_alpn_h2_is_chosen_when_the_context_offers_it(servers: Servers) -> None:
    cache = SSLContextCache(cafile=str(servers.cafile))
    for ctx, chosen in ((cache.context(alpn=("h2",)), "h2"), (cache.context(), None)):
        stream = await open_stream("127.0.0.1", servers.ports["h2"], Progress(), tls=ctx, server_hostname="localhost")
        try:
            assert stream.get_extra_info("ssl_object").selected_alpn_protocol() == chosen
        finally:
            stream.abort()


@pytest.mark.parametrize("present", [pytest.param(True, id="client-certificate-presented"),
                                     pytest.param(False, id="no-client-certificate")])
async def test_a_server_requiring_a_client_certificate(present: bool) -> None:
    server_ca, client_ca = PrivateCA(), PrivateCA()
    target = AuthTarget(tls=server_ca.server_context(client_ca=client_ca))
    try:
        spec: dict[str, object] = {"caRef": {"configMap": {"name": "ca"}}}
        if present:
            spec["clientCertRef"] = {"secret": {"name": "client"}}
        options = parse_request({"tls": spec})
        cert, key = client_ca.client_pair()
        values = {"ca/ca.crt": server_ca.pem, "client/tls.crt": cert, "client/tls.key": key}
        credentials = build_credentials(options, lambda ref: values[f"{ref.ref.name}/{ref.key}"])
        prober = Prober(tls=TLSContexts(verify=ossl.ClientContext.new(verify=True)))  # trusts nothing itself
        req = prober.request(("ns", "m"), target.url(), ProbeSettings(timeout_ms=5000, request=options), credentials)
        result = await prober.probe(req)
    finally:
        target.close()
    if present:
        assert (result.success, result.status_code) == (True, 200), result.detail
    else:
        assert (result.success, result.reason) == (False, R.TLS_ERROR), result.detail
        assert "the server refused the client certificate" in result.detail
        assert "none is configured" in result.detail


@pytest.mark.parametrize(("material", "words"), [
    pytest.param({"ca_pem": b"no certificate here"}, "no certificate or crl found", id="ca-without-certificate"),
    pytest.param({"client_pem": b"-----BEGIN CERTIFICATE-----\nbm90\n-----END CERTIFICATE-----\n"}, "",
                 id="corrupt-client-certificate"),
    pytest.param("mismatched", "", id="client-key-of-another-certificate"),
])
def test_unusable_material_raises_a_value_error_with_openssl_s_reason(material: object, words: str) -> None:
    ca = PrivateCA()
    if material == "mismatched":
        cert, _ = ca.client_pair()
        _, other_key = ca.client_pair("someone-else")
        material = {"client_pem": cert + other_key}
    with pytest.raises(ValueError) as raised:
        SSLContextCache().context(**material)  # type: ignore[arg-type]
    assert isinstance(raised.value, ossl.TLSMaterialError) and str(raised.value), raised.value
    assert words in str(raised.value)


def test_bindings_without_the_host_check_fail_with_one_message() -> None:
    complete = {name: 1 for name in ossl.REQUIRED}
    ossl._check(types.SimpleNamespace(**complete))  # nothing missing: no error
    lacking = types.SimpleNamespace(**{k: v for k, v in complete.items() if k != "X509_VERIFY_PARAM_set1_host"})
    with pytest.raises(ossl.BindingsMissing, match=r"lack X509_VERIFY_PARAM_set1_host; install the cryptography"):
        ossl._check(lacking)


def _offered(client_hello: bytes) -> tuple[list[int], list[int]]:
    """(supported_groups, the groups of the key shares) of a ClientHello record."""
    p = 5 + 4 + 2 + 32
    p += 1 + client_hello[p]  # session id
    p += 2 + int.from_bytes(client_hello[p:p + 2], "big")  # cipher suites
    p += 1 + client_hello[p]  # compression methods
    end = p + 2 + int.from_bytes(client_hello[p:p + 2], "big")
    p += 2
    groups: list[int] = []
    shares: list[int] = []
    while p < end:
        kind, size = int.from_bytes(client_hello[p:p + 2], "big"), int.from_bytes(client_hello[p + 2:p + 4], "big")
        body, p = client_hello[p + 4:p + 4 + size], p + 4 + size
        if kind == 10:  # supported_groups
            groups = [int.from_bytes(body[i:i + 2], "big") for i in range(2, len(body), 2)]
        elif kind == 51:  # key_share
            i = 2
            while i < len(body):
                shares.append(int.from_bytes(body[i:i + 2], "big"))
                i += 4 + int.from_bytes(body[i + 2:i + 4], "big")
    return groups, shares


def test_the_key_exchange_offered_is_the_stdlib_client_s() -> None:
    """The same groups as the system OpenSSL's client, one X25519 key share: no ML-KEM hybrid
    (a key generation per probe the probes never made before)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    stdlib = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        stdlib.do_handshake()
    ours = ossl.ClientContext.new(verify=True).connection("localhost")
    assert not ours.handshake()
    hello = ours.outgoing()
    assert _offered(hello) == _offered(outgoing.read())
    assert _offered(hello)[1] == [0x1D]  # X25519
