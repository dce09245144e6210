"""Contract 8: what a probe request carries besides the URL, parsed from ``spec.probe``.

``headers`` are plain values (anyone who can read the RouteMonitor reads them); credentials
and TLS material are *references*, never values:

- ``auth.basic.secretRef {name, usernameKey, passwordKey}`` or ``auth.bearer.secretRef {name, key}``
  (at most one);
- ``tls.serverName``: the name sent as SNI, checked against the certificate and sent as ``Host``;
- ``tls.caRef {configMap|secret: {name, key}}``: a PEM CA bundle added to the system store;
- ``tls.clientCertRef {secret: {name}}``: a ``kubernetes.io/tls`` Secret (``tls.crt``, ``tls.key``).

In the operator a reference names an object in the monitor's own namespace (``name``). In
``standalone`` it names a folder instead (``dir``, relative to the manifest's file), holding
one file per key, which is how Kubernetes mounts a Secret or a ConfigMap. The dataclasses here
hold names and keys only, so their ``repr`` can never show a secret.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from alert_rules.fielderrors import EMPTY, Collect, collecting, mapping
from alert_rules.model import InvalidSpec
from route_monitor.spec import httpfields

RefKind = Literal["secret", "configMap"]
TLS_CERT_KEY, TLS_KEY_KEY = "tls.crt", "tls.key"
_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
RESERVED_HEADERS = {
    "authorization": "set spec.probe.auth instead (credentials come from a Secret, never from the spec)",
    "host": "set spec.probe.tls.serverName instead (it sets the Host header, SNI and the verified name)",
    **{h: "the prober sets it" for h in ("connection", "content-length", "transfer-encoding", "te", "upgrade",
                                         "keep-alive", "proxy-authorization", "proxy-connection", "trailer")},
}


@dataclass(frozen=True)
class ObjectRef:
    kind: RefKind
    name: str = ""
    """Operator: a Secret or ConfigMap in the monitor's namespace."""
    dir: str = ""
    """Standalone: a folder with one file per key (relative to the manifest's file)."""

    def describe(self) -> str:
        what = "Secret" if self.kind == "secret" else "ConfigMap"
        return f"{what} {self.name}" if self.name else f"folder {self.dir}"


@dataclass(frozen=True)
class KeyRef:
    ref: ObjectRef
    key: str
    field: str
    """Where the reference was written (``spec.probe.auth.basic.secretRef``), for messages."""


@dataclass(frozen=True)
class BasicAuth:
    username: KeyRef
    password: KeyRef


@dataclass(frozen=True)
class BearerAuth:
    token: KeyRef


@dataclass(frozen=True)
class RequestOptions:
    headers: tuple[tuple[str, str], ...] = ()
    auth: BasicAuth | BearerAuth | None = None
    server_name: str = ""
    ca: KeyRef | None = None
    client_cert: tuple[KeyRef, KeyRef] | None = None
    """(``tls.crt``, ``tls.key``) of one Secret."""

    def references(self) -> tuple[KeyRef, ...]:
        """Every key this monitor reads, in a stable order."""
        auth: tuple[KeyRef, ...] = ((self.auth.username, self.auth.password) if isinstance(self.auth, BasicAuth)
                                    else (self.auth.token,) if self.auth is not None else ())
        return (*auth, *((self.ca,) if self.ca else ()), *(self.client_cert or ()))


_NO_REF = ObjectRef("secret")
"""Fallbacks for fields in error: the parser goes on with them and raises before returning."""


def _object_ref(value: object, field: str, kind: RefKind) -> ObjectRef:
    m = mapping(value, field)
    name, folder = m.get("name"), m.get("dir")
    if (name is None) == (folder is None):
        raise InvalidSpec(field, sorted(str(k)[:60] for k in m), "expected name (an object in the monitor's namespace; "
                          "standalone: dir, a folder with one file per key)")
    if name is not None and (not isinstance(name, str) or not _DNS_NAME.match(name) or len(name) > 253):
        raise InvalidSpec(f"{field}.name", name, "expected the name of a Secret or ConfigMap in the same namespace")
    if folder is not None and (not isinstance(folder, str) or not folder):
        raise InvalidSpec(f"{field}.dir", folder, "expected a folder path")
    return ObjectRef(kind, name or "", folder or "")


def _key(m: Mapping[str, Any], name: str, default: str, field: str) -> str:
    key = m.get(name, default)
    if not isinstance(key, str) or not _KEY.match(key):
        raise InvalidSpec(f"{field}.{name}", key, "expected a key: letters, digits, '-', '_' or '.'")
    return key


