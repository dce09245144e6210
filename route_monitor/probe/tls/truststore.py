"""The verifying TLS context of probes: the trusted CA certificates loaded once into its store.

``ssl.create_default_context()`` trusts the system store through ``set_default_verify_paths``,
which gives OpenSSL three lookups: the bundle file (read once), the hashed directory
(``SSL_CERT_DIR``, by default ``/usr/lib/ssl/certs``) and, since OpenSSL 3.0, an ``OSSL_STORE``
over that same directory. The last two are consulted during every handshake for each certificate
of the chain whose issuer the store does not hold yet, and a server's intermediate certificate is
never in it: each probe of a target behind an intermediate CA (what public CAs serve) then costs
a ``stat`` of the hashed name, an open and read of the whole directory, and their parsing
(measured: about 0.3 ms of CPU per probe, ``benchmarks/RESULTS.md``).

:func:`verify_context` trusts the same certificates, loaded into the store when the context is
built, so a handshake looks them up in memory only:

- ``cafile`` given: that file only (tests, the demo, ``--ca-file``-style settings);
- otherwise the system bundle file (``SSL_CERT_FILE``, else OpenSSL's default file) when it
  exists, and the certificates of the hashed directory when ``SSL_CERT_DIR`` names one or when
  there is no bundle file (every file named like ``1a2b3c4d.0``, the names OpenSSL would look
  up; on Debian and RHEL the default directory holds the bundle's certificates again).

A certificate added to the directory later is trusted after a restart, as a bundle file's is.
Where the system store is comes from the system's OpenSSL (``ssl.get_default_verify_paths``):
the probes' own OpenSSL (``cryptography``'s, :mod:`~route_monitor.probe.tls.ossl`) was built
with other default paths. The context's other settings are the stdlib client's (TLS 1.2 or
later, host name checked, certificate required).
"""

from __future__ import annotations

import os
import re
import ssl
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from route_monitor.probe.tls.ossl import ClientContext

_HASHED_NAME = re.compile(r"^[0-9a-f]{8}\.[0-9]+$")
"""``c_rehash``/``openssl rehash`` names of certificates (CRLs are ``.r0``: not loaded)."""


def _load_directory(ctx: ClientContext, directory: str) -> int:
    """Load every hashed-name certificate file of ``directory``; returns how many were loaded."""
    from route_monitor.probe.tls.ossl import TLSMaterialError

    loaded = 0
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return 0
    for name in names:
        if not _HASHED_NAME.match(name):
            continue
        try:
            ctx.load_ca_file(os.path.join(directory, name))
        except (OSError, TLSMaterialError):
            continue  # unreadable or not a certificate: OpenSSL's lookup would skip it too
        loaded += 1
    return loaded


def load_system_trust(ctx: ClientContext) -> None:
    """The system store into ``ctx``'s certificate store, once (see the module's text)."""
    paths = ssl.get_default_verify_paths()
    if paths.cafile:  # None when the file does not exist
        ctx.load_ca_file(paths.cafile)
    explicit_dir = os.environ.get(paths.openssl_capath_env)
    if paths.capath and (explicit_dir or not paths.cafile):
        _load_directory(ctx, paths.capath)


def verify_context(cafile: str | None = None) -> ClientContext:
    """A verifying client context trusting ``cafile``, or the system store, loaded in memory."""
    from route_monitor.probe.tls.ossl import ClientContext  # pyOpenSSL: loaded with the first TLS context

    ctx = ClientContext.new(verify=True)
    if cafile:
        ctx.load_ca_file(cafile)  # no default paths: nothing looked up per handshake
    else:
        load_system_trust(ctx)
    return ctx
