"""Extra CA certificates for probes: ``$ROUTE_MONITOR_CA_FILES``, added to the system store.

On OpenShift, Routes are served with the ingress operator's default certificate (or one an
administrator signed with a private CA) and Services with service-ca certificates: neither
verifies against the image's public CA store. The cluster publishes both as ConfigMaps
(``config.openshift.io/inject-trusted-cabundle`` and ``service.beta.openshift.io/inject-cabundle``)
that ``deploy/overlays/openshift`` mounts; this variable names the mounted files.

- ``ROUTE_MONITOR_CA_FILES``: PEM files separated by ``:`` (``os.pathsep``). Their certificates
  are **added** to the verifying context's store, next to the system CAs. (``SSL_CERT_FILE``,
  also honoured, *replaces* the system store, as everywhere in OpenSSL.)
- Loaded once, at start-up, into the one shared verifying context (and into the contexts of
  monitors with their own ``caRef`` or client certificate, when those are built): probes pay
  nothing per handshake, and a changed bundle is picked up by a restart
  (``kubectl rollout restart``).
- A file that is absent or empty is reported and skipped (an optional ConfigMap not created, an
  injection not done yet): it is not a reason to stop probing everything else. A file that is
  there but holds no valid certificate is an error that names the variable and the file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from route_monitor.probe.tls import truststore
from route_monitor.probe.tls.contexts import TLSContexts

if TYPE_CHECKING:
    from route_monitor.probe.tls.ossl import ClientContext

ENV_CA_FILES = "ROUTE_MONITOR_CA_FILES"
PEM_BEGIN = "-----BEGIN CERTIFICATE-----"


class TrustError(ValueError):
    """A CA file that cannot be used; the message names the variable and the file."""


@dataclass(frozen=True)
class ExtraTrust:
    """What was added to the store, for the start-up log line."""

    loaded: tuple[tuple[str, int], ...] = ()
    """(file, number of certificates) added."""
    skipped: tuple[str, ...] = ()
    """Files absent or empty, not trusted until a restart finds them."""

    def notes(self) -> list[tuple[bool, str]]:
        """(is a warning, line) for the start-up log."""
        lines = [(False, f"{ENV_CA_FILES}: trusting {n} certificate(s) from {path}") for path, n in self.loaded]
        lines += [(True, f"{ENV_CA_FILES}: {path} is absent or empty (ConfigMap missing or not injected yet?): "
                         "not trusted until a restart finds it") for path in self.skipped]
        return lines


def ca_files(env: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(p.strip() for p in env.get(ENV_CA_FILES, "").split(os.pathsep) if p.strip())


def _read(path: str) -> str | None:
    try:
        text = Path(path).read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise TrustError(f"{ENV_CA_FILES}: {path}: cannot be read: {e.strerror or e}") from None
    return text if text.strip() else None


def verify_context(files: tuple[str, ...]) -> tuple[ClientContext, ExtraTrust]:
    """The system store (``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured) plus every file's certificates."""
    from route_monitor.probe.tls.ossl import TLSMaterialError

    ctx = truststore.verify_context()  # the system store loaded once, not looked up per handshake
    loaded: list[tuple[str, int]] = []
    skipped: list[str] = []
    for path in files:
        text = _read(path)
        if text is None:
            skipped.append(path)
            continue
        count = text.count(PEM_BEGIN)
        if count == 0:
            raise TrustError(f"{ENV_CA_FILES}: {path}: no PEM certificate in it (expected {PEM_BEGIN} blocks)")
        try:
            ctx.load_ca_file(path)
        except (OSError, TLSMaterialError) as e:
            raise TrustError(f"{ENV_CA_FILES}: {path}: not a valid PEM certificate bundle ({e})") from None
        loaded.append((path, count))
    return ctx, ExtraTrust(loaded=tuple(loaded), skipped=tuple(skipped))


def contexts_from_env(env: Mapping[str, str]) -> tuple[TLSContexts, ExtraTrust]:
    """The probe TLS contexts for a command: ``$ROUTE_MONITOR_CA_FILES`` added to the system store
    (read and checked now; without it, the contexts are built when a TLS probe first needs one)."""
    files = ca_files(env)
    if not files:
        return TLSContexts(), ExtraTrust()
    ctx, extra = verify_context(files)
    return TLSContexts(verify=ctx, extra_cafiles=tuple(path for path, _ in extra.loaded)), extra
