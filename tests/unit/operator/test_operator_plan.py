"""The operator's pure parts, without a cluster:

- ``World.observe``: which monitors a watch event touches (same-name monitor, monitors that
  target the object), and a relist of unchanged objects touching nothing;
- ``plan_generated``: Contract 1 decisions (apply, no-op when already right, Route wins with a
  Warning on the Service, bad annotation -> Warning and no change, a hand-written RouteMonitor
  never overwritten, delete only when the owner is seen without the annotation);
- ``status``: conditions and Ready's reason, lastTransitionTime kept while a status holds,
  what counts as a significant change (not the probe time).
"""

from __future__ import annotations

from typing import Any

import pytest

from alert_rules import names
from route_monitor.operator import plan, status
from route_monitor.operator.world import World
from route_monitor.probe.result import FailureReason, ProbeResult
from route_monitor.spec.monitor import parse_routemonitor
from route_monitor.targets.resolve import ResolvedTarget


def obj(kind: str, name: str, ann: dict[str, str] | None = None, uid: str = "", ns: str = "ns",
        **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": uid or f"uid-{kind}-{name}", "resourceVersion": "1"}
    if ann is not None:
        meta["annotations"] = ann
    return {"metadata": meta, **extra}


def monitor(name: str, target: dict[str, Any], generated_from: str | None = None, owner_uid: str = "") -> dict[str, Any]:
    m = obj("routemonitor", name, spec={"target": target, "slo": {"availability": "99.9"}})
    if generated_from:
        m["metadata"]["labels"] = {names.LABEL_GENERATED_FROM: generated_from}
        m["metadata"]["ownerReferences"] = [{"uid": owner_uid}]
    return m


SLO = {names.ANN_SLO: "99.9"}


def test_route_change_touches_its_own_and_targeting_monitors() -> None:
    w = World()
    assert w.observe("routemonitor", None, monitor("custom", {"route": {"name": "web"}})) == {("ns", "custom")}
    assert w.observe("route", None, obj("route", "web", spec={"host": "a"})) == {("ns", "web"), ("ns", "custom")}
    assert w.observe("service", None, obj("service", "web")) == {("ns", "web")}


def test_unchanged_relist_and_resource_version_only_changes_touch_nothing() -> None:
    w = World()
    r = obj("route", "web", spec={"host": "a"})
    w.observe("route", None, r)
    again = {**r, "metadata": {**r["metadata"], "resourceVersion": "2"}}
    assert w.observe("route", "MODIFIED", again) == set()
    m = monitor("web", {"route": {"name": "web"}})
    w.observe("routemonitor", None, m)
    assert w.observe("routemonitor", "MODIFIED", {**m, "status": {"url": "http://a/"}}) == set()
    assert w.observe("route", "DELETED", again) == {("ns", "web")}
    assert ("ns", "web") not in w.routes


def test_retargeted_monitor_leaves_the_old_index_entry() -> None:
    w = World()
    w.observe("routemonitor", None, monitor("m", {"route": {"name": "a"}}))
    w.observe("routemonitor", "MODIFIED", monitor("m", {"route": {"name": "b"}}))
    assert w.observe("route", None, obj("route", "a")) == {("ns", "a")}
    assert w.observe("route", None, obj("route", "b")) == {("ns", "b"), ("ns", "m")}


def world(*items: tuple[str, dict[str, Any]]) -> World:
    w = World()
    for kind, o in items:
        w.observe(kind, None, o)  # type: ignore[arg-type]
    return w


@pytest.mark.parametrize(("items", "action", "warnings"), [
    pytest.param([("route", obj("route", "web", SLO))], "apply", [], id="annotated-route"),
    pytest.param([("route", obj("route", "web", {names.ANN_SLO: "abc"}))], "none", ["InvalidAnnotation"],
                 id="bad-annotation-no-monitor"),
    pytest.param([("route", obj("route", "web", SLO)), ("service", obj("service", "web", SLO))], "apply",
                 ["RouteTakesPrecedence"], id="route-wins-over-service"),
    pytest.param([("route", obj("route", "web", SLO)), ("routemonitor", monitor("web", {"url": "http://x/"}))],
                 "none", ["RouteMonitorExists"], id="hand-written-monitor-is-never-overwritten"),
    pytest.param([("route", obj("route", "web")),
                  ("routemonitor", monitor("web", {"route": {"name": "web"}}, "route", "uid-route-web"))],
                 "delete", [], id="annotation-removed"),
    pytest.param([("routemonitor", monitor("web", {"route": {"name": "web"}}, "route", "uid-route-web"))],
                 "none", [], id="owner-not-seen-left-to-gc"),
    pytest.param([("route", obj("route", "web")), ("routemonitor", monitor("web", {"route": {"name": "web"}}))],
                 "none", [], id="unannotated-route-and-hand-written-monitor"),
])
def test_plan_generated(items: list[tuple[str, dict[str, Any]]], action: str, warnings: list[str]) -> None:
    decision = plan.plan_generated(world(*items), ("ns", "web"))
    assert decision.action == action
    assert [w.reason for w in decision.warnings] == warnings


@pytest.mark.parametrize(("kind", "bad", "field"), [
    pytest.param("route", {"host": ["a", "b"]}, "spec.host", id="route-host-list"),
    pytest.param("service", {"ports": [{"port": "80"}]}, "spec.ports[0].port", id="service-port-string"),
    pytest.param("ingress", {"rules": "web.example"}, "spec.rules", id="ingress-rules-string"),
])
def test_a_target_of_the_wrong_shape_is_unresolved_naming_the_field(kind: str, bad: dict[str, Any],
                                                                    field: str) -> None:
    target = {kind: {"name": "web"}}
    w = world((kind, obj(kind, "web", spec=bad)), ("routemonitor", monitor("m", target)))
    got = plan.resolve_target(parse_routemonitor(w.monitors[("ns", "m")]), w, allow_url_targets=False)
    assert isinstance(got, plan.Unresolved) and got.reason == "InvalidSource", got
    assert f"ns/web: {field}: " in got.message, got.message


def test_an_annotated_ingress_of_the_wrong_shape_is_a_warning_and_no_monitor() -> None:
    decision = plan.plan_generated(world(("ingress", obj("ingress", "web", SLO, spec={"rules": [{"host": 5}]}))),
                                   ("ns", "web"))
    assert decision.action == "none"
    [warning] = decision.warnings
    assert warning.reason == "InvalidSource" and "spec.rules[0].host: expected a string" in warning.message


def test_generated_manifest_is_owned_by_the_route_and_applied_once() -> None:
    w = world(("route", obj("route", "web", {**SLO, names.ANN_INTERVAL: "15s"})))
    decision = plan.plan_generated(w, ("ns", "web"))
    assert decision.manifest is not None
    assert decision.manifest["metadata"]["ownerReferences"] == [
        {"apiVersion": "route.openshift.io/v1", "kind": "Route", "name": "web", "uid": "uid-route-web",
         "controller": True}]
    applied = {**decision.manifest, "metadata": {**decision.manifest["metadata"], "uid": "m1"}}
    w.observe("routemonitor", None, applied)
    assert plan.plan_generated(w, ("ns", "web")).action == "none"


def test_bad_annotation_message_names_annotation_value_and_what_is_accepted() -> None:
    w = world(("route", obj("route", "web", {**SLO, names.ANN_INTERVAL: "often"})))
    [warning] = plan.plan_generated(w, ("ns", "web")).warnings
    assert names.ANN_INTERVAL in warning.message and "'often'" in warning.message
    assert "duration" in warning.message and "30s" in warning.message
    assert dict(warning.involved)["kind"] == "Route"


RESOLVED = ResolvedTarget(url="http://web/", kind="route", name="web")


def result(success: bool, at: float = 100.0, reason: FailureReason | None = None) -> ProbeResult:
    return ProbeResult(key=("ns", "web"), url="http://web/", timestamp=at, success=success, reason=reason,
                       duration_seconds=0.01, status_code=200 if success else 503, detail="")


@pytest.mark.parametrize(("obs", "ready_reason"), [
    pytest.param(status.Observed(1, target=RESOLVED, interval_ms=30_000), "Ready", id="ready"),
    pytest.param(status.Observed(1, target=plan.Unresolved("RouteNotFound", "no")), "RouteNotFound",
                 id="target-missing"),
    pytest.param(status.Observed(1, target=RESOLVED, rules_error="boom"), "ApplyFailed", id="rules-failed"),
    pytest.param(status.Observed(1, invalid="spec.probe.timeout: too long"), "InvalidSpec", id="invalid"),
])
def test_ready_reason_is_the_first_failing_condition(obs: status.Observed, ready_reason: str) -> None:
    conds = {c["type"]: c for c in status.conditions(obs)}
    assert conds["Ready"]["reason"] == ready_reason
    assert (conds["Ready"]["status"] == "True") == (ready_reason == "Ready")


def test_transition_time_is_kept_while_the_condition_holds() -> None:
    obs = status.Observed(1, target=RESOLVED, interval_ms=30_000)
    first = status.build(obs, None, 1000.0, None)
    later = status.build(obs, first, 2000.0, None)
    assert [c["lastTransitionTime"] for c in later["conditions"]] == [c["lastTransitionTime"] for c in first["conditions"]]
    broken = status.build(status.Observed(1, target=plan.Unresolved("NoHost", "x")), later, 3000.0, None)
    times = {c["type"]: c["lastTransitionTime"] for c in broken["conditions"]}
    assert times["TargetResolved"] == status.timestamp(3000.0)
    assert times["RulesApplied"] == status.timestamp(1000.0)


def test_only_a_new_outcome_is_a_significant_probe_change() -> None:
    obs = status.Observed(1, target=RESOLVED, interval_ms=30_000)
    ok1 = status.build(obs, None, 0, status.last_probe(result(True, 100)))
    ok2 = status.build(obs, ok1, 0, status.last_probe(result(True, 200)))
    bad = status.build(obs, ok2, 0, status.last_probe(result(False, 300, FailureReason.HTTP_STATUS)))
    timeout = status.build(obs, bad, 0, status.last_probe(result(False, 400, FailureReason.TIMEOUT)))
    assert status.significant(ok1) == status.significant(ok2)
    assert status.significant(ok2) != status.significant(bad) != status.significant(timeout)
    assert bad["lastProbe"] == {"time": status.timestamp(300), "result": "failure", "reason": "http_status"}


@pytest.mark.parametrize("reason_chars", [10, 30, 60, 61, 62, 63, 64, 65, 70, 75, 80, 90])
def test_the_invalid_spec_condition_stays_within_900_characters_with_the_kept_note(reason_chars: int) -> None:
    """Errors whose summary alone comes close to the limit: the note that probing goes on is kept
    whole and the message still fits (it was appended after bounding: up to 942 characters)."""
    from alert_rules.fielderrors import MAX_MESSAGE, FieldError, InvalidSpec
    from route_monitor.operator.plan import KEPT_NOTE, invalid_message
    for count in range(1, 25):
        error = InvalidSpec.of(FieldError.of(f"spec.maintenance[{i}].schedule", "x" * 20, "r" * reason_chars)
                               for i in range(count))
        kept, dropped = invalid_message(error, kept=True), invalid_message(error, kept=False)
        assert len(kept) <= MAX_MESSAGE and kept.endswith(KEPT_NOTE), (count, len(kept))
        assert len(dropped) <= MAX_MESSAGE and dropped == str(error) and "spec.maintenance[0]" in kept
