"""SSL contexts for monitors with their own CA or client certificate, built once and shared.

Building an ``SSLContext`` loads the system CA store (milliseconds and about a megabyte), so a
context is built once per distinct (CA bundle, client certificate, verify) combination and
shared by every monitor that uses the same one: a thousand monitors behind one company CA
share one context. The cache holds contexts weakly: when no monitor's probe request uses a
combination any more (a rotation, a deleted monitor), its context goes away with it.

A client certificate is loaded from memory: ``SSLContext.load_cert_chain`` only reads files, so
the PEM goes through an anonymous in-memory file (``memfd_create``), never to disk; where that
does not exist, a private temporary file that is removed at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import ssl
import tempfile
import weakref
from collections.abc import Iterator

from route_monitor.probe.tls.truststore import verify_context

CacheKey = tuple[bytes, bytes, bool, tuple[str, ...]]


@contextlib.contextmanager
def _pem_path(pem: bytes) -> Iterator[str]:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("route-monitor-client-cert", os.MFD_CLOEXEC)
        try:
            os.write(fd, pem)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="route-monitor-") as folder:  # pragma: no cover - not Linux
        path = os.path.join(folder, "client.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        yield path


class SSLContextCache:
    def __init__(self, *, cafile: str | None = None, extra_cafiles: tuple[str, ...] = ()) -> None:
        self._cafile = cafile
        """Verify against this CA file instead of the system store (tests, the demo)."""
        self._extra_cafiles = extra_cafiles
        """CA files added to every verifying context (``$ROUTE_MONITOR_CA_FILES``, checked at start-up)."""
        self._contexts: weakref.WeakValueDictionary[CacheKey, ssl.SSLContext] = weakref.WeakValueDictionary()
        self.builds = 0
        """How many contexts were built (the rest were shared)."""

    def context(self, *, ca_pem: bytes = b"", client_pem: bytes = b"", verify: bool = True,
                alpn: tuple[str, ...] = ()) -> ssl.SSLContext:
        """The shared context for this combination; raises ``ssl.SSLError`` on unusable material.
        ``alpn``: the protocols offered (``("h2",)`` for gRPC; none for HTTP/1.1 probes)."""
        key = (hashlib.sha256(ca_pem).digest(), hashlib.sha256(client_pem).digest(), verify, alpn)
        ctx = self._contexts.get(key)
        if ctx is None:
            ctx = self._build(ca_pem, client_pem, verify)
            if alpn:
                ctx.set_alpn_protocols(list(alpn))
            self._contexts[key] = ctx
            self.builds += 1
        return ctx

    def __len__(self) -> int:
        return len(self._contexts)

    def _build(self, ca_pem: bytes, client_pem: bytes, verify: bool) -> ssl.SSLContext:
        if verify:
            ctx = verify_context(self._cafile)
            for extra in self._extra_cafiles:
                ctx.load_verify_locations(cafile=extra)
            if ca_pem:
                ctx.load_verify_locations(cadata=ca_pem.decode("ascii", "replace"))
        else:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if client_pem:
            with _pem_path(client_pem) as path:
                ctx.load_cert_chain(path)
        return ctx
