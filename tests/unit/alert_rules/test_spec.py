"""Parsing at the boundary: RouteMonitor manifests and Contract 1 annotations.

Covers: defaults, every validation error naming its field (or annotation), the Route-wins
rule and per-object isolation of errors when reading files.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from alert_rules.model import InvalidSpec
from route_monitor.files.manifests import Manifest, collect
from route_monitor.spec.monitor import parse_routemonitor
from route_monitor.targets.annotations import monitor_manifest


def rm(spec: dict, name: str = "checkout") -> dict:
    return {"apiVersion": "routemonitor.io/v1alpha1", "kind": "RouteMonitor",
            "metadata": {"name": name, "namespace": "shop"}, "spec": spec}


def test_defaults() -> None:
    m = parse_routemonitor(rm({"target": {"url": "https://x.example"}, "slo": {"availability": "99.9"}}))
    assert m.probe.interval_ms == 30_000 and m.probe.timeout_ms == 10_000
    assert m.probe.status_ok(200) and m.probe.status_ok(399) and not m.probe.status_ok(404)
    assert m.objective.error_budget == Decimal("0.001")
    assert m.objective.period_ms == 30 * 86_400_000
    assert m.alerting.page and m.alerting.ticket


@pytest.mark.parametrize(("spec", "field"), [
    pytest.param({"target": {}, "slo": {"availability": "99"}}, "spec.target", id="no-target"),
    pytest.param({"target": {"url": "x", "route": {"name": "a"}}, "slo": {"availability": "99"}}, "spec.target", id="two-targets"),
    pytest.param({"target": {"url": "ftp://x"}, "slo": {"availability": "99"}}, "spec.target.url", id="not-http"),
    pytest.param({"target": {"url": "http://x"}, "slo": {"availability": "100"}}, "spec.slo.availability", id="slo-100"),
    pytest.param({"target": {"url": "http://x"}, "slo": {"availability": "abc"}}, "spec.slo.availability", id="slo-text"),
    pytest.param({"target": {"url": "http://x"}, "slo": {}}, "spec.slo.availability", id="slo-missing"),
    pytest.param({"target": {"url": "http://x"}, "slo": {"availability": "99"}, "probe": {"interval": "5s", "timeout": "5s"}},
                 "spec.probe.timeout", id="timeout-not-below-interval"),
    pytest.param({"target": {"url": "http://x"}, "slo": {"availability": "99"}, "probe": {"expectedStatus": ["2xy"]}},
                 "spec.probe.expectedStatus[0]", id="bad-status"),
    pytest.param({"target": {"url": "http://x"}, "slo": {"availability": "99"}, "probe": {"bodyRegex": "("}},
                 "spec.probe.bodyRegex", id="bad-regex"),
    pytest.param({"target": {"url": "http://x"}, "slo": {"availability": "99", "latency": {"threshold": "1s"}}},
                 "spec.slo.latency.objective", id="latency-half"),
])
def test_invalid_spec_names_the_field(spec: dict, field: str) -> None:
    with pytest.raises(InvalidSpec) as e:
        parse_routemonitor(rm(spec))
    assert e.value.field == field


@pytest.mark.parametrize(("annotations", "annotation"), [
    pytest.param({"routemonitor.io/slo": "99.99.9"}, "routemonitor.io/slo", id="slo-garbage"),
    pytest.param({"routemonitor.io/slo": "0"}, "routemonitor.io/slo", id="slo-zero"),
    pytest.param({"routemonitor.io/slo": "99", "routemonitor.io/interval": "soon"}, "routemonitor.io/interval", id="interval"),
    pytest.param({"routemonitor.io/slo": "99", "routemonitor.io/path": "healthz"}, "routemonitor.io/path", id="relative-path"),
    pytest.param({"routemonitor.io/slo": "99", "routemonitor.io/latency-threshold": "300ms"},
                 "routemonitor.io/latency-slo", id="latency-needs-both"),
])
def test_bad_annotation_names_the_annotation(annotations: dict, annotation: str) -> None:
    route = {"kind": "Route", "metadata": {"name": "web", "namespace": "shop", "annotations": annotations}}
    with pytest.raises(InvalidSpec) as e:
        monitor_manifest(route, "route")
    assert e.value.field == f"metadata.annotations[{annotation}]"
    assert annotation in str(e.value)


def test_route_wins_over_service_and_errors_stay_local() -> None:
    ann = {"routemonitor.io/slo": "99.5"}
    objs = [
        {"kind": "Service", "metadata": {"name": "web", "namespace": "shop", "annotations": ann}, "spec": {"ports": [{"port": 80}]}},
        {"kind": "Route", "metadata": {"name": "web", "namespace": "shop", "annotations": ann}, "spec": {"host": "web.example"}},
        {"kind": "Route", "metadata": {"name": "bad", "namespace": "shop", "annotations": {"routemonitor.io/slo": "x"}}, "spec": {"host": "b"}},
    ]
    c = collect(Manifest(f"f.yaml#{i}", o) for i, o in enumerate(objs))
    assert [(m.name, m.target.kind) for m in c.monitors] == [("web", "route")]
    assert any(p.warning and "Route of the same name" in p.message for p in c.problems)
    [err] = c.errors
    assert (err.source, err.ref) == ("f.yaml", "Route/shop/bad") and "routemonitor.io/slo" in str(err)
