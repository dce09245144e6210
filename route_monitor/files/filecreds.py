"""Standalone's form of Contract 8's references: folders instead of Secrets and ConfigMaps.

Without a cluster there are no Secrets to read, and credentials do not belong in manifests. A
reference names a folder instead of an object, ``dir`` instead of ``name``, holding one file per
key, which is exactly how Kubernetes mounts a Secret or a ConfigMap as a volume::

    auth: {basic: {secretRef: {dir: creds/checkout}}}           # creds/checkout/username, .../password
    tls:
      caRef: {configMap: {dir: /etc/company-ca, key: ca.crt}}
      clientCertRef: {secret: {dir: creds/probe-client}}        # .../tls.crt and .../tls.key

A relative ``dir`` is relative to the folder of the manifest that names it. A ``name``
reference is refused here (it names an object only a cluster has). Problems name the manifest,
the object and the field, never a value.
"""

from __future__ import annotations

from pathlib import Path

from route_monitor.spec.monitor import MonitorSpec
from route_monitor.spec.request import KeyRef
from route_monitor.targets.credentials import CredentialError, Credentials, build


def manifest_folder(source: str) -> Path:
    """The folder of the file a manifest came from (``path#N.items[j]`` -> the folder of ``path``)."""
    return Path(source.split("#", 1)[0]).parent


def key_path(ref: KeyRef, base: Path) -> Path:
    return (base / ref.ref.dir / ref.key) if ref.ref.dir else Path()


def files_of(spec: MonitorSpec, source: str) -> list[Path]:
    """The files a monitor's references read (to notice when they change)."""
    base = manifest_folder(source)
    return [key_path(r, base) for r in spec.probe.request.references() if r.ref.dir]


def read_files(spec: MonitorSpec, source: str) -> Credentials | None:
    """The monitor's credentials, read from the folders its references name."""
    base = manifest_folder(source)

    def read(ref: KeyRef) -> bytes:
        if not ref.ref.dir:
            raise CredentialError("InvalidReference", f"{ref.ref.describe()}: standalone reads references from "
                                  "folders: set dir (a folder with one file per key) instead of name",
                                  f"{ref.field}.name")
        path = key_path(ref, base)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            reason = "SecretNotFound" if ref.ref.kind == "secret" else "ConfigMapNotFound"
            raise CredentialError(reason, f"{path}: no such file (key {ref.key} of {ref.ref.describe()})",
                                  f"{ref.field}.dir") from None
        except OSError as e:
            raise CredentialError("Forbidden", f"{path}: cannot read: {e.strerror or e}", f"{ref.field}.dir") from None

    return build(spec.probe.request, read)

