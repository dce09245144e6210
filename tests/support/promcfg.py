"""A ServiceMonitor turned into a Prometheus scrape job the way prometheus-operator does it
(``pkg/prometheus/promcfg.go``, ``generateServiceMonitorConfig``), for the fields route-monitor's
ServiceMonitors use, with the discovery handed to :mod:`tests.support.kubesd` (``file_sd_configs``
in place of ``kubernetes_sd_configs``; Debian's Prometheus has no Kubernetes discovery).

The relabelling is prometheus-operator's, in its order:

1. ``job`` -> ``__tmp_prometheus_job_name``;
2. keep targets whose Service has each ``selector.matchLabels`` label (``..._service_label_X`` and
   ``..._service_labelpresent_X`` = ``(value);true``);
3. keep the endpoint's port by name (``..._endpoint_port_name``, or
   ``..._endpointslice_port_name`` with the endpointslice role);
4. ``node``/``pod`` from the address's target reference, ``namespace``, ``service``, ``pod``,
   ``container``; drop pods in phase Failed/Succeeded;
5. ``job`` from ``__meta_kubernetes_service_name``, then, when ``jobLabel`` is set, from the
   Service's label of that name *if it has a value* (``regex: (.+)``);
6. ``endpoint`` = the port name; the endpoint's own ``relabelings``; with ``enforcedNamespaceLabel``
   a last rule setting it to the ServiceMonitor's namespace;

``honor_labels`` is the endpoint's ``honorLabels``, forced off by ``overrideHonorLabels``
(which OpenShift's user-workload monitoring sets together with namespace enforcement), and the
endpoint's ``metricRelabelings`` become ``metric_relabel_configs`` (plus the enforced label).
:func:`job_name_of` is rule 5 on its own, for rendered objects.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.support.kubesd import PREFIX, sanitize

ENDPOINTS = "endpoints"
ENDPOINTSLICE = "endpointslice"
"""Discovery roles: prometheus-operator's default is ``endpoints`` ("If unset, the operator assumes
the 'Endpoints' role"); ``serviceDiscoveryRole: EndpointSlice`` picks the other."""


def job_name_of(service_monitor: dict[str, Any], service: dict[str, Any]) -> str:
    """The ``job`` label of the targets ``service_monitor`` finds through ``service``."""
    job_label = service_monitor["spec"].get("jobLabel")
    value = (service["metadata"].get("labels") or {}).get(job_label) if job_label else None
    return str(value) if value else str(service["metadata"]["name"])


def namespaces_of(service_monitor: dict[str, Any]) -> list[str] | None:
    """The namespaces its discovery watches: ``matchNames``, all (None) with ``any: true``, else its own."""
    selector = service_monitor["spec"].get("namespaceSelector") or {}
    if selector.get("any"):
        return None
    return list(selector.get("matchNames") or [service_monitor["metadata"]["namespace"]])


def selects(service_monitor: dict[str, Any], service: dict[str, Any]) -> bool:
    """Whether the ServiceMonitor's selector and namespace selector take ``service`` in."""
    spec, meta = service_monitor["spec"], service["metadata"]
    assert not (spec.get("selector") or {}).get("matchExpressions"), "matchExpressions not reproduced here"
    namespaces = namespaces_of(service_monitor)
    labels = meta.get("labels") or {}
    return (namespaces is None or meta["namespace"] in namespaces) and all(
        labels.get(k) == v for k, v in ((spec.get("selector") or {}).get("matchLabels") or {}).items())


def _relabel(rule: dict[str, Any]) -> dict[str, Any]:
    """A ServiceMonitor RelabelConfig (camelCase) as Prometheus config (``generateRelabelConfig``)."""
    keys = {"sourceLabels": "source_labels", "separator": "separator", "targetLabel": "target_label",
            "regex": "regex", "modulus": "modulus", "replacement": "replacement", "action": "action"}
    out = {keys[k]: v for k, v in rule.items() if k in keys}
    if "action" in out:
        out["action"] = str(out["action"]).lower()
    return out


