"""Prometheus' Kubernetes service discovery (roles ``endpoints`` and ``endpointslice``) against the
real test apiserver, feeding a real Prometheus through ``file_sd_configs``.

Debian's Prometheus 2.42 is built without ``kubernetes_sd_configs`` (``promtool check config``:
"field kubernetes_sd_configs not found"), and this machine reaches no Go module proxy to build
one. So the discovery half is done here, the way Prometheus 2.42 does it
(``discovery/kubernetes/{kubernetes,endpoints,endpointslice,service}.go`` at tag v2.42.0), and
the rest is the real Prometheus: it reads the target groups from a file and applies the scrape
job's ``relabel_configs`` (which set ``job``, keep or drop targets), then scrapes.

What is reproduced, per namespace, with the credentials Prometheus would have (a token; a 403 is
an error, as Prometheus logs it, and discovers nothing):

- ``endpoints``: one target group per v1 Endpoints object (``__meta_kubernetes_namespace``,
  ``..._endpoints_name``, ``..._endpoints_label_*``), one target per address and port
  (``__address__``, ``..._endpoint_port_name``, ``..._endpoint_port_protocol``,
  ``..._endpoint_ready``: addresses "true", notReadyAddresses "false", ``..._endpoint_hostname``,
  ``..._endpoint_node_name``, ``..._endpoint_address_target_kind``/``_name``), plus the labels of
  the Service *of the same name* when one exists (``..._service_name``, ``..._service_label_*``,
  ``..._service_labelpresent_*``, annotations likewise);
- ``endpointslice``: the API version Prometheus 2.42 picks, ``discovery.k8s.io/v1`` when the
  server's ``/version`` is 1.21 or later, ``v1beta1`` before (``checkDiscoveryV1Supported``;
  Prometheus 3.0 dropped v1beta1); one group per slice (``..._endpointslice_name``,
  ``..._endpointslice_address_type``), one target per address and port (``..._endpointslice_port``,
  ``..._port_name``, ``..._port_protocol``, ``..._endpoint_conditions_ready``/``_serving``/
  ``_terminating`` when set, ``..._endpoint_hostname``, ``..._address_target_kind``/``_name``),
  plus the labels of the Service named by the slice's ``kubernetes.io/service-name`` label.

Pods referenced by an address (``targetRef`` kind Pod) would add ``__meta_kubernetes_pod_*``
labels; the test control plane has no pods, and an address that references one is refused here
rather than half-described.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

PREFIX = "__meta_kubernetes_"
ROLES = ("endpoints", "endpointslice")


def sanitize(name: str) -> str:
    """Prometheus' ``strutil.SanitizeLabelName``."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def _labels(prefix: str, values: dict[str, str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in (values or {}).items():
        out[f"{PREFIX}{prefix}_label_{sanitize(k)}"] = v
        out[f"{PREFIX}{prefix}_labelpresent_{sanitize(k)}"] = "true"
    return out


def service_labels(svc: dict[str, Any]) -> dict[str, str]:
    meta = svc["metadata"]
    out = {f"{PREFIX}service_name": meta["name"], f"{PREFIX}namespace": meta["namespace"],
           **_labels("service", meta.get("labels"))}
    for k, v in (meta.get("annotations") or {}).items():
        out[f"{PREFIX}service_annotation_{sanitize(k)}"] = v
        out[f"{PREFIX}service_annotationpresent_{sanitize(k)}"] = "true"
    return out


def _target_ref(ref: dict[str, Any] | None, role: str) -> dict[str, str]:
    if not ref:
        return {}
    assert ref.get("kind") != "Pod", "addresses that reference pods are not reproduced here (no pods in tests)"
    key = "endpoint" if role == "endpoints" else "endpointslice"
    return {f"{PREFIX}{key}_address_target_kind": ref.get("kind", ""),
            f"{PREFIX}{key}_address_target_name": ref.get("name", "")}


