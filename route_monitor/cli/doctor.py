"""Will Prometheus actually load what route-monitor makes? Pure checks over cluster objects.

The most common silent failure of prometheus-operator users: a Prometheus whose ``ruleSelector``
or ``serviceMonitorSelector`` does not match (kube-prometheus-stack selects ``release: <name>``),
or whose namespace selectors leave out the namespaces where the objects live. Semantics as
prometheus-operator documents them: a null object selector matches nothing, an empty one
everything; a null namespace selector matches the Prometheus' own namespace only, an empty one
all namespaces. ``enforcedNamespaceLabel`` rewrites the ``namespace`` of scraped series.

Input: plain API objects (dicts) the command read; output: :class:`Finding` lines in plain words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Level = Literal["ok", "warning", "problem"]


@dataclass(frozen=True)
class Finding:
    level: Level
    message: str

    def __str__(self) -> str:
        return f"{self.level}: {self.message}"


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Kubernetes label-selector semantics (matchLabels and matchExpressions); None matches nothing."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if ((op == "In" and (not present or labels[key] not in values))
                or (op == "NotIn" and present and labels[key] in values)
                or (op == "Exists" and not present) or (op == "DoesNotExist" and present)):
            return False
    return True


def namespace_selected(selector: Mapping[str, Any] | None, own: str, namespace: str,
                       namespace_labels: Mapping[str, str]) -> bool:
    """A null namespace selector means the Prometheus' own namespace only."""
    if selector is None:
        return namespace == own
    return selects(selector, {"kubernetes.io/metadata.name": namespace, **namespace_labels})


@dataclass(frozen=True)
class Generated:
    """What route-monitor makes that Prometheus must load."""

    rule_labels: Mapping[str, str]
    """Labels every generated PrometheusRule carries (ours plus --rule-label)."""
    rule_namespaces: tuple[str, ...]
    """Namespaces holding monitors (where their rules are)."""
    service_monitor: Mapping[str, Any] | None
    """route-monitor's own ServiceMonitor as found in the cluster (None: not installed)."""


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def check_prometheus(prom: Mapping[str, Any], made: Generated,
                     namespace_labels: Mapping[str, Mapping[str, str]]) -> list[Finding]:
    spec = prom.get("spec") or {}
    own = str((prom.get("metadata") or {}).get("namespace"))
    who = f"Prometheus {_name(prom)}"
    out: list[Finding] = []
    rule_sel = spec.get("ruleSelector")
    if not selects(rule_sel, made.rule_labels):
        needed = ", ".join(f"{k}={v}" for k, v in (rule_sel or {}).get("matchLabels", {}).items())
        out.append(Finding("problem", f"{who} does not load the generated PrometheusRules: its ruleSelector "
                           + ("is null (selects none)" if rule_sel is None else f"wants {needed or 'other labels'}")
                           + "; start the operator with --rule-label KEY=VALUE for each label it wants"))
    else:
        left_out = [ns for ns in made.rule_namespaces
                    if not namespace_selected(spec.get("ruleNamespaceSelector"), own, ns, namespace_labels.get(ns, {}))]
        if left_out:
            out.append(Finding("problem", f"{who} selects the generated rules' labels but not their namespaces: "
                               f"{', '.join(left_out)} (ruleNamespaceSelector"
                               + (" is null: its own namespace only)" if spec.get("ruleNamespaceSelector") is None
                                  else " does not match them)")))
        else:
            out.append(Finding("ok", f"{who} loads the generated PrometheusRules"
                               + (f" of {len(made.rule_namespaces)} namespaces" if made.rule_namespaces else "")))
    sm = made.service_monitor
    if sm is not None:
        sm_labels = (sm.get("metadata") or {}).get("labels") or {}
        sm_ns = str((sm.get("metadata") or {}).get("namespace"))
        if not selects(spec.get("serviceMonitorSelector"), sm_labels):
            out.append(Finding("problem", f"{who} does not scrape route-monitor: its serviceMonitorSelector does "
                               f"not match ServiceMonitor {_name(sm)}'s labels (add the labels it wants)"))
        elif not namespace_selected(spec.get("serviceMonitorNamespaceSelector"), own, sm_ns,
                                    namespace_labels.get(sm_ns, {})):
            out.append(Finding("problem", f"{who} selects ServiceMonitor {_name(sm)} by label but not its namespace "
                               f"{sm_ns} (serviceMonitorNamespaceSelector)"))
        else:
            out.append(Finding("ok", f"{who} scrapes route-monitor through ServiceMonitor {_name(sm)}"))
    if spec.get("enforcedNamespaceLabel"):
        out.append(Finding("warning", f"{who} enforces the namespace label ({spec['enforcedNamespaceLabel']}): "
                           "series scraped through one central ServiceMonitor get the operator's namespace, so "
                           "rules in application namespaces never match; use a per-namespace scrape set-up"))
    return out


def check_all(prometheuses: Iterable[Mapping[str, Any]], made: Generated,
              namespace_labels: Mapping[str, Mapping[str, str]]) -> list[Finding]:
    proms = list(prometheuses)
    if not proms:
        return [Finding("problem", "no Prometheus object (monitoring.coreos.com/v1) in the cluster: nothing loads "
                        "the generated rules or scrapes route-monitor through prometheus-operator")]
    per = [check_prometheus(p, made, namespace_labels) for p in proms]
    findings = [f for fs in per for f in fs]
    if made.service_monitor is None:
        findings.append(Finding("problem", "route-monitor's ServiceMonitor is not installed: nothing scrapes "
                                "/metrics (kubectl apply -k deploy/)"))
    if not any(all(f.level != "problem" for f in fs) for fs in per):
        findings.append(Finding("problem", "no Prometheus both loads the generated rules and scrapes route-monitor"))
    return findings
