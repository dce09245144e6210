"""TLS for probes: one shared context per verification mode, and the leaf certificate's notAfter,
read even when verification fails.

Building a context (loading the CA store) costs milliseconds, so contexts are built once, when
the first TLS probe needs one (a process without TLS monitors never loads pyOpenSSL or the CA
store), and shared by every probe; each probe still makes a fresh handshake (no session reuse),
which is what a new user experiences. When the verified handshake fails on the certificate, the
prober opens a second, non-verifying connection only to read the certificate, so the expiry
metric and alert keep working on a broken certificate (``Prober._read_cert``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

from cryptography import x509

from route_monitor.probe.tls.truststore import verify_context

if TYPE_CHECKING:
    from route_monitor.probe.tls.ossl import ClientContext


class PeerCertificate(Protocol):
    def getpeercert(self, binary_form: bool = ...) -> bytes | None: ...


class TLSContexts:
    """The two contexts every probe uses; tests pass a ``verify`` context that trusts their CA."""

    __slots__ = ("_no_verify", "_verify", "extra_cafiles")

    def __init__(self, verify: ClientContext | None = None, no_verify: ClientContext | None = None,
                 extra_cafiles: tuple[str, ...] = ()) -> None:
        self._verify, self._no_verify = verify, no_verify
        self.extra_cafiles = extra_cafiles
        """CA files added to ``verify`` (``$ROUTE_MONITOR_CA_FILES``): the contexts of monitors with
        their own CA or client certificate trust them too."""

    @property
    def verify(self) -> ClientContext:
        """Verifies the chain and the hostname (system CA store loaded in memory, honours
        ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``: :mod:`~route_monitor.probe.tls.truststore`)."""
        if self._verify is None:
            self._verify = verify_context()
        return self._verify

    @property
    def no_verify(self) -> ClientContext:
        """For ``tls.insecureSkipVerify`` and for reading a certificate that failed verification."""
        if self._no_verify is None:
            from route_monitor.probe.tls.ossl import ClientContext
            self._no_verify = ClientContext.new(verify=False)
        return self._no_verify

    def for_probe(self, insecure_skip_verify: bool) -> ClientContext:
        return self.no_verify if insecure_skip_verify else self.verify

    @classmethod
    def trusting(cls, cafile: str) -> TLSContexts:
        """Verify against ``cafile`` instead of the system store (tests, the demo)."""
        return cls(verify=verify_context(cafile))


@lru_cache(maxsize=4096)
def _not_after_of_der(der: bytes) -> float:
    return x509.load_der_x509_certificate(der).not_valid_after_utc.timestamp()


def not_after(connection: PeerCertificate | None) -> float | None:
    """notAfter (epoch seconds) of the peer's leaf certificate, or None when there is none.

    The DER bytes are the cache key, so a target's unchanged certificate is parsed once."""
    if connection is None:
        return None
    der = connection.getpeercert(binary_form=True)
    if not der:
        return None
    try:
        return _not_after_of_der(der)
    except ValueError:
        return None