def _join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def endpoints_groups(eps: dict[str, Any], services: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    meta = eps["metadata"]
    group = {f"{PREFIX}namespace": meta["namespace"], f"{PREFIX}endpoints_name": meta["name"],
             **_labels("endpoints", meta.get("labels"))}
    if meta["name"] in services:
        group.update(service_labels(services[meta["name"]]))
    targets: list[dict[str, str]] = []
    for subset in eps.get("subsets") or []:
        for port in subset.get("ports") or []:
            for addresses, ready in ((subset.get("addresses"), "true"), (subset.get("notReadyAddresses"), "false")):
                for addr in addresses or []:
                    t = {"__address__": _join(addr["ip"], int(port["port"])),
                         f"{PREFIX}endpoint_port_name": port.get("name", ""),
                         f"{PREFIX}endpoint_port_protocol": port.get("protocol", "TCP"),
                         f"{PREFIX}endpoint_ready": ready, **_target_ref(addr.get("targetRef"), "endpoints")}
                    if addr.get("nodeName"):
                        t[f"{PREFIX}endpoint_node_name"] = addr["nodeName"]
                    if addr.get("hostname"):
                        t[f"{PREFIX}endpoint_hostname"] = addr["hostname"]
                    targets.append(t)
    return [{"targets": [t.pop("__address__")], "labels": {**group, **t}} for t in targets]


def slice_groups(es: dict[str, Any], services: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    meta = es["metadata"]
    group = {f"{PREFIX}namespace": meta["namespace"], f"{PREFIX}endpointslice_name": meta["name"],
             f"{PREFIX}endpointslice_address_type": es.get("addressType", "")}
    owner = (meta.get("labels") or {}).get("kubernetes.io/service-name")
    if owner in services:
        group.update(service_labels(services[owner]))
    groups: list[dict[str, Any]] = []
    for port in es.get("ports") or []:
        for ep in es.get("endpoints") or []:
            conditions = ep.get("conditions") or {}
            for addr in ep.get("addresses") or []:
                t = {f"{PREFIX}endpointslice_port_name": port.get("name", ""),
                     f"{PREFIX}endpointslice_port_protocol": port.get("protocol", "TCP"),
                     f"{PREFIX}endpointslice_port": str(port["port"]),
                     **_target_ref(ep.get("targetRef"), "endpointslice")}
                for cond in ("ready", "serving", "terminating"):
                    if conditions.get(cond) is not None:
                        t[f"{PREFIX}endpointslice_endpoint_conditions_{cond}"] = str(conditions[cond]).lower()
                if ep.get("hostname"):
                    t[f"{PREFIX}endpointslice_endpoint_hostname"] = ep["hostname"]
                groups.append({"targets": [_join(addr, int(port["port"]))], "labels": {**group, **t}})
    return groups


@dataclass
class KubernetesSD:
    """One ``kubernetes_sd_configs`` entry: ``role`` over ``namespaces``, through ``server`` with
    ``token``; :meth:`discover` lists as Prometheus' informers do and returns file_sd groups."""

    server: str
    token: str
    role: str
    namespaces: Sequence[str]
    errors: list[str] = field(default_factory=list)
    """What Prometheus would log (e.g. a 403): discovery yields nothing for that namespace."""

    def _list(self, client: httpx.Client, path: str) -> list[dict[str, Any]] | None:
        r = client.get(path)
        if r.status_code != 200:
            self.errors.append(f"GET {path}: {r.status_code} {r.text[:200]}")
            return None
        return list(r.json()["items"])

    def slice_version(self, client: httpx.Client) -> str:
        """Prometheus 2.42: v1 from Kubernetes 1.21 on, v1beta1 before (from ``/version``)."""
        v = client.get("/version").json()
        minor = int(re.match(r"\d+", str(v["minor"])).group(0))  # type: ignore[union-attr]
        return "v1" if int(v["major"]) >= 1 and minor >= 21 else "v1beta1"

    def discover(self) -> list[dict[str, Any]]:
        assert self.role in ROLES, self.role
        groups: list[dict[str, Any]] = []
        with httpx.Client(base_url=self.server, verify=False, timeout=10,
                          headers={"Authorization": f"Bearer {self.token}"}) as client:
            version = self.slice_version(client) if self.role == "endpointslice" else ""
            for ns in self.namespaces:
                services = self._list(client, f"/api/v1/namespaces/{ns}/services")
                pods = self._list(client, f"/api/v1/namespaces/{ns}/pods")  # watched by both roles
                if self.role == "endpoints":
                    objects = self._list(client, f"/api/v1/namespaces/{ns}/endpoints")
                else:
                    objects = self._list(client, f"/apis/discovery.k8s.io/{version}/namespaces/{ns}/endpointslices")
                if services is None or pods is None or objects is None:
                    continue  # an informer that cannot list never syncs: nothing from this namespace
                by_name = {s["metadata"]["name"]: s for s in services}
                build = endpoints_groups if self.role == "endpoints" else slice_groups
                for obj in objects:
                    groups += build(obj, by_name)
        return groups


@contextmanager
def discovering(sd: KubernetesSD, path: Path, *, interval: float = 0.5) -> Iterator[KubernetesSD]:
    """Keep ``path`` (a file_sd JSON file) up to date with ``sd`` every ``interval`` seconds, as the
    informers' watches would; Prometheus re-reads the file when it changes."""
    stop = threading.Event()

    def write() -> None:
        text = json.dumps(sd.discover(), sort_keys=True, indent=1)
        if not path.exists() or path.read_text() != text:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(text)
            tmp.replace(path)

    def loop() -> None:
        while not stop.wait(interval):
            write()

    write()
    thread = threading.Thread(target=loop, name=f"kubesd-{sd.role}", daemon=True)
    thread.start()
    try:
        yield sd
    finally:
        stop.set()
        thread.join(10)
