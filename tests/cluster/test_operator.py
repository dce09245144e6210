"""The operator against a real control plane (etcd + kube-apiserver + kube-controller-manager),
running as a subprocess under the user bound only to ``deploy/base/clusterrole.yaml``, probing local
HTTP targets. Covers (issue 4; docs/reference.md: annotations, the RouteMonitor resource):

- annotate a Route -> RouteMonitor (owned by the Route) and PrometheusRule (owned by the
  RouteMonitor) appear, the target is probed, status and metrics say so; nothing is written
  onto the Route (no finalizer, no annotation);
- the Route's host changes -> the probed URL follows; an admitted ingress host wins over spec.host;
- the annotation is removed -> both gone, probing stops; the Route is deleted -> garbage
  collection removes both;
- a malformed annotation -> Warning event naming annotation, value and what is accepted, no
  monitor (several malformed annotations: one event naming each); on an existing monitor the
  last good spec stays;
- a RouteMonitor naming a missing Route -> TargetResolved=False, then resolves;
- Route and Service of the same name -> the Route wins, Warning event on the Service;
- url targets refused without --allow-url-targets; link-local hosts always refused;
- status is written on transitions, never per probe;
- the generated PrometheusRule passes the CRD schema and promtool.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from lightkube import Client
from lightkube.resources.core_v1 import Service
from lightkube.types import PatchType

from alert_rules import names
from tests.support.net import wait_for
from tests.support.operator import (
    Operator,
    Target,
    admit,
    annotations,
    condition,
    get,
    route,
    wait_monitor,
    warnings_for,
)
from tests.support.resources import PrometheusRule, Route, RouteMonitor

pytestmark = pytest.mark.cluster


def test_annotated_route_is_monitored_with_owned_monitor_and_rule(kube: Client, operator: Operator, ns: str,
                                                                  target: Target) -> None:
    created = kube.create(route(ns, "shop", target.host, annotations(path="/healthz")))
    route_uid = created.metadata.uid
    monitor = wait_monitor(kube, ns, "shop", lambda m: condition(m, "Ready").get("status") == "True",
                           "the generated RouteMonitor to become Ready")
    meta = monitor["metadata"]
    assert meta["labels"][names.LABEL_GENERATED_FROM] == "route"
    assert [(o["kind"], o["name"], o["uid"], o.get("controller")) for o in meta["ownerReferences"]] == [
        ("Route", "shop", route_uid, True)]
    assert monitor["spec"]["path"] == "/healthz"
    assert monitor["spec"]["probe"]["interval"] == "1s"
    assert monitor["status"]["url"] == f"http://{target.host}/healthz"
    assert monitor["status"]["protocol"] == "http (default)"
    assert monitor["status"]["observedGeneration"] == meta["generation"]
    assert {c["type"]: (c["status"], c["reason"]) for c in monitor["status"]["conditions"]} == {
        "Ready": ("True", "Ready"), "TargetResolved": ("True", "Resolved"),
        "Probing": ("True", "Probing"), "RulesApplied": ("True", "Applied")}

    rule = get(kube, PrometheusRule, names.prometheus_rule_name("shop"), ns)
    assert rule is not None
    assert [(o["kind"], o["name"], o["uid"]) for o in rule["metadata"]["ownerReferences"]] == [
        ("RouteMonitor", "shop", meta["uid"])]
    alerts = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r}
    assert names.ALERT_ERROR_BUDGET_BURN in alerts

    wait_for(lambda: target.count("/healthz") >= 2, timeout=10, what="the target to be probed")
    wait_monitor(kube, ns, "shop", lambda m: (m["status"].get("lastProbe") or {}).get("result") == "success",
                 "lastProbe success in status")
    assert (operator.sample(names.PROBES_TOTAL, namespace=ns, monitor="shop", result="success") or 0) >= 1
    assert operator.sample(names.MONITORS, state="ready") >= 1

    # nothing was written onto the user's Route
    after = kube.get(Route, "shop", namespace=ns).to_dict()["metadata"]
    assert not after.get("finalizers")
    assert after.get("annotations") == annotations(path="/healthz")
    assert after["resourceVersion"] == created.metadata.resourceVersion


def test_probed_url_follows_host_changes(kube: Client, operator: Operator, ns: str) -> None:
    first, second, third = Target(), Target(), Target()
    try:
        kube.create(route(ns, "web", first.host, annotations()))
        wait_for(lambda: first.count() >= 1, timeout=15, what="the first host to be probed")
        kube.patch(Route, "web", {"spec": {"host": second.host}}, namespace=ns, patch_type=PatchType.MERGE)
        wait_monitor(kube, ns, "web", lambda m: m["status"].get("url") == f"http://{second.host}/",
                     "status.url to follow spec.host")
        wait_for(lambda: second.count() >= 1, timeout=10, what="the new host to be probed")
        stopped_at = first.count()
        # an admitted ingress host wins over spec.host
        admit(kube, ns, "web", third.host)
        wait_monitor(kube, ns, "web", lambda m: m["status"].get("url") == f"http://{third.host}/",
                     "status.url to follow the admitted ingress host")
        wait_for(lambda: third.count() >= 1, timeout=10, what="the admitted host to be probed")
        time.sleep(1.5)
        assert first.count() <= stopped_at + 1, "the old host is still probed"
    finally:
        for t in (first, second, third):
            t.close()


def test_removing_the_annotation_removes_monitor_and_rule_and_stops_probing(
        kube: Client, operator: Operator, ns: str, target: Target) -> None:
    kube.create(route(ns, "gone", target.host, annotations()))
    wait_for(lambda: get(kube, PrometheusRule, names.prometheus_rule_name("gone"), ns) is not None, timeout=20, what="the PrometheusRule")
    wait_for(lambda: target.count() >= 1, timeout=10, what="probing")
    kube.patch(Route, "gone", [{"op": "remove", "path": "/metadata/annotations"}], namespace=ns,
               patch_type=PatchType.JSON)
    wait_for(lambda: get(kube, RouteMonitor, "gone", ns) is None, timeout=20, what="the RouteMonitor to go")
    wait_for(lambda: get(kube, PrometheusRule, names.prometheus_rule_name("gone"), ns) is None, timeout=30,
             what="the PrometheusRule to be garbage collected")
    time.sleep(1.0)
    hits = target.count()
    time.sleep(2.5)
    assert target.count() == hits, "the target is still probed after the annotation was removed"
    assert operator.sample(names.PROBES_TOTAL, namespace=ns, monitor="gone", result="success") is None


def test_deleting_the_route_garbage_collects_monitor_and_rule(kube: Client, operator: Operator, ns: str,
                                                              target: Target) -> None:
    kube.create(route(ns, "doomed", target.host, annotations()))
    wait_for(lambda: get(kube, PrometheusRule, names.prometheus_rule_name("doomed"), ns) is not None, timeout=20, what="the PrometheusRule")
    kube.delete(Route, "doomed", namespace=ns)
    wait_for(lambda: get(kube, RouteMonitor, "doomed", ns) is None and get(kube, PrometheusRule, names.prometheus_rule_name("doomed"), ns) is None,
             timeout=40, what="garbage collection of the RouteMonitor and PrometheusRule")


@pytest.mark.parametrize(("annotation", "value", "expected"), [
    pytest.param(names.ANN_SLO, "lots", "percent", id="slo-not-a-number"),
    pytest.param(names.ANN_SLO, "100", "strictly between", id="slo-100-leaves-no-budget"),
    pytest.param(names.ANN_INTERVAL, "often", "duration", id="interval-not-a-duration"),
])
def test_malformed_annotation_is_a_warning_event_and_no_monitor(
        kube: Client, operator: Operator, ns: str, target: Target, annotation: str, value: str, expected: str) -> None:
    kube.create(route(ns, "bad", target.host, {**annotations(), annotation: value}))
    wait_for(lambda: warnings_for(kube, ns, "Route", "bad", "InvalidAnnotation"), timeout=20,
             what="a Warning event on the Route")
    [message] = warnings_for(kube, ns, "Route", "bad", "InvalidAnnotation")
    assert annotation in message and repr(value) in message and expected in message
    assert get(kube, RouteMonitor, "bad", ns) is None
    assert target.count() == 0


def test_every_bad_annotation_is_named_in_one_warning_event(kube: Client, operator: Operator, ns: str,
                                                           target: Target) -> None:
    bad = {names.ANN_SLO: "100", names.ANN_INTERVAL: "often", names.ANN_PATH: "healthz", names.ANN_PORT: "8080"}
    kube.create(route(ns, "many", target.host, bad))
    wait_for(lambda: warnings_for(kube, ns, "Route", "many", "InvalidAnnotation"), timeout=20,
             what="a Warning event on the Route")
    [message] = warnings_for(kube, ns, "Route", "many", "InvalidAnnotation")
    for annotation, value in bad.items():
        assert f"annotation {annotation}: {value!r} is not accepted" in message, message
    assert message.endswith("no monitor change was made") and len(message) <= 1024
    assert get(kube, RouteMonitor, "many", ns) is None


def test_an_unknown_annotation_is_a_warning_event_with_a_suggestion_and_the_monitor_runs(
        kube: Client, operator: Operator, ns: str, target: Target) -> None:
    """``routemonitor.io/intreval`` (meant ``interval``) is not silently ignored: the Route gets
    the words ``check`` prints, and the monitor its known annotations ask for is made."""
    kube.create(route(ns, "typo", target.host, {**annotations(), "routemonitor.io/intreval": "10s"}))
    wait_for(lambda: warnings_for(kube, ns, "Route", "typo", "UnknownAnnotation"), timeout=20,
             what="a Warning event on the Route")
    [message] = warnings_for(kube, ns, "Route", "typo", "UnknownAnnotation")
    assert message == ("annotation routemonitor.io/intreval: unknown annotation; did you mean "
                       "`routemonitor.io/interval`?; it is ignored"), message
    wait_monitor(kube, ns, "typo", lambda m: condition(m, "Ready").get("status") == "True", "Ready")


def test_malformed_annotation_keeps_the_last_good_monitor(kube: Client, operator: Operator, ns: str,
                                                         target: Target) -> None:
    kube.create(route(ns, "keep", target.host, annotations(slo="99.5")))
    good = wait_monitor(kube, ns, "keep", lambda m: condition(m, "Ready").get("status") == "True", "Ready")
    kube.patch(Route, "keep", {"metadata": {"annotations": {names.ANN_SLO: "99.5%%"}}}, namespace=ns,
               patch_type=PatchType.MERGE)
    wait_for(lambda: warnings_for(kube, ns, "Route", "keep", "InvalidAnnotation"), timeout=20,
             what="a Warning event on the Route")
    still = get(kube, RouteMonitor, "keep", ns)
    assert still is not None and still["spec"] == good["spec"]
    hits = target.count()
    wait_for(lambda: target.count() > hits, timeout=10, what="probing to go on")


def test_monitor_naming_a_missing_route_resolves_when_it_appears(kube: Client, operator: Operator, ns: str,
                                                                target: Target) -> None:
    kube.create(RouteMonitor.from_dict({
        "apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": "handmade", "namespace": ns},
        "spec": {"target": {"route": {"name": "later"}}, "path": "/ping", "probe": {"interval": "1s"},
                 "slo": {"availability": "99"}},
    }))
    m = wait_monitor(kube, ns, "handmade", lambda m: condition(m, "TargetResolved").get("status") == "False",
                     "TargetResolved=False")
    assert condition(m, "TargetResolved")["reason"] == "RouteNotFound"
    assert "later" in condition(m, "TargetResolved")["message"]
    assert condition(m, "Ready")["status"] == "False"
    wait_for(lambda: warnings_for(kube, ns, "RouteMonitor", "handmade", "RouteNotFound"), timeout=10,
             what="a Warning event on the RouteMonitor")
    assert get(kube, PrometheusRule, names.prometheus_rule_name("handmade"), ns) is not None  # rules do not wait for the target
    kube.create(route(ns, "later", target.host))  # not annotated: only the hand-written monitor probes it
    m = wait_monitor(kube, ns, "handmade", lambda m: condition(m, "Ready").get("status") == "True", "Ready")
    assert m["status"]["url"] == f"http://{target.host}/ping"
    wait_for(lambda: target.count("/ping") >= 1, timeout=10, what="the target to be probed")
    assert get(kube, RouteMonitor, "later", ns) is None


def test_route_wins_over_a_service_of_the_same_name(kube: Client, operator: Operator, ns: str,
                                                    target: Target) -> None:
    kube.create(Service.from_dict({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "both", "namespace": ns, "annotations": annotations(slo="99")},
        "spec": {"ports": [{"name": "http", "port": 8080}]},
    }))
    wait_monitor(kube, ns, "both", lambda m: m["metadata"]["labels"].get(names.LABEL_GENERATED_FROM) == "service",
                 "a monitor generated from the Service")
    kube.create(route(ns, "both", target.host, annotations(slo="99.9")))
    m = wait_monitor(kube, ns, "both", lambda m: m["metadata"]["labels"].get(names.LABEL_GENERATED_FROM) == "route",
                     "the Route to take over the monitor")
    assert [o["kind"] for o in m["metadata"]["ownerReferences"]] == ["Route"]
    assert m["spec"]["slo"]["availability"] == "99.9"
    wait_for(lambda: warnings_for(kube, ns, "Service", "both", "RouteTakesPrecedence"), timeout=20,
             what="a Warning event on the Service")
    wait_for(lambda: target.count() >= 1, timeout=10, what="the Route's host to be probed")


@pytest.mark.parametrize(("spec_target", "host", "reason"), [
    pytest.param({"url": "http://127.0.0.1:9/"}, None, "URLTargetsNotAllowed", id="url-target-without-flag"),
    pytest.param({"route": {"name": "meta"}}, "169.254.169.254", "Forbidden", id="route-to-metadata-address"),
])
def test_unsafe_or_disallowed_targets_are_refused(kube: Client, operator: Operator, ns: str,
                                                  spec_target: dict[str, Any], host: str | None, reason: str) -> None:
    if host is not None:
        kube.create(route(ns, "meta", host))
    kube.create(RouteMonitor.from_dict({
        "apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": "refused", "namespace": ns},
        "spec": {"target": spec_target, "slo": {"availability": "99.9"}},
    }))
    m = wait_monitor(kube, ns, "refused", lambda m: condition(m, "TargetResolved").get("reason") == reason,
                     f"TargetResolved=False/{reason}")
    assert condition(m, "TargetResolved")["status"] == "False"
    assert condition(m, "Probing")["status"] == "False"
    assert "url" not in m["status"]


def test_status_is_written_on_transitions_not_per_probe(kube: Client, operator: Operator, ns: str,
                                                       target: Target) -> None:
    kube.create(route(ns, "quiet", target.host, annotations()))
    m = wait_monitor(kube, ns, "quiet", lambda m: (m["status"].get("lastProbe") or {}).get("result") == "success",
                     "the first probe result in status")
    version, hits = m["metadata"]["resourceVersion"], target.count()
    wait_for(lambda: target.count() >= hits + 4, timeout=10, what="four more probes")
    assert get(kube, RouteMonitor, "quiet", ns)["metadata"]["resourceVersion"] == version
    target.status = 503
    m = wait_monitor(kube, ns, "quiet", lambda m: (m["status"].get("lastProbe") or {}).get("result") == "failure",
                     "the failure to be written", timeout=30)
    assert m["status"]["lastProbe"]["reason"] == "http_status"
    assert condition(m, "Ready")["status"] == "True"  # the monitor works; the target is what fails


def test_generated_rule_is_valid_for_the_crd_and_promtool(kube: Client, operator: Operator, ns: str,
                                                         target: Target, tmp_path: Path) -> None:
    kube.create(route(ns, "checked", target.host,
                      annotations(slo="99.95", latency_threshold="250ms", latency_slo="99")))
    wait_for(lambda: get(kube, PrometheusRule, names.prometheus_rule_name("checked"), ns) is not None, timeout=20, what="the PrometheusRule")
    rule = get(kube, PrometheusRule, names.prometheus_rule_name("checked"), ns)
    assert rule is not None  # accepted by tests/crds/prometheusrule.yaml's schema, or it would not exist
    alerts = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r}
    assert names.ALERT_LATENCY_BUDGET_BURN in alerts
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(rule["spec"]))
    promtool = shutil.which("promtool")
    assert promtool, "promtool missing: run scripts/bootstrap.sh --system"
    out = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_metrics_readiness_and_liveness_endpoints(operator: Operator) -> None:
    """What deploy/base/deployment.yaml's probes and the ServiceMonitor use; /metrics lints clean."""
    assert httpx.get(f"http://127.0.0.1:{operator.metrics_port}/readyz", timeout=5).status_code == 200
    health = httpx.get(f"http://127.0.0.1:{operator.health_port}/healthz", timeout=5)
    assert health.status_code == 200 and "monitors" in health.json()
    promtool = shutil.which("promtool")
    assert promtool
    text = operator.metrics_text()
    assert names.MONITORS in text and names.KUBE_REQUESTS_TOTAL in text
    out = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_an_objective_whose_page_can_never_fire_is_reported_on_the_monitor(
        kube: Client, operator: Operator, ns: str, target: Target) -> None:
    # Contract 4: 90% can never page (14.4x a 10% budget is over 100%): reported, not silently accepted
    kube.create(route(ns, "lenient", target.host, annotations(slo="90")))
    m = wait_monitor(kube, ns, "lenient", lambda m: condition(m, "RulesApplied").get("reason") == "ObjectiveNotAlertable",
                     "RulesApplied=False/ObjectiveNotAlertable")
    rules = condition(m, "RulesApplied")
    assert rules["status"] == "False"
    assert names.ANN_SLO in rules["message"] and "never fire" in rules["message"]
    assert condition(m, "Ready")["status"] == "False"
    wait_for(lambda: warnings_for(kube, ns, "RouteMonitor", "lenient", "ObjectiveNotAlertable"), timeout=20,
             what="a Warning event on the RouteMonitor")
    assert get(kube, PrometheusRule, names.prometheus_rule_name("lenient"), ns) is not None, "the rules are still applied (tickets can fire)"
    hits = target.count()
    wait_for(lambda: target.count() > hits, timeout=10, what="probing to go on")
