"""The operator never harms what it does not own (issue 8), on the real control plane with the
garbage collector on:

- a team's own PrometheusRule named after its application survives annotating, de-annotating and
  deleting the Route, byte for byte (spec, labels, ownerReferences, resourceVersion): the generated
  rule is ``route-monitor-<monitor>``;
- a foreign PrometheusRule at the generated name (there first, or replacing ours later) is never
  written over: ``RulesApplied=False``/``NameConflict`` and a Warning event naming it; once it is
  gone, the operator's rule is created;
- a hand-written RouteMonitor of the same name as an annotated Route is never modified or
  deleted; the Route gets a Warning event;
- each state survives an operator restart;
- upgrade: rules earlier versions generated under the monitor's own name move to the new name,
  with a rule in place at every moment and exactly one afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.types import PatchType

import alert_rules
from alert_rules import names
from route_monitor.spec.monitor import parse_routemonitor
from tests.support.cluster import Cluster
from tests.support.net import wait_for
from tests.support.operator import (
    Operator,
    Target,
    annotations,
    condition,
    get,
    new_namespace,
    route,
    running_operator,
    wait_monitor,
    warnings_for,
)
from tests.support.resources import PrometheusRule, Route, RouteMonitor

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ownership")


@pytest.fixture(scope="module")
def operator(cluster: Cluster, workdir: Path) -> Iterator[Operator]:
    with running_operator(cluster, workdir) as op:
        yield op


@pytest.fixture
def ns(kube: Client, request: pytest.FixtureRequest) -> str:
    return new_namespace(kube, request, "own")


TEAM_GROUPS = [{"name": "shop-own-alerts", "rules": [
    {"alert": "CheckoutErrors", "expr": 'sum(rate(http_requests_total{code=~"5.."}[5m])) > 1',
     "labels": {"severity": "critical", "team": "shop"}}]}]


def team_rule(kube: Client, ns: str, name: str) -> dict[str, Any]:
    """A team's own PrometheusRule, as `kubectl apply` of their file would create it."""
    kube.create(PrometheusRule.from_dict({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": ns, "labels": {"team": "shop"}},
        "spec": {"groups": TEAM_GROUPS}}))
    rule = get(kube, PrometheusRule, name, ns)
    assert rule is not None
    return rule


def retries(operator: Operator) -> float:
    """Reconciles that found the rule's name taken and will try again (the counter of a NameConflict;
    the retries back off 1, 2, 5, 10, 30, then 60 s apart)."""
    return operator.sample(names.RECONCILE_ERRORS_TOTAL, reason="rules_not_applied") or 0


def caught_up(kube: Client, operator: Operator, ns: str, target: Target, sentinel: str) -> None:
    """The operator has seen the Route events before this moment: a Route annotated now (same watch,
    same order) gets its monitor only after them; by then a harmful write would have happened."""
    kube.create(route(ns, sentinel, target.host, annotations()))
    wait_monitor(kube, ns, sentinel, lambda m: condition(m, "RulesApplied").get("status") == "True",
                 f"the sentinel Route {sentinel}'s monitor")


def unchanged(kube: Client, ns: str, before: dict[str, Any]) -> None:
    """The team's object is there, exactly as it was."""
    name = before["metadata"]["name"]
    now = get(kube, PrometheusRule, name, ns)
    assert now is not None, f"the team's PrometheusRule {ns}/{name} was deleted"
    for part in ("spec",):
        assert now[part] == before[part]
    for meta in ("labels", "ownerReferences", "uid", "resourceVersion", "annotations"):
        assert now["metadata"].get(meta) == before["metadata"].get(meta), meta


