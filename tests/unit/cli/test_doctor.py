"""``route-monitor doctor``'s judgement, pure (issue 12): does a Prometheus load the generated
rules and scrape route-monitor? prometheus-operator's documented selector semantics:

- null ruleSelector/serviceMonitorSelector select nothing, ``{}`` everything;
- null namespace selectors mean the Prometheus' own namespace, ``{}`` every namespace;
- kube-prometheus-stack's default ``release: <name>`` selector without ``--rule-label`` is the
  classic silent failure; ``enforcedNamespaceLabel`` is called out.
"""

from __future__ import annotations

from typing import Any

import pytest

from route_monitor.cli.doctor import Generated, check_all, selects

OURS = {"app.kubernetes.io/managed-by": "route-monitor"}
SM = {"metadata": {"name": "route-monitor", "namespace": "route-monitor",
                   "labels": {"app.kubernetes.io/name": "route-monitor"}}}
NS_LABELS = {"shop": {"team": "shop"}, "route-monitor": {}, "monitoring": {}}


def prometheus(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "k8s", "namespace": "monitoring"}, "spec": spec}


def verdict(prom: dict[str, Any], rule_labels: dict[str, str] = OURS) -> list[str]:
    made = Generated(rule_labels=rule_labels, rule_namespaces=("shop",), service_monitor=SM)
    return [f"{f.level}: {f.message}" for f in check_all([prom], made, NS_LABELS)]


@pytest.mark.parametrize(("prom", "rule_labels", "expected"), [
    pytest.param(prometheus(ruleSelector={}, ruleNamespaceSelector={}, serviceMonitorSelector={},
                            serviceMonitorNamespaceSelector={}), OURS, [], id="select-everything"),
    pytest.param(prometheus(ruleSelector={"matchLabels": {"release": "kps"}}, ruleNamespaceSelector={},
                            serviceMonitorSelector={}, serviceMonitorNamespaceSelector={}), OURS,
                 ["does not load the generated PrometheusRules", "release=kps", "--rule-label"],
                 id="kube-prometheus-stack-release-label-missing"),
    pytest.param(prometheus(ruleSelector={"matchLabels": {"release": "kps"}}, ruleNamespaceSelector={},
                            serviceMonitorSelector={}, serviceMonitorNamespaceSelector={}),
                 {**OURS, "release": "kps"}, [], id="release-label-given"),
    pytest.param(prometheus(serviceMonitorSelector={}, serviceMonitorNamespaceSelector={}), OURS,
                 ["ruleSelector is null"], id="null-rule-selector-selects-none"),
    pytest.param(prometheus(ruleSelector={}, serviceMonitorSelector={}, serviceMonitorNamespaceSelector={}), OURS,
                 ["not their namespaces: shop", "its own namespace only"], id="null-namespace-selector-own-only"),
    pytest.param(prometheus(ruleSelector={}, ruleNamespaceSelector={"matchLabels": {"team": "shop"}},
                            serviceMonitorSelector={"matchExpressions": [
                                {"key": "app.kubernetes.io/name", "operator": "In", "values": ["other"]}]},
                            serviceMonitorNamespaceSelector={}), OURS,
                 ["does not scrape route-monitor"], id="servicemonitor-not-selected"),
    pytest.param(prometheus(ruleSelector={}, ruleNamespaceSelector={}, serviceMonitorSelector={},
                            serviceMonitorNamespaceSelector={}, enforcedNamespaceLabel="namespace"), OURS,
                 ["enforces the namespace label"], id="enforced-namespace-label"),
])
def test_verdicts(prom: dict[str, Any], rule_labels: dict[str, str], expected: list[str]) -> None:
    lines = verdict(prom, rule_labels)
    bad = [line for line in lines if not line.startswith("ok:")]
    if not expected:
        assert not bad, lines
    for words in expected:
        assert any(words in line for line in bad), (words, lines)


def test_no_prometheus_at_all_is_a_problem() -> None:
    made = Generated(rule_labels=OURS, rule_namespaces=(), service_monitor=SM)
    assert any(f.level == "problem" and "no Prometheus" in f.message for f in check_all([], made, {}))


@pytest.mark.parametrize(("selector", "labels", "ok"), [
    pytest.param(None, {"a": "1"}, False, id="null"),
    pytest.param({}, {}, True, id="empty"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False,
                 id="notin"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {}, True, id="does-not-exist"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False, id="exists"),
])
def test_label_selector_semantics(selector: Any, labels: dict[str, str], ok: bool) -> None:
    assert selects(selector, labels) is ok
