"""The probes' TLS contexts on pyOpenSSL, whose OpenSSL is the one bundled with ``cryptography``.

Nine tenths of an HTTPS probe's CPU is OpenSSL's handshake; the system OpenSSL 3.0 that Python's
``ssl`` links spends a third of it setting up decoders for each received certificate's key,
which the newer OpenSSL bundled with ``cryptography`` does not (``benchmarks/RESULTS.md``). Only
the probes use it: the Kubernetes and Prometheus clients keep the stdlib ``ssl``.

A :class:`ClientContext` accepts what the stdlib client context (``ssl.SSLContext(
PROTOCOL_TLS_CLIENT)``, Python 3.11) accepts, no more: TLS 1.2 at least, the same cipher
string and security level, the certificate required and verified, the host name or IP address
checked *inside* OpenSSL's verification (``X509_VERIFY_PARAM_set1_host``/``set1_ip`` on the
connection, as ``_ssl.c`` does, no partial wildcards), SNI for names only. pyOpenSSL has no
call for the host check, so it goes through ``cryptography``'s OpenSSL bindings; importing this
module checks they are all there and fails with one message naming what is missing.

This module imports pyOpenSSL: it is imported when the first TLS context is built, so a
process without a TLS monitor does not load it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.bindings.openssl.binding import Binding
from OpenSSL import SSL
from OpenSSL import __version__ as pyopenssl_version

if TYPE_CHECKING:
    from route_monitor.probe.tls.connection import TLSConnection

lib, ffi = Binding.lib, Binding.ffi
"""``cryptography``'s OpenSSL bindings: the library pyOpenSSL calls, with what it does not wrap."""

REQUIRED = ("SSL_get0_param", "SSL_CTX_get0_param", "X509_VERIFY_PARAM_set1_host", "X509_VERIFY_PARAM_set1_ip",
            "X509_VERIFY_PARAM_set_hostflags", "X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS", "SSL_get_verify_result",
            "X509_verify_cert_error_string", "X509_V_ERR_HOSTNAME_MISMATCH", "X509_V_ERR_IP_ADDRESS_MISMATCH",
            "SSL_CTX_get_cert_store", "X509_STORE_get0_objects", "sk_X509_OBJECT_num", "SSL_CTX_set_options",
            "SSL_OP_ALL", "SSL_OP_DONT_INSERT_EMPTY_FRAGMENTS", "SSL_OP_NO_COMPRESSION", "SSL_OP_NO_SSLv3",
            "SSL_OP_CIPHER_SERVER_PREFERENCE", "SSL_CTX_set1_curves_list", "BIO_get_mem_data")
"""What the probes call in ``cryptography``'s OpenSSL bindings beyond pyOpenSSL's API."""


class BindingsMissing(ImportError):
    """``cryptography``'s OpenSSL bindings lack a function the probes' verification needs."""


def missing_bindings(bindings: Any) -> list[str]:
    return [name for name in REQUIRED if not hasattr(bindings, name)]


def _check(bindings: Any) -> None:
    missing = missing_bindings(bindings)
    if missing:
        from cryptography import __version__ as cryptography_version
        raise BindingsMissing(
            f"TLS probes cannot verify host names: cryptography {cryptography_version}'s OpenSSL bindings "
            f"(pyOpenSSL {pyopenssl_version}) lack {', '.join(missing)}; install the cryptography version "
            "route-monitor declares (pyproject.toml)")


_check(lib)

CIPHERS = b"DEFAULT:!aNULL:!eNULL:!MD5:!3DES:!DES:!RC4:!IDEA:!SEED:!aDSS:!SRP:!PSK:@SECLEVEL=2"
"""Python's default cipher string (``PY_SSL_DEFAULT_CIPHER_STRING``) and the security level of
the system OpenSSL's configuration (Debian and RHEL: 2, no RSA keys under 2048 bits)."""
GROUPS = b"X25519:P-256:X448:P-521:P-384:ffdhe2048:ffdhe3072:ffdhe4096:ffdhe6144:ffdhe8192"
"""The key exchange groups the system OpenSSL 3.0 offers, a key share for X25519 only. OpenSSL 4.0
would also offer, and send a key share for, the X25519MLKEM768 hybrid: a 1.2 KB larger
ClientHello and an ML-KEM key generation per probe, for a key exchange the probes did not make
before and a probe's answer does not need."""
OPTIONS = (lib.SSL_OP_ALL & ~lib.SSL_OP_DONT_INSERT_EMPTY_FRAGMENTS) | lib.SSL_OP_NO_COMPRESSION | \
    lib.SSL_OP_NO_SSLv3 | lib.SSL_OP_CIPHER_SERVER_PREFERENCE