def test_a_teams_rule_named_after_the_app_survives_annotate_unannotate_and_delete(
        kube: Client, operator: Operator, ns: str, target: Target) -> None:
    theirs = team_rule(kube, ns, "checkout")
    kube.create(route(ns, "checkout", target.host, annotations()))
    ours_name = names.prometheus_rule_name("checkout")
    wait_for(lambda: get(kube, PrometheusRule, ours_name, ns) is not None, timeout=20, what="the generated rule")
    wait_monitor(kube, ns, "checkout", lambda m: condition(m, "Ready").get("status") == "True", "Ready")
    unchanged(kube, ns, theirs)
    assert ours_name == "route-monitor-checkout"

    kube.patch(Route, "checkout", [{"op": "remove", "path": "/metadata/annotations"}], namespace=ns,
               patch_type=PatchType.JSON)
    wait_for(lambda: get(kube, PrometheusRule, ours_name, ns) is None, timeout=40,
             what="the generated rule to be garbage collected")  # the operator and the collector are done
    unchanged(kube, ns, theirs)

    kube.patch(Route, "checkout", {"metadata": {"annotations": annotations()}}, namespace=ns,
               patch_type=PatchType.MERGE)
    wait_for(lambda: get(kube, PrometheusRule, ours_name, ns) is not None, timeout=20, what="the rule again")
    kube.delete(Route, "checkout", namespace=ns)
    wait_for(lambda: get(kube, RouteMonitor, "checkout", ns) is None and get(kube, PrometheusRule, ours_name, ns)
             is None, timeout=40, what="garbage collection of the monitor and its rule")
    unchanged(kube, ns, theirs)


def test_a_foreign_rule_at_the_generated_name_is_left_alone_and_reported(
        kube: Client, cluster: Cluster, workdir: Path, operator: Operator, ns: str, target: Target) -> None:
    taken = names.prometheus_rule_name("pay")
    theirs = team_rule(kube, ns, taken)
    kube.create(route(ns, "pay", target.host, annotations()))
    m = wait_monitor(kube, ns, "pay", lambda m: condition(m, "RulesApplied").get("reason") == "NameConflict",
                     "RulesApplied=False/NameConflict")
    rules = condition(m, "RulesApplied")
    assert rules["status"] == "False" and f"PrometheusRule {ns}/{taken}" in rules["message"]
    assert condition(m, "Ready")["status"] == "False"
    wait_for(lambda: any(f"{ns}/{taken}" in w for w in warnings_for(kube, ns, "RouteMonitor", "pay", "NameConflict")),
             timeout=10, what="a Warning event naming the foreign object")
    wait_for(lambda: target.count() >= 2, timeout=10, what="probing goes on regardless")
    before = retries(operator)
    wait_for(lambda: retries(operator) >= before + 1, timeout=75, what="another attempt to apply the rule")
    unchanged(kube, ns, theirs)

    # a restart in this state changes nothing either
    operator.stop()
    operator.start()
    wait_for(lambda: retries(operator) >= 1, timeout=30, what="the restarted operator's attempt to apply the rule")
    unchanged(kube, ns, theirs)

    # the team renames theirs: ours is created at the next retry
    kube.delete(PrometheusRule, taken, namespace=ns)
    m = wait_monitor(kube, ns, "pay", lambda m: condition(m, "RulesApplied").get("status") == "True",
                     "RulesApplied once the name is free", timeout=90)
    rule = get(kube, PrometheusRule, taken, ns)
    assert rule is not None and [o["uid"] for o in rule["metadata"]["ownerReferences"]] == [m["metadata"]["uid"]]


def test_a_foreign_rule_replacing_ours_is_not_written_over(kube: Client, operator: Operator, ns: str,
                                                            target: Target) -> None:
    kube.create(route(ns, "cart", target.host, annotations(slo="99.9")))
    ours = names.prometheus_rule_name("cart")
    wait_for(lambda: get(kube, PrometheusRule, ours, ns) is not None, timeout=20, what="the generated rule")
    kube.delete(PrometheusRule, ours, namespace=ns)
    theirs = team_rule(kube, ns, ours)
    # a change that makes the operator write the rule again
    kube.patch(Route, "cart", {"metadata": {"annotations": {names.ANN_SLO: "99.5"}}}, namespace=ns,
               patch_type=PatchType.MERGE)
    wait_monitor(kube, ns, "cart", lambda m: condition(m, "RulesApplied").get("reason") == "NameConflict"
                 and m["spec"]["slo"]["availability"] == "99.5", "NameConflict after the replacement")
    before = retries(operator)
    wait_for(lambda: retries(operator) >= before + 1, timeout=75, what="another attempt to apply the rule")
    unchanged(kube, ns, theirs)


