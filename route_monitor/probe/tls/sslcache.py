"""TLS contexts for monitors with their own CA or client certificate, built once and shared.

Building a context loads the system CA store (milliseconds and about a megabyte), so a context
is built once per distinct (CA bundle, client certificate, verify, ALPN) combination and shared
by every monitor that uses the same one: a thousand monitors behind one company CA share one
context. The cache holds contexts weakly: when no monitor's probe request uses a combination any
more (a rotation, a deleted monitor), its context goes away with it.

A monitor's CA bundle and client certificate (chain and key in one PEM) are read by OpenSSL
from memory (an anonymous in-memory file, :func:`~route_monitor.probe.tls.ossl.pem_path`),
never from disk.
"""

from __future__ import annotations

import hashlib
import weakref
from typing import TYPE_CHECKING

from route_monitor.probe.tls.truststore import verify_context

if TYPE_CHECKING:
    from route_monitor.probe.tls.ossl import ClientContext

CacheKey = tuple[bytes, bytes, bool, tuple[str, ...]]


class SSLContextCache:
    def __init__(self, *, cafile: str | None = None, extra_cafiles: tuple[str, ...] = ()) -> None:
        self._cafile = cafile
        """Verify against this CA file instead of the system store (tests, the demo)."""
        self._extra_cafiles = extra_cafiles
        """CA files added to every verifying context (``$ROUTE_MONITOR_CA_FILES``, checked at start-up)."""
        self._contexts: weakref.WeakValueDictionary[CacheKey, ClientContext] = weakref.WeakValueDictionary()
        self.builds = 0
        """How many contexts were built (the rest were shared)."""

    def context(self, *, ca_pem: bytes = b"", client_pem: bytes = b"", verify: bool = True,
                alpn: tuple[str, ...] = ()) -> ClientContext:
        """The shared context for this combination; raises ``ValueError``
        (:class:`~route_monitor.probe.tls.ossl.TLSMaterialError`) on unusable material.
        ``alpn``: the protocols offered (``("h2",)`` for gRPC; none for HTTP/1.1 probes)."""
        key = (hashlib.sha256(ca_pem).digest(), hashlib.sha256(client_pem).digest(), verify, alpn)
        ctx = self._contexts.get(key)
        if ctx is None:
            ctx = self._build(ca_pem, client_pem, verify)
            if alpn:
                ctx.set_alpn(alpn)
            self._contexts[key] = ctx
            self.builds += 1
        return ctx

    def __len__(self) -> int:
        return len(self._contexts)

    def _build(self, ca_pem: bytes, client_pem: bytes, verify: bool) -> ClientContext:
        from route_monitor.probe.tls.ossl import ClientContext

        if verify:
            ctx = verify_context(self._cafile)
            for extra in self._extra_cafiles:
                ctx.load_ca_file(extra)
            if ca_pem:
                ctx.add_ca_pem(ca_pem)
        else:
            ctx = ClientContext.new(verify=False)
        if client_pem:
            ctx.use_client_pem(client_pem)
        return ctx
