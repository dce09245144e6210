"""One probe's TLS connection on pyOpenSSL memory BIOs, with the few calls ``probe/net/tlsstream.py``
makes, raising what ``ssl.SSLObject`` raises.

Failures keep the stdlib's exception types, so that ``reasons.classify`` and every message a user
reads stay as they were: a certificate that fails verification raises
``ssl.SSLCertVerificationError`` with OpenSSL's verify code and message (``_ssl.c``'s own text
for a host name or IP address mismatch); any other OpenSSL error raises ``ssl.SSLError`` whose
``reason`` is the error's mnemonic (``TLSV13_ALERT_CERTIFICATE_REQUIRED``, the stdlib's name for
OpenSSL's reason "tlsv13 alert certificate required").

The host name (or IP address) is set on the connection's verification parameters, so OpenSSL
checks it while verifying the chain, as ``_ssl.c`` does; SNI is sent for names, not for IP
addresses (RFC 6066).
"""

from __future__ import annotations

import ipaddress
import ssl
from functools import lru_cache
from typing import TYPE_CHECKING

from OpenSSL import SSL
from OpenSSL.crypto import FILETYPE_ASN1, dump_certificate

from route_monitor.probe.tls.ossl import error_queue, ffi, lib, verify_error_string

if TYPE_CHECKING:
    from route_monitor.probe.tls.ossl import ClientContext

VERIFY_FAILED = "certificate verify failed"
_LIBRARIES = {"SSL routines": "SSL", "X509 certificate routines": "X509", "PEM routines": "PEM"}
_UNREAD = ffi.new("char **")
"""Where ``BIO_get_mem_data`` puts the pointer to the pending bytes (never read: only their count is used)."""


@lru_cache(maxsize=4096)
def _peer(server_hostname: str) -> tuple[bytes, bytes | None]:
    """(the name as sent and verified (IDNA), the packed address when it is an IP literal)."""
    try:
        return server_hostname.encode("ascii"), ipaddress.ip_address(server_hostname).packed
    except ValueError:
        return server_hostname.encode("idna"), None


def _mnemonic(reason: str) -> str:
    return reason.upper().replace(" ", "_").replace("-", "_")


class TLSConnection:
    """A client connection: bytes in with :meth:`feed`, out with :meth:`outgoing`."""

    __slots__ = ("_conn", "_out", "_ssl", "name")

    def __init__(self, context: ClientContext, server_hostname: str) -> None:
        self.name = server_hostname
        conn = self._conn = SSL.Connection(context.raw, None)
        self._ssl, self._out = conn._ssl, conn._from_ssl
        name, address = _peer(server_hostname)
        if address is None:
            conn.set_tlsext_host_name(name)
        if context.verify:
            param = lib.SSL_get0_param(self._ssl)
            ok = (lib.X509_VERIFY_PARAM_set1_host(param, name, len(name)) if address is None
                  else lib.X509_VERIFY_PARAM_set1_ip(param, address, len(address)))
            if ok != 1:
                raise ssl.SSLError(1, f"cannot verify the name {server_hostname!r}")
        conn.set_connect_state()

    def handshake(self) -> bool:
        """One step of the handshake: True when it is done, False when it needs the server's bytes."""
        try:
            self._conn.do_handshake()
        except SSL.WantReadError:
            return False
        except SSL.SysCallError:
            raise ssl.SSLEOFError(8, "EOF occurred in violation of protocol") from None
        except SSL.Error as e:
            raise self._error(e) from None
        return True

    def feed(self, data: bytes) -> None:
        self._conn.bio_write(data)

    def feed_eof(self) -> None:
        self._conn.bio_shutdown()

    def outgoing(self) -> bytes:
        """What OpenSSL wrote for the server since the last call (b"" when nothing)."""
        pending = lib.BIO_get_mem_data(self._out, _UNREAD)
        return self._conn.bio_read(pending) if pending else b""

    def read(self, max_bytes: int) -> bytes | None:
        """Up to ``max_bytes`` of application data; ``b""`` at the end of the stream (close_notify
        or the TCP end without it), None when OpenSSL needs more of the server's bytes."""
        try:
            return self._conn.recv(max_bytes)
        except SSL.WantReadError:
            return None
        except (SSL.ZeroReturnError, SSL.SysCallError):
            return b""
        except SSL.Error as e:
            raise self._error(e) from None

    def write(self, data: bytes) -> None:
        try:
            self._conn.sendall(data)
        except SSL.Error as e:
            raise self._error(e) from None

    def getpeercert(self, binary_form: bool = True) -> bytes | None:
        """The peer's leaf certificate, DER (``ssl.SSLObject``'s call, binary form only)."""
        cert = self._conn.get_peer_certificate(as_cryptography=False)
        if cert is None:
            return None
        return dump_certificate(FILETYPE_ASN1, cert)

    def selected_alpn_protocol(self) -> str | None:
        chosen = self._conn.get_alpn_proto_negotiated()
        return chosen.decode("ascii", "replace") if chosen else None

    def _error(self, e: SSL.Error) -> ssl.SSLError:
        """The stdlib's exception for OpenSSL's error ``e`` (the last of its queue, as ``_ssl.c``)."""
        errors = error_queue(e)
        library, _, reason = errors[-1] if errors else ("", "", str(e))
        if reason == VERIFY_FAILED:
            code = lib.SSL_get_verify_result(self._ssl)
            if code == lib.X509_V_ERR_HOSTNAME_MISMATCH:
                message = f"Hostname mismatch, certificate is not valid for '{self.name}'."
            elif code == lib.X509_V_ERR_IP_ADDRESS_MISMATCH:
                message = f"IP address mismatch, certificate is not valid for '{self.name}'."
            else:
                message = verify_error_string(code)
            exc: ssl.SSLError = ssl.SSLCertVerificationError(
                1, f"[SSL: CERTIFICATE_VERIFY_FAILED] {VERIFY_FAILED}: {message}")
            exc.verify_code, exc.verify_message = code, message  # type: ignore[attr-defined]
            exc.library, exc.reason = "SSL", "CERTIFICATE_VERIFY_FAILED"
            return exc
        short = _LIBRARIES.get(str(library), str(library).split(" ")[0].upper() or "SSL")
        mnemonic = _mnemonic(str(reason))
        exc = ssl.SSLError(1, f"[{short}: {mnemonic}] {reason}")
        exc.library, exc.reason = short, mnemonic
        return exc