def test_a_hand_written_monitor_of_the_same_name_wins_and_is_never_touched(
        kube: Client, operator: Operator, ns: str, target: Target) -> None:
    kube.create(RouteMonitor.from_dict({
        "apiVersion": names.API_VERSION, "kind": names.KIND,
        "metadata": {"name": "search", "namespace": ns, "labels": {"team": "search"}},
        "spec": {"target": {"route": {"name": "search"}}, "path": "/own", "probe": {"interval": "1s"},
                 "slo": {"availability": "99"}}}))
    handmade = wait_monitor(kube, ns, "search", lambda m: (m.get("status") or {}).get("conditions"), "status")
    kube.create(route(ns, "search", target.host, annotations(slo="99.95", path="/generated")))
    wait_for(lambda: warnings_for(kube, ns, "Route", "search", "RouteMonitorExists"), timeout=20,
             what="a Warning event on the annotated Route")
    wait_for(lambda: target.count("/own") >= 2, timeout=10, what="the hand-written monitor to probe")

    def still_handmade() -> None:
        m = get(kube, RouteMonitor, "search", ns)
        assert m is not None, "the hand-written RouteMonitor was deleted"
        assert m["spec"] == handmade["spec"]
        assert m["metadata"].get("labels") == handmade["metadata"].get("labels")
        assert m["metadata"].get("ownerReferences") == handmade["metadata"].get("ownerReferences")
        assert m["metadata"]["uid"] == handmade["metadata"]["uid"]

    still_handmade()
    assert target.count("/generated") == 0
    operator.stop()
    operator.start()
    wait_for(lambda: len(warnings_for(kube, ns, "Route", "search", "RouteMonitorExists")) >= 2, timeout=30,
             what="the restarted operator's own Warning on the Route (it has reconciled it)")
    still_handmade()
    kube.patch(Route, "search", [{"op": "remove", "path": "/metadata/annotations"}], namespace=ns,
               patch_type=PatchType.JSON)
    caught_up(kube, operator, ns, target, "after-unannotate")
    still_handmade()
    kube.delete(Route, "search", namespace=ns)
    caught_up(kube, operator, ns, target, "after-delete")
    still_handmade()


def test_rules_of_earlier_versions_move_to_the_new_name_without_a_gap(
        kube: Client, cluster: Cluster, workdir: Path, operator: Operator, ns: str, target: Target) -> None:
    operator.stop()
    # what the previous version left: a generated monitor, and its rule under the monitor's own name
    r = kube.create(route(ns, "legacy", target.host, annotations()))
    monitor = kube.create(RouteMonitor.from_dict({
        "apiVersion": names.API_VERSION, "kind": names.KIND,
        "metadata": {"name": "legacy", "namespace": ns, "labels": {names.LABEL_GENERATED_FROM: "route"},
                     "ownerReferences": [{"apiVersion": "route.openshift.io/v1", "kind": "Route", "name": "legacy",
                                          "uid": r.metadata.uid, "controller": True}]},
        "spec": {"target": {"route": {"name": "legacy"}}, "probe": {"interval": "1s"},
                 "slo": {"availability": "99.9"}}})).to_dict()
    old = alert_rules.prometheus_rule_object(parse_routemonitor(monitor).slo())
    old["metadata"]["name"] = "legacy"
    old["metadata"]["ownerReferences"] = [{"apiVersion": names.API_VERSION, "kind": names.KIND, "name": "legacy",
                                           "uid": monitor["metadata"]["uid"], "controller": True}]
    kube.create(PrometheusRule.from_dict(old))
    new_name = names.prometheus_rule_name("legacy")

    def ours() -> list[str]:
        return sorted(x.metadata.name for x in kube.list(PrometheusRule, namespace=ns))

    operator.start()
    seen: list[list[str]] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        seen.append(ours())
        if seen[-1] == [new_name]:
            break
    assert seen[-1] == [new_name], seen[-5:]
    assert all(s for s in seen), "a moment without any rule for the monitor"
    rule = get(kube, PrometheusRule, new_name, ns)
    assert rule is not None and rule["spec"] == {k: v for k, v in old.items() if k == "spec"}["spec"]
    assert [o["uid"] for o in rule["metadata"]["ownerReferences"]] == [monitor["metadata"]["uid"]]
    m = wait_monitor(kube, ns, "legacy", lambda m: condition(m, "Ready").get("status") == "True", "Ready")
    assert m["metadata"]["uid"] == monitor["metadata"]["uid"], "the generated monitor itself keeps its name and uid"
