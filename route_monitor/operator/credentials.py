"""Contract 8 in the operator: a monitor's references, read from its own namespace only.

:meth:`OperatorCredentials.attach` is the reconciler's one hook: it tells the watches which
objects the monitor references now (``refwatch``: one watch per referenced Secret or ConfigMap,
nothing cluster-wide), and turns a resolved target into one that carries the monitor's
credentials, or into an :class:`~route_monitor.operator.plan.Unresolved` whose reason says why
not: ``SecretNotFound``/``ConfigMapNotFound`` (the object or the key is missing), ``Forbidden``
(the operator may not read it: RBAC is opt-in), ``InvalidCertificate``, ``InvalidSecret``. The
reconciler then reports ``TargetResolved=False`` with that reason, a Warning event, and no
probes. A name is all a reference can hold, so it can never point to another namespace.
"""

from __future__ import annotations

from dataclasses import replace

from route_monitor.operator.plan import Unresolved
from route_monitor.operator.refwatch import MonitorKey, ObjectKey, ReferenceWatches
from route_monitor.spec.monitor import MonitorSpec
from route_monitor.spec.request import KeyRef
from route_monitor.targets.credentials import CredentialError, build
from route_monitor.targets.resolve import ResolvedTarget

RBAC_HINT = ("reading Secrets and ConfigMaps is opt-in: apply deploy/optional/secrets-reader.yaml, or grant "
             "a Role on this object to the operator's ServiceAccount (docs/credentials.md)")


def objects_of(spec: MonitorSpec) -> set[ObjectKey]:
    return {(r.ref.kind, spec.namespace, r.ref.name) for r in spec.probe.request.references() if r.ref.name}


class OperatorCredentials:
    def __init__(self, watches: ReferenceWatches, *, first_read_wait: float = 5.0) -> None:
        self.watches = watches
        self._wait = first_read_wait

    def forget(self, key: MonitorKey) -> None:
        self.watches.want(key, set())

    async def attach(self, spec: MonitorSpec, target: ResolvedTarget | Unresolved) -> ResolvedTarget | Unresolved:
        self.watches.want(spec.key, objects_of(spec))
        if not isinstance(target, ResolvedTarget) or not spec.probe.request.references():
            return target
        try:
            values = {ref: await self._read(spec, ref) for ref in spec.probe.request.references()}
            credentials = build(spec.probe.request, values.__getitem__)
        except CredentialError as e:
            return Unresolved(e.reason, f"{e.field}: {e.message}" if e.field else e.message)
        return replace(target, credentials=credentials)

    async def _read(self, spec: MonitorSpec, ref: KeyRef) -> bytes:
        if ref.ref.dir:
            raise CredentialError("InvalidReference", "dir references are for standalone; in a cluster name a "
                                  "Secret or ConfigMap", ref.field)
        what = f"{'Secret' if ref.ref.kind == 'secret' else 'ConfigMap'} {spec.namespace}/{ref.ref.name}"
        missing = "SecretNotFound" if ref.ref.kind == "secret" else "ConfigMapNotFound"
        seen = await self.watches.seen((ref.ref.kind, spec.namespace, ref.ref.name), self._wait)
        if seen.state == "pending":
            raise CredentialError("Pending", f"{what}: not read yet", ref.field)
        if seen.state == "missing":
            raise CredentialError(missing, f"{what} does not exist", ref.field)
        if seen.state == "forbidden":
            raise CredentialError("Forbidden", f"the operator may not read {what}: {RBAC_HINT}", ref.field)
        if seen.state == "error":
            raise CredentialError("Pending", f"{what}: {seen.detail}", ref.field)
        value = seen.data.get(ref.key)
        if value is None:
            keys = ", ".join(sorted(seen.data)) or "none"
            raise CredentialError(missing, f"{what} has no key {ref.key} (its keys: {keys})", ref.field)
        return value