def _auth(value: object, field: str) -> BasicAuth | BearerAuth | None:
    a = mapping(value, field)
    present = [k for k in ("basic", "bearer") if a.get(k) is not None]
    if len(present) > 1:
        raise InvalidSpec(field, sorted(a), "at most one of basic or bearer")
    if not present:
        return None
    kind = present[0]
    ref_field = f"{field}.{kind}.secretRef"
    ref_map = mapping(mapping(a[kind], f"{field}.{kind}").get("secretRef"), ref_field)
    c = Collect()
    ref = c.get(lambda: _object_ref(ref_map, ref_field, "secret"), _NO_REF)

    def key(name: str, default: str) -> KeyRef:
        return KeyRef(ref, c.get(lambda: _key(ref_map, name, default, ref_field), default), ref_field)

    auth = BearerAuth(key("key", "token")) if kind == "bearer" else BasicAuth(key("usernameKey", "username"),
                                                                              key("passwordKey", "password"))
    c.done()
    return auth


def _headers(value: object, field: str) -> tuple[tuple[str, str], ...]:
    out = []
    c = Collect()
    for name, v in mapping(value, field).items():
        if not isinstance(name, str) or not httpfields.name_ok(name):
            c.add(f"{field}", name, f"expected a header name ({httpfields.NAME_RULE})")
            continue
        why = RESERVED_HEADERS.get(name.lower())
        if why is not None:
            c.add(f"{field}.{name}", "(not shown)" if "authorization" in name.lower() else v,
                  f"{name} cannot be set here: {why}")
        elif not isinstance(v, str) or not httpfields.value_ok(v):
            c.add(f"{field}.{name}", v, f"expected {httpfields.VALUE_RULE}")
        else:
            out.append((name, v))
    c.done()
    return tuple(sorted(out, key=lambda h: h[0].lower()))


def parse_request(probe: Mapping[str, Any], field: str = "spec.probe") -> RequestOptions:
    """The request options of ``spec.probe`` (headers, auth and the TLS settings beyond
    ``insecureSkipVerify``); every field error at once."""
    return collecting(lambda c: _request(probe, field, c))


def _ca(value: object, ca_field: str) -> KeyRef:
    ca_map = mapping(value, ca_field)
    present = [k for k in ("configMap", "secret") if ca_map.get(k) is not None]
    if len(present) != 1:
        raise InvalidSpec(ca_field, sorted(str(k)[:60] for k in ca_map), "expected exactly one of configMap or secret")
    kind: RefKind = "configMap" if present[0] == "configMap" else "secret"
    sub = f"{ca_field}.{present[0]}"
    return collecting(lambda c: KeyRef(c.get(lambda: _object_ref(ca_map[present[0]], sub, kind), _NO_REF),
                                       c.get(lambda: _key(mapping(ca_map[present[0]], sub), "key", "ca.crt", sub), ""),
                                       sub))


def _client_cert(value: object, field: str) -> tuple[KeyRef, KeyRef]:
    c_field = f"{field}.secret"
    ref = _object_ref(mapping(value, field).get("secret"), c_field, "secret")
    return (KeyRef(ref, TLS_CERT_KEY, c_field), KeyRef(ref, TLS_KEY_KEY, c_field))


def _server_name(value: object, field: str) -> str:
    if not isinstance(value, str) or (value and not _DNS_NAME.match(value.lower())):
        raise InvalidSpec(field, value, "expected a DNS name, e.g. checkout.internal")
    return value.lower()


def _request(probe: Mapping[str, Any], field: str, c: Collect) -> RequestOptions:
    tls = c.get(lambda: mapping(probe.get("tls"), f"{field}.tls"), EMPTY)
    return RequestOptions(
        headers=c.get(lambda: _headers(probe.get("headers"), f"{field}.headers"), ()),
        auth=c.get(lambda: _auth(probe.get("auth"), f"{field}.auth"), None),
        server_name=c.get(lambda: _server_name(tls.get("serverName", ""), f"{field}.tls.serverName"), ""),
        ca=c.get(lambda: _ca(tls["caRef"], f"{field}.tls.caRef"), None) if tls.get("caRef") is not None else None,
        client_cert=(c.get(lambda: _client_cert(tls["clientCertRef"], f"{field}.tls.clientCertRef"), None)
                     if tls.get("clientCertRef") is not None else None),
    )
