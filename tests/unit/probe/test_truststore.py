"""The probes' verifying context trusts the system store loaded once (``probe/tls/truststore.py``).

Real TLS servers (trustme certificates, one behind an intermediate CA as public CAs serve them),
real handshakes through the prober. What a user relies on: ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``
are honoured as with OpenSSL's defaults, a chain with an intermediate verifies, a server from an
untrusted CA fails as ``certificate_invalid``; and the trust is read when the context is built,
not per handshake (a CA put into the directory afterwards is not consulted).
"""

from __future__ import annotations

import asyncio
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from route_monitor.probe.prober import Prober
from route_monitor.probe.result import FailureReason
from route_monitor.probe.tls.contexts import TLSContexts
from route_monitor.probe.tls.ossl import ClientContext
from route_monitor.probe.tls.truststore import verify_context
from route_monitor.spec.monitor import ProbeSettings
from tests.support.servers import Targets


def _hashed_copy(ca: trustme.CA, directory: Path) -> Path:
    """``ca``'s certificate under its OpenSSL subject-hash name, as ``openssl rehash`` names it."""
    pem = directory / "source.pem.tmp"
    ca.cert_pem.write_to_path(str(pem))
    digest = subprocess.run(["openssl", "x509", "-noout", "-subject_hash", "-in", str(pem)],
                            check=True, capture_output=True, text=True).stdout.strip()
    target = directory / f"{digest}.0"
    pem.rename(target)
    return target


class ChainServers:
    """Two HTTPS servers: one behind root A's intermediate, one signed by root B."""

    def __init__(self, folder: Path) -> None:
        self.root_a, self.root_b = trustme.CA(), trustme.CA()
        self.file_a = folder / "a.pem"
        self.root_a.cert_pem.write_to_path(str(self.file_a))
        self.dir_b = folder / "certs"
        self.dir_b.mkdir()
        (folder / "targets").mkdir()
        self.targets = Targets(folder / "targets")  # the servers' loop and thread (its own CA unused)
        self.url_a = self._serve(self.root_a.create_child_ca().issue_cert("localhost"))
        self.url_b = self._serve(self.root_b.issue_cert("localhost"))

    def _serve(self, cert: trustme.LeafCert) -> str:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        cert.configure_cert(ctx)  # the leaf and its intermediate, if any
        return f"https://localhost:{self.targets.tls_port(ctx)}/"


@pytest.fixture(scope="module")
def chains(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChainServers]:
    servers = ChainServers(tmp_path_factory.mktemp("truststore"))
    yield servers
    servers.targets.close()


def _probe(ctx: ClientContext, url: str) -> tuple[bool, FailureReason | None]:
    prober = Prober(tls=TLSContexts(verify=ctx))
    req = prober.request(("ns", "m"), url, ProbeSettings(timeout_ms=5000))
    result = asyncio.run(prober.probe(req))
    return result.success, result.reason


def test_system_file_trusts_a_chain_with_an_intermediate(chains: ChainServers,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(chains.file_a))
    monkeypatch.setenv("SSL_CERT_DIR", str(chains.dir_b))  # empty directory
    ctx = TLSContexts().verify
    assert _probe(ctx, chains.url_a) == (True, None)
    assert _probe(ctx, chains.url_b) == (False, FailureReason.CERTIFICATE_INVALID)


def test_system_directory_named_by_ssl_cert_dir_is_trusted_too(chains: ChainServers, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "certs"
    folder.mkdir()
    _hashed_copy(chains.root_b, folder)
    (folder / "README").write_text("not a certificate")
    (folder / "00000000.0").write_text("not a certificate either")
    monkeypatch.setenv("SSL_CERT_FILE", str(chains.file_a))
    monkeypatch.setenv("SSL_CERT_DIR", str(folder))
    ctx = verify_context()
    assert _probe(ctx, chains.url_a) == (True, None)
    assert _probe(ctx, chains.url_b) == (True, None)


def test_directory_is_read_when_the_context_is_built_not_per_handshake(chains: ChainServers, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "certs"
    folder.mkdir()
    monkeypatch.setenv("SSL_CERT_FILE", str(chains.file_a))
    monkeypatch.setenv("SSL_CERT_DIR", str(folder))
    ours = verify_context()
    openssl_default = ClientContext.new(verify=True)
    openssl_default.raw.load_verify_locations(None, str(folder))  # OpenSSL's per-handshake directory lookups
    _hashed_copy(chains.root_b, folder)
    assert _probe(openssl_default, chains.url_b) == (True, None)  # found by a lookup at handshake time
    assert _probe(ours, chains.url_b) == (False, FailureReason.CERTIFICATE_INVALID)
    assert _probe(verify_context(), chains.url_b) == (True, None)  # a new context (a restart) reads it


def test_given_ca_file_is_the_only_trust(chains: ChainServers, monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    folder = tmp_path / "certs"
    folder.mkdir()
    _hashed_copy(chains.root_b, folder)
    monkeypatch.setenv("SSL_CERT_DIR", str(folder))
    ctx = TLSContexts.trusting(str(chains.file_a)).verify
    assert _probe(ctx, chains.url_a) == (True, None)
    assert _probe(ctx, chains.url_b) == (False, FailureReason.CERTIFICATE_INVALID)


def test_monitor_ca_adds_to_the_system_store(chains: ChainServers, monkeypatch: pytest.MonkeyPatch) -> None:
    from route_monitor.probe.tls.sslcache import SSLContextCache

    monkeypatch.setenv("SSL_CERT_FILE", str(chains.file_a))
    ctx = SSLContextCache().context(ca_pem=chains.root_b.cert_pem.bytes())
    assert _probe(ctx, chains.url_a) == (True, None)
    assert _probe(ctx, chains.url_b) == (True, None)