def relabel_configs(service_monitor: dict[str, Any], index: int, *, role: str,
                    enforced_namespace_label: str | None = None) -> list[dict[str, Any]]:
    spec = service_monitor["spec"]
    ep = spec["endpoints"][index]
    slice_role = role == ENDPOINTSLICE
    rules: list[dict[str, Any]] = [{"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"}]
    for k, v in sorted(((spec.get("selector") or {}).get("matchLabels") or {}).items()):
        rules.append({"action": "keep", "regex": f"({v});true",
                      "source_labels": [f"{PREFIX}service_label_{sanitize(k)}",
                                        f"{PREFIX}service_labelpresent_{sanitize(k)}"]})
    assert ep.get("port"), "ServiceMonitor endpoints without a port name are not reproduced here"
    kind = "endpointslice" if slice_role else "endpoint"
    rules.append({"action": "keep", "source_labels": [f"{PREFIX}{kind}_port_name"], "regex": ep["port"]})
    target = [f"{PREFIX}{kind}_address_target_kind", f"{PREFIX}{kind}_address_target_name"]
    rules += [
        {"source_labels": target, "separator": ";", "regex": "Node;(.*)", "replacement": "${1}", "target_label": "node"},
        {"source_labels": target, "separator": ";", "regex": "Pod;(.*)", "replacement": "${1}", "target_label": "pod"},
        {"source_labels": [f"{PREFIX}namespace"], "target_label": "namespace"},
        {"source_labels": [f"{PREFIX}service_name"], "target_label": "service"},
        {"source_labels": [f"{PREFIX}pod_name"], "target_label": "pod"},
        {"source_labels": [f"{PREFIX}pod_container_name"], "target_label": "container"},
        {"action": "drop", "source_labels": [f"{PREFIX}pod_phase"], "regex": "(Failed|Succeeded)"},
        {"source_labels": [f"{PREFIX}service_name"], "target_label": "job", "replacement": "${1}"},
    ]
    if spec.get("jobLabel"):
        rules.append({"source_labels": [f"{PREFIX}service_label_{sanitize(spec['jobLabel'])}"], "target_label": "job",
                      "regex": "(.+)", "replacement": "${1}"})
    rules.append({"target_label": "endpoint", "replacement": ep["port"]})
    rules += [_relabel(r) for r in ep.get("relabelings") or []]
    if enforced_namespace_label:
        rules.append({"target_label": enforced_namespace_label, "replacement": service_monitor["metadata"]["namespace"]})
    return rules


def scrape_config(service_monitor: dict[str, Any], index: int, *, role: str, targets_file: Path,
                  enforced_namespace_label: str | None = None, interval: str = "1s") -> dict[str, Any]:
    """The job of endpoint ``index``; ``interval`` replaces the endpoint's (tests scrape every second)."""
    meta, ep = service_monitor["metadata"], service_monitor["spec"]["endpoints"][index]
    honor = bool(ep.get("honorLabels", False)) and not enforced_namespace_label
    cfg: dict[str, Any] = {
        "job_name": f"serviceMonitor/{meta['namespace']}/{meta['name']}/{index}", "honor_labels": honor,
        "file_sd_configs": [{"files": [str(targets_file)]}], "scrape_interval": interval, "scrape_timeout": interval,
        "metrics_path": ep.get("path", "/metrics"),
        "relabel_configs": relabel_configs(service_monitor, index, role=role,
                                           enforced_namespace_label=enforced_namespace_label)}
    if ep.get("params"):
        cfg["params"] = ep["params"]
    metric_relabels = [_relabel(r) for r in ep.get("metricRelabelings") or []]
    if enforced_namespace_label:
        metric_relabels.append({"target_label": enforced_namespace_label,
                                "replacement": meta["namespace"]})
    if metric_relabels:
        cfg["metric_relabel_configs"] = metric_relabels
    return cfg


def selectors_of_job(exprs: Sequence[str]) -> set[str]:
    """Every ``job="..."`` matcher in the expressions."""
    return {m for e in exprs for m in re.findall(r'\bjob\s*=\s*"([^"]*)"', e)}