"""The options ``ssl.SSLContext`` sets."""


class TLSMaterialError(ValueError):
    """A CA or client certificate that OpenSSL cannot use; the message is OpenSSL's reason."""


def error_queue(e: SSL.Error) -> list[tuple[str, str, str]]:
    """OpenSSL's error queue as pyOpenSSL raises it: (library, function, reason), oldest first."""
    return e.args[0] if e.args and isinstance(e.args[0], list) else []


def _reason(e: SSL.Error) -> str:
    return "; ".join(str(err[-1]) for err in error_queue(e) if err[-1]) or str(e) or "unusable"


class ClientContext:
    """One shared client context: pyOpenSSL's ``SSL.Context`` and whether it verifies."""

    __slots__ = ("__weakref__", "raw", "verify")

    def __init__(self, raw: SSL.Context, verify: bool) -> None:
        self.raw = raw
        self.verify = verify
        """The chain and the host name are verified (else nothing is: ``insecureSkipVerify``)."""

    @classmethod
    def new(cls, *, verify: bool) -> ClientContext:
        """A context with the stdlib client's settings and an empty trust store."""
        raw = SSL.Context(SSL.TLS_CLIENT_METHOD)
        raw.set_min_proto_version(SSL.TLS1_2_VERSION)
        lib.SSL_CTX_set_options(raw._context, OPTIONS)
        raw.set_cipher_list(CIPHERS)
        if lib.SSL_CTX_set1_curves_list(raw._context, GROUPS) != 1:
            raise TLSMaterialError(f"OpenSSL refuses the key exchange groups {GROUPS.decode()}")
        lib.X509_VERIFY_PARAM_set_hostflags(lib.SSL_CTX_get0_param(raw._context),
                                            lib.X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS)
        raw.set_verify(SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT if verify else SSL.VERIFY_NONE, None)
        return cls(raw, verify)

    def connection(self, server_hostname: str) -> TLSConnection:
        """A new client connection on memory BIOs for ``server_hostname`` (a name or an IP address)."""
        from route_monitor.probe.tls.connection import TLSConnection
        return TLSConnection(self, server_hostname)

    def load_ca_file(self, path: str) -> None:
        """Trust the certificates of the PEM file ``path`` (read now, not per handshake)."""
        try:
            self.raw.load_verify_locations(path)
        except SSL.Error as e:
            raise TLSMaterialError(_reason(e)) from None

    def add_ca_pem(self, pem: bytes) -> None:
        """Trust the certificates of ``pem`` (a monitor's CA bundle), read by OpenSSL as a file's."""
        with pem_path(pem) as path:
            self.load_ca_file(path)

    def use_client_pem(self, pem: bytes) -> None:
        """Present the certificate chain and key of ``pem`` (one PEM holding both), loaded from memory."""
        try:
            with pem_path(pem) as path:
                self.raw.use_certificate_chain_file(path)
                self.raw.use_privatekey_file(path)
            self.raw.check_privatekey()
        except SSL.Error as e:
            raise TLSMaterialError(_reason(e)) from None

    def set_alpn(self, protocols: tuple[str, ...]) -> None:
        self.raw.set_alpn_protos([p.encode("ascii") for p in protocols])

    def trusted_count(self) -> int:
        """How many objects (certificates) the trust store holds."""
        return int(lib.sk_X509_OBJECT_num(lib.X509_STORE_get0_objects(lib.SSL_CTX_get_cert_store(self.raw._context))))


def verify_error_string(code: int) -> str:
    return str(ffi.string(lib.X509_verify_cert_error_string(code)).decode("ascii", "replace"))


@contextlib.contextmanager
def pem_path(pem: bytes) -> Iterator[str]:
    """A path OpenSSL can read ``pem`` from: an anonymous in-memory file (``memfd_create``), never
    on disk; where that does not exist, a private temporary file removed at once."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("route-monitor-pem", os.MFD_CLOEXEC)
        try:
            os.write(fd, pem)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="route-monitor-") as folder:  # pragma: no cover - not Linux
        path = os.path.join(folder, "material.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        yield path
