"""OpenShift's ``restricted-v2`` SecurityContextConstraints, emulated from its documentation.

There is no OpenShift here, so :func:`admit_restricted_v2` applies what the SCC documents
(OpenShift 4.11+, "Managing security context constraints"; ``oc get scc restricted-v2 -o yaml``):

- ``runAsUser: MustRunAsRange``: a UID set on the pod or a container must lie in the namespace's
  ``openshift.io/sa.scc.uid-range``; unset, the first UID of that range is assigned;
- ``fsGroup: MustRunAs``: likewise within ``openshift.io/sa.scc.supplemental-groups``;
- ``allowPrivilegeEscalation: false``, ``allowPrivilegedContainer: false``;
- ``requiredDropCapabilities: [ALL]``, ``allowedCapabilities: [NET_BIND_SERVICE]``;
- ``seccompProfiles: [runtime/default]`` (the pod's or container's profile must be RuntimeDefault);
- no host network, PID, IPC or ports; volumes only of the types the SCC lists.

The result is the list of rejections in the admission plugin's wording (empty: admitted) and the
UID the pod runs as, which the kubelet then checks against ``runAsNonRoot``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

UID_RANGE = "1000680000/10000"
"""A typical namespace's range (``openshift.io/sa.scc.uid-range``), as the namespace controller assigns."""
VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected",
           "secret"}
ALLOWED_CAPABILITIES = {"NET_BIND_SERVICE"}


@dataclass(frozen=True)
class Admission:
    rejections: tuple[str, ...]
    uid: int
    """The UID the containers run as (the range's first when the pod sets none)."""


def _range(text: str) -> tuple[int, int]:
    first, _, size = text.partition("/")
    return int(first), int(first) + int(size) - 1


def admit_restricted_v2(pod: dict[str, Any], *, uid_range: str = UID_RANGE,
                        group_range: str = UID_RANGE) -> Admission:
    low, high = _range(uid_range)
    g_low, g_high = _range(group_range)
    out: list[str] = []
    pod_sc = pod.get("securityContext") or {}
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(flag):
            out.append(f"spec.{flag}: Invalid value: true: {flag} is not allowed to be used")
    fs_group = pod_sc.get("fsGroup")
    if fs_group is not None and not g_low <= fs_group <= g_high:
        out.append(f"spec.securityContext.fsGroup: Invalid value: []int64{{{fs_group}}}: "
                   f"{fs_group} is not an allowed group")
    for volume in pod.get("volumes", []):
        kind = next(k for k in volume if k != "name")
        if kind not in VOLUMES:
            out.append(f"spec.volumes[{volume['name']}]: Invalid value: {kind!r}: {kind} volumes are not allowed")
    uid = low
    for c in [*pod.get("initContainers", []), *pod["containers"]]:
        sc = {**pod_sc, **(c.get("securityContext") or {})}
        where = f"spec.containers[{c['name']}].securityContext"
        run_as = sc.get("runAsUser")
        if run_as is not None:
            uid = run_as
            if not low <= run_as <= high:
                out.append(f"{where}.runAsUser: Invalid value: {run_as}: must be in the ranges: [{low}, {high}]")
        if sc.get("privileged"):
            out.append(f"{where}.privileged: Invalid value: true: Privileged containers are not allowed")
        if sc.get("allowPrivilegeEscalation", False):
            out.append(f"{where}.allowPrivilegeEscalation: Invalid value: true: Allowing privilege escalation "
                       "for containers is not allowed")
        caps = sc.get("capabilities") or {}
        for cap in set(caps.get("add", [])) - ALLOWED_CAPABILITIES:
            out.append(f"{where}.capabilities.add: Invalid value: {cap!r}: capability may not be added")
        seccomp = (sc.get("seccompProfile") or {}).get("type", "RuntimeDefault")
        if seccomp != "RuntimeDefault":
            out.append(f"{where}.seccompProfile.type: Invalid value: {seccomp!r}: "
                       "runtime/default is the only allowed seccomp profile")
        for port in c.get("ports", []):
            if port.get("hostPort"):
                out.append(f"{where}.containers[{c['name']}].hostPort: Invalid value: {port['hostPort']}: "
                           "Host ports are not allowed to be used")
    return Admission(rejections=tuple(out), uid=uid)
