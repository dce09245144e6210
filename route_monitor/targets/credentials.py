"""Credentials and TLS material of one monitor, built from what its references point to.

:func:`build` is the one place where referenced values become what the prober sends: the
``Authorization`` header (basic or bearer), the CA bundle and the client certificate. The
values come from a ``read`` function (the operator's watched Secrets and ConfigMaps, or
standalone's files) and are checked here, so a bad Secret is reported where the monitor's
status is (``InvalidCertificate``, ``InvalidSecret``), not discovered at probe time.

:class:`Credentials` compares by value (a rotation is a change) and never shows a value in its
``repr``; :class:`CredentialError` messages name the object and the key, never the value.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from route_monitor.spec import httpfields
from route_monitor.spec.request import BasicAuth, BearerAuth, KeyRef, RequestOptions

REASONS = ("SecretNotFound", "ConfigMapNotFound", "Forbidden", "InvalidCertificate", "InvalidSecret",
           "InvalidReference", "Pending")
"""``TargetResolved`` reasons for a monitor whose references cannot be used (``Pending``: the
operator has not read a referenced object yet; ``InvalidReference``: a ``dir`` reference in a
cluster or a ``name`` reference in standalone)."""


class CredentialError(Exception):
    def __init__(self, reason: str, message: str, field: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        """One of :data:`REASONS`."""
        self.message = message
        self.field = field
        """The reference's field in the spec (``spec.probe.auth.basic.secretRef``), when known."""


@dataclass(frozen=True)
class Credentials:
    authorization: bytes = field(default=b"", repr=False)
    """The ``Authorization`` header value, or empty."""
    ca_pem: bytes = field(default=b"", repr=False)
    """PEM CA certificates added to the system store, or empty."""
    client_pem: bytes = field(default=b"", repr=False)
    """PEM client certificate chain followed by its private key, or empty."""

    def __repr__(self) -> str:
        parts = [name for name, v in (("authorization", self.authorization), ("ca", self.ca_pem),
                                      ("client certificate", self.client_pem)) if v]
        return f"Credentials({', '.join(parts) or 'none'})"


Reader = Callable[[KeyRef], bytes]
"""Returns the bytes under a key, or raises :class:`CredentialError`."""


def _text(ref: KeyRef, raw: bytes) -> str:
    """A credential as text: UTF-8, one line (a trailing newline, as ``echo`` writes, is dropped)."""
    try:
        text = raw.decode("utf-8").removesuffix("\n").removesuffix("\r")
    except UnicodeDecodeError:
        raise CredentialError("InvalidSecret", f"{ref.ref.describe()} key {ref.key} is not UTF-8 text",
                              ref.field) from None
    if not text or any(c in text for c in "\r\n\0"):
        raise CredentialError("InvalidSecret", f"{ref.ref.describe()} key {ref.key} must be one non-empty line",
                              ref.field)
    return text


def _authorization(auth: BasicAuth | BearerAuth, read: Reader) -> bytes:
    if isinstance(auth, BearerAuth):
        token = _text(auth.token, read(auth.token)).strip().encode("utf-8")
        if not httpfields.value_ok(token):  # sent as it is in the Authorization header
            raise CredentialError("InvalidSecret", f"{auth.token.ref.describe()} key {auth.token.key}: a bearer token "
                                  f"must be {httpfields.VALUE_RULE}", auth.token.field)
        return b"Bearer " + token
    user = _text(auth.username, read(auth.username))
    if ":" in user:
        raise CredentialError("InvalidSecret", f"{auth.username.ref.describe()} key {auth.username.key}: a basic "
                              "auth user name cannot contain ':'", auth.username.field)
    password = _text(auth.password, read(auth.password))
    return b"Basic " + base64.b64encode(f"{user}:{password}".encode())


def _certificates(ref: KeyRef, pem: bytes) -> list[x509.Certificate]:
    try:
        certs = x509.load_pem_x509_certificates(pem)
    except ValueError:
        certs = []
    if not certs:
        raise CredentialError("InvalidCertificate", f"{ref.ref.describe()} key {ref.key} holds no PEM certificate",
                              ref.field)
    return certs


def _client(cert_ref: KeyRef, key_ref: KeyRef, read: Reader) -> bytes:
    cert_pem, key_pem = read(cert_ref), read(key_ref)
    leaf = _certificates(cert_ref, cert_pem)[0]
    where = f"{key_ref.ref.describe()} key {key_ref.key}"
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except TypeError:
        raise CredentialError("InvalidCertificate", f"{where}: encrypted private keys are not supported",
                              key_ref.field) from None
    except (ValueError, UnsupportedAlgorithm):
        raise CredentialError("InvalidCertificate", f"{where} holds no PEM private key", key_ref.field) from None
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    if (key.public_key().public_bytes(serialization.Encoding.DER, spki)
            != leaf.public_key().public_bytes(serialization.Encoding.DER, spki)):
        raise CredentialError("InvalidCertificate", f"{where} does not match the certificate in {cert_ref.key}",
                              key_ref.field)
    return cert_pem.rstrip(b"\n") + b"\n" + key_pem


def build(options: RequestOptions, read: Reader) -> Credentials | None:
    """The credentials ``options`` refer to, read through ``read``; None when it refers to none."""
    if not options.references():
        return None
    authorization = _authorization(options.auth, read) if options.auth is not None else b""
    ca = b""
    if options.ca is not None:
        ca = read(options.ca)
        _certificates(options.ca, ca)
    client = _client(*options.client_cert, read) if options.client_cert is not None else b""
    return Credentials(authorization=authorization, ca_pem=ca, client_pem=client)
