"""TLS for probes: one shared SSL context per verification mode, and the leaf certificate's
notAfter, read even when verification fails.

Building an ``SSLContext`` (loading the CA store) costs milliseconds, so contexts are built once
and shared by every probe; each probe still makes a fresh handshake (no session reuse), which
is what a new user experiences. When the verified handshake fails on the certificate, the
prober opens a second, non-verifying connection only to read the certificate, so the expiry
metric and alert keep working on a broken certificate (:func:`read_not_after`).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from functools import lru_cache

from cryptography import x509

from route_monitor.probe.tls.truststore import verify_context


def _no_verify_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


@dataclass(frozen=True)
class TLSContexts:
    """The two contexts every probe uses; tests pass a ``verify`` context that trusts their CA."""

    verify: ssl.SSLContext = field(default_factory=verify_context)
    """Verifies the chain and the hostname (system CA store loaded in memory, honours
    ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``: :mod:`~route_monitor.probe.tls.truststore`)."""
    no_verify: ssl.SSLContext = field(default_factory=_no_verify_context)
    """For ``tls.insecureSkipVerify`` and for reading a certificate that failed verification."""
    extra_cafiles: tuple[str, ...] = ()
    """CA files added to ``verify`` (``$ROUTE_MONITOR_CA_FILES``): the contexts of monitors with their
    own CA or client certificate trust them too."""

    def for_probe(self, insecure_skip_verify: bool) -> ssl.SSLContext:
        return self.no_verify if insecure_skip_verify else self.verify

    @classmethod
    def trusting(cls, cafile: str) -> TLSContexts:
        """Verify against ``cafile`` instead of the system store (tests, the demo)."""
        return cls(verify=verify_context(cafile))


@lru_cache(maxsize=4096)
def _not_after_of_der(der: bytes) -> float:
    return x509.load_der_x509_certificate(der).not_valid_after_utc.timestamp()


def not_after(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> float | None:
    """notAfter (epoch seconds) of the peer's leaf certificate, or None when there is none.

    The DER bytes are the cache key, so a target's unchanged certificate is parsed once."""
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    try:
        return _not_after_of_der(der)
    except ValueError:
        return None

