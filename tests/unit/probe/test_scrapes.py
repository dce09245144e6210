"""The per-namespace scrape objects (pure) and ``/metrics?namespace=NS`` (issue 12).

Covers: the operator's endpoints are the ready addresses and the ``metrics`` port of its metrics
Service's EndpointSlices (none ready: nothing to point at); the four objects of a namespace
(headless selectorless Service, its v1 Endpoints kept out of slice mirroring, EndpointSlice of
the detected version managed by route-monitor, ServiceMonitor asking for that namespace with
``honorLabels`` left off); an object is up to date
when it says everything desired, whatever the API server added; a namespace's page holds only
its own probe series and passes ``promtool check metrics``; the OpenShift user-workload overlay's
central ServiceMonitor drops exactly the per-monitor families.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from alert_rules import names
from alert_rules.shared import shared_rule_groups
from route_monitor.operator.outputs import scrapes
from route_monitor.probe.metrics import ProbeMetrics, TargetInfo
from route_monitor.probe.result import FailureReason, ProbeResult
from tests.support.cluster import ROOT

UWM = ROOT / "deploy" / "overlays" / "openshift-user-workload"


def slice_(addresses: list[tuple[str, bool]], port: int = 8080, port_name: str = "metrics") -> dict[str, object]:
    return {"addressType": "IPv4", "ports": [{"name": port_name, "port": port}],
            "endpoints": [{"addresses": [a], "conditions": {"ready": ready}} for a, ready in addresses]}


@pytest.mark.parametrize(("slices", "expected"), [
    pytest.param([slice_([("10.0.0.2", True), ("10.0.0.1", True)])],
                 scrapes.OperatorEndpoints(("10.0.0.1", "10.0.0.2"), 8080), id="two-ready-replicas"),
    pytest.param([slice_([("10.0.0.1", True)]), slice_([("10.0.0.3", False), ("10.0.0.2", True)])],
                 scrapes.OperatorEndpoints(("10.0.0.1", "10.0.0.2"), 8080), id="not-ready-left-out-across-slices"),
    pytest.param([slice_([("10.0.0.1", False)])], None, id="none-ready"),
    pytest.param([slice_([("10.0.0.1", True)], port_name="health")], None, id="no-metrics-port"),
    pytest.param([], None, id="no-slices"),
])
def test_operator_endpoints_are_the_ready_replicas(slices: list[dict[str, object]],
                                                   expected: scrapes.OperatorEndpoints | None) -> None:
    assert scrapes.operator_endpoints(slices) == expected


def test_the_objects_of_a_namespace() -> None:
    rule, service, ep, es, sm = scrapes.objects("shop", scrapes.OperatorEndpoints(("10.0.0.1", "10.0.0.2"), 8080),
                                                slice_version="v1beta1", rule_labels={"release": "x"})
    # the shared SLI groups the namespace's monitors' alerts read, labelled like the monitors' rules
    assert rule["kind"] == "PrometheusRule" and rule["metadata"]["name"] == names.SHARED_RULE_NAME
    assert rule["metadata"]["namespace"] == "shop" and rule["metadata"]["labels"]["release"] == "x"
    assert rule["metadata"]["labels"][names.LABEL_MANAGED_BY] == names.MANAGED_BY
    assert rule["spec"]["groups"] == shared_rule_groups()
    assert not any(names.prometheus_rule_name(m) == names.SHARED_RULE_NAME for m in ("slis", ".slis", "x" * 80))
    for obj in (service, ep, es, sm):
        assert obj["metadata"]["name"] == names.SCRAPE_OBJECT_NAME and obj["metadata"]["namespace"] == "shop"
        assert obj["metadata"]["labels"][names.LABEL_MANAGED_BY] == names.MANAGED_BY
    assert "selector" not in service["spec"] and service["spec"]["clusterIP"] == "None"
    # the Endpoints (the `endpoints` discovery role) list the same replicas and port as the slice,
    # and keep Kubernetes' mirroring controller from copying them into a second slice
    assert ep["apiVersion"] == "v1" and ep["kind"] == "Endpoints"
    assert ep["subsets"] == [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                              "ports": [{"name": "metrics", "port": 8080, "protocol": "TCP"}]}]
    assert ep["metadata"]["labels"][names.LABEL_SKIP_MIRROR] == "true"
    assert [a for e in es["endpoints"] for a in e["addresses"]] == ["10.0.0.1", "10.0.0.2"]
    assert es["apiVersion"] == "discovery.k8s.io/v1beta1"
    assert es["metadata"]["labels"][names.LABEL_SERVICE_NAME] == service["metadata"]["name"]
    assert es["metadata"]["labels"][names.LABEL_ENDPOINTSLICE_MANAGED_BY] == names.ENDPOINTSLICE_MANAGER
    assert es["ports"] == [{"name": "metrics", "port": 8080, "protocol": "TCP"}]
    [endpoint] = sm["spec"]["endpoints"]
    assert endpoint["params"] == {"namespace": ["shop"]} and "honorLabels" not in endpoint
    assert sm["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()


def test_up_to_date_ignores_what_the_api_server_adds() -> None:
    desired = scrapes.service("shop", scrapes.OperatorEndpoints(("10.0.0.1",), 8080))
    stored = {**desired, "metadata": {**desired["metadata"], "uid": "u", "resourceVersion": "7",
                                      "labels": {**desired["metadata"]["labels"], "team": "x"}},
              "spec": {**desired["spec"], "type": "ClusterIP", "clusterIPs": ["None"], "sessionAffinity": "None"}}
    assert scrapes.up_to_date(stored, desired)
    moved = scrapes.service("shop", scrapes.OperatorEndpoints(("10.0.0.1",), 9090))
    assert not scrapes.up_to_date(stored, moved)


def metrics_with_two_namespaces() -> ProbeMetrics:
    m = ProbeMetrics(CollectorRegistry())
    for ns in ("shop", "billing"):
        series = m.add((ns, "checkout"), TargetInfo(f"https://{ns}.example.com/", "route", "checkout"), 0.5)
        series.record(ProbeResult(key=(ns, "checkout"), url="u", timestamp=0.0, success=False,
                                  reason=FailureReason.HTTP_STATUS, duration_seconds=0.1, status_code=500, detail="500"))
    return m


def test_a_namespace_page_holds_only_that_namespace() -> None:
    page = metrics_with_two_namespaces().exposition_of("shop").decode()
    families = list(text_string_to_metric_families(page))
    assert {s.labels.get("namespace") for f in families for s in f.samples} == {"shop"}
    assert not any(f.name.startswith(("route_monitor_probes_in_flight", "route_monitor_schedule")) for f in families)
    assert metrics_with_two_namespaces().exposition_of("nothing-here").decode().count("route_monitor_probes_total{") == 0


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_a_namespace_page_passes_promtool() -> None:
    done = subprocess.run(["promtool", "check", "metrics"], input=metrics_with_two_namespaces().exposition_of("shop"),
                          capture_output=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_central_servicemonitor_of_the_user_workload_overlay_drops_exactly_the_probe_families() -> None:
    patch = yaml.safe_load((UWM / "servicemonitor-health-only.yaml").read_text())
    [relabel] = patch["spec"]["endpoints"][0]["metricRelabelings"]
    drop = re.compile(relabel["regex"])
    m = metrics_with_two_namespaces()
    per_monitor = {s.name for f in text_string_to_metric_families(m.exposition_of("shop").decode()) for s in f.samples}
    everything = {s.name for f in text_string_to_metric_families(m.exposition().decode()) for s in f.samples}
    assert all(drop.fullmatch(n) for n in per_monitor), per_monitor
    assert not any(drop.fullmatch(n) for n in everything - per_monitor), everything - per_monitor
