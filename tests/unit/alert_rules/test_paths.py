"""Paths (Contract 11): which shared components a monitor's target sits behind.

Covers the pure derivation (``route_monitor.spec.paths``): a Route's admitting router shards, an
Ingress's class (its own, the legacy annotation, the cluster default; from the files for
``check``), an HTTPRoute's accepting
Gateways, ``dns:cluster`` for host names but not IP addresses; declared paths from ``spec.paths``
and ``routemonitor.io/paths`` (on a RouteMonitor or an annotated Route), every bad one reported at
once; resolution through the sources table adds them to the resolved target; the probe engine's
exposition carries one ``route_monitor_monitor_path_info`` per path, and a path change leaves the
SLI counters as they were.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from alert_rules import names
from alert_rules.model import InvalidSpec
from route_monitor.probe.metrics import ProbeMetrics, TargetInfo
from route_monitor.probe.result import FailureReason, ProbeResult
from route_monitor.spec import paths
from route_monitor.spec.monitor import parse_routemonitor
from route_monitor.targets import sources
from route_monitor.targets.annotations import monitor_spec


def route(*ingress: tuple[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "shop", "namespace": "ns"}, "spec": {"host": "shop.apps.example.com"},
            "status": {"ingress": [{"host": "shop.apps.example.com", "routerName": r,
                                    "conditions": [{"type": "Admitted", "status": s}]} for r, s in ingress]}}


@pytest.mark.parametrize(("obj", "want"), [
    pytest.param(route(("default", "True")), ["router:default"], id="admitted-by-one-shard"),
    pytest.param(route(("default", "True"), ("internal", "True")), ["router:default", "router:internal"],
                 id="admitted-by-two-shards"),
    pytest.param(route(("default", "False"), ("sharded", "True")), ["router:sharded"], id="rejected-shard-left-out"),
    pytest.param(route(), [], id="not-admitted-yet"),
    pytest.param(route(("Bad Name!", "True")), [], id="odd-router-name-is-no-path"),
])
def test_route_paths(obj: dict[str, Any], want: list[str]) -> None:
    assert paths.route_paths(obj) == want


def ingress(cls: str | None = None, legacy: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web", "namespace": "ns"}
    if legacy:
        meta["annotations"] = {paths.LEGACY_INGRESS_CLASS: legacy}
    return {"metadata": meta, "spec": {"ingressClassName": cls} if cls else {}}


@pytest.mark.parametrize(("obj", "default", "want"), [
    pytest.param(ingress("nginx"), "haproxy", ["ingressclass:nginx"], id="own-class-wins"),
    pytest.param(ingress(legacy="traefik"), "haproxy", ["ingressclass:traefik"], id="legacy-annotation-before-default"),
    pytest.param(ingress(), "haproxy", ["ingressclass:haproxy"], id="cluster-default-last"),
    pytest.param(ingress(legacy="traefik"), None, ["ingressclass:traefik"], id="legacy-annotation"),
    pytest.param(ingress(), None, [], id="no-class-at-all"),
])
def test_ingress_paths(obj: dict[str, Any], default: str | None, want: list[str]) -> None:
    assert paths.ingress_paths(obj, default) == want


def test_default_ingress_class_is_the_annotated_one() -> None:
    classes = [{"metadata": {"name": "b"}},
               {"metadata": {"name": "a", "annotations": {paths.DEFAULT_CLASS_ANNOTATION: "true"}}}]
    assert paths.default_ingress_class(classes) == "a"
    assert paths.default_ingress_class(classes[:1]) is None


def test_httproute_paths_are_the_accepting_gateways() -> None:
    obj = {"metadata": {"name": "r", "namespace": "app"}, "status": {"parents": [
        {"parentRef": {"name": "edge", "namespace": "infra"}, "conditions": [{"type": "Accepted", "status": "True"}]},
        {"parentRef": {"name": "local"}, "conditions": [{"type": "Accepted", "status": "True"}]},
        {"parentRef": {"name": "refused"}, "conditions": [{"type": "Accepted", "status": "False"}]},
        {"parentRef": {"name": "svc", "kind": "Service", "group": ""},
         "conditions": [{"type": "Accepted", "status": "True"}]},
    ]}}
    assert paths.httproute_paths(obj) == ["gateway:infra/edge", "gateway:app/local"]


@pytest.mark.parametrize(("url", "want"), [
    pytest.param("https://shop.example.com/", [paths.DNS_CLUSTER], id="host-name"),
    pytest.param("http://127.0.0.1:8080/", [], id="ipv4"),
    pytest.param("http://[::1]:8080/", [], id="ipv6"),
])
def test_dns_path_for_host_names_only(url: str, want: list[str]) -> None:
    assert paths.url_paths(url) == want


def monitor(spec_paths: object = None, annotation: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "m", "namespace": "ns"}
    if annotation is not None:
        meta["annotations"] = {names.ANN_PATHS: annotation}
    spec: dict[str, Any] = {"target": {"url": "http://127.0.0.1:8080/"}, "slo": {"availability": "99.9"}}
    if spec_paths is not None:
        spec["paths"] = spec_paths
    return {"apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": meta, "spec": spec}


def test_declared_paths_from_the_spec_and_the_annotation_are_merged_sorted() -> None:
    spec = parse_routemonitor(monitor(["lb:edge-1", "cdn:fastly"], "cdn:fastly, dns:route53"))
    assert spec.paths == ("cdn:fastly", "dns:route53", "lb:edge-1")


def test_every_bad_declared_path_is_reported_at_once() -> None:
    with pytest.raises(InvalidSpec) as e:
        parse_routemonitor(monitor(["ok:one", "Bad:Upper", 7], "fine:x,-dash, "))
    fields = [f.field for f in e.value.errors]
    assert fields == ["spec.paths[1]", "spec.paths[2]", f"metadata.annotations[{names.ANN_PATHS}]"]
    assert "cdn:fastly" in e.value.errors[0].reason
    with pytest.raises(InvalidSpec, match=r"spec\.paths"):
        parse_routemonitor(monitor("cdn:fastly"))


def test_annotation_on_a_route_becomes_declared_paths_and_errors_name_the_annotation() -> None:
    obj = route(("default", "True"))
    obj["metadata"]["annotations"] = {names.ANN_SLO: "99.9", names.ANN_PATHS: "cdn:akamai,lb:f5"}
    assert monitor_spec(obj, "route").paths == ("cdn:akamai", "lb:f5")
    obj["metadata"]["annotations"][names.ANN_PATHS] = "cdn:akamai,NOPE"
    with pytest.raises(InvalidSpec) as e:
        monitor_spec(obj, "route")
    assert [f.field for f in e.value.errors] == [f"metadata.annotations[{names.ANN_PATHS}]"]


def test_resolution_adds_derived_and_declared_paths() -> None:
    obj = route(("default", "True"))
    ctx = sources.Context(lookup=lambda kind, key: obj if kind == "route" else None)
    spec = parse_routemonitor({**monitor(["cdn:fastly"]), "spec": {"target": {"route": {"name": "shop"}},
                                                                  "slo": {"availability": "99.9"},
                                                                  "paths": ["cdn:fastly"]}})
    resolved = sources.resolve_target(spec.target, "ns", None, ctx, spec.paths)
    assert resolved.paths == ("cdn:fastly", "dns:cluster", "router:default")


def test_check_reads_the_default_ingress_class_from_the_files(tmp_path: Path) -> None:
    """An IngressClass marked default among the manifests is the class of an Ingress naming none."""
    (tmp_path / "web.yaml").write_text(textwrap.dedent("""\
        apiVersion: networking.k8s.io/v1
        kind: IngressClass
        metadata: {name: nginx, annotations: {ingressclass.kubernetes.io/is-default-class: "true"}}
        spec: {controller: example.net/nginx}
        ---
        apiVersion: networking.k8s.io/v1
        kind: Ingress
        metadata: {name: shop, namespace: web, annotations: {routemonitor.io/slo: "99.9"}}
        spec:
          rules:
          - host: shop.example.com
            http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: shop, port: {number: 80}}}}]}
        """))
    run = subprocess.run([sys.executable, "-m", "route_monitor.cli.main", "check", str(tmp_path / "web.yaml")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "  paths: dns:cluster, ingressclass:nginx\n" in run.stdout, run.stdout


def exposition(metrics: ProbeMetrics) -> list[str]:
    return [line for line in metrics.exposition().decode().splitlines()
            if line.startswith((names.MONITOR_PATH_INFO, names.PROBES_TOTAL))]


def test_path_info_series_follow_the_paths_and_leave_the_counters_alone() -> None:
    metrics = ProbeMetrics(CollectorRegistry())
    key = ("ns", "m")
    series = metrics.add(key, TargetInfo("https://shop/", "route", "shop", ("dns:cluster", "router:a")), None)
    series.record(ProbeResult(key, "https://shop/", 0.0, False, FailureReason.CONNECTION_REFUSED, 0.1, None, "x"))
    assert 'route_monitor_monitor_path_info{namespace="ns",monitor="m",path="router:a"} 1.0' in exposition(metrics)
    metrics.add(key, TargetInfo("https://shop/", "route", "shop", ("dns:cluster", "router:b")), None)
    lines = exposition(metrics)
    assert 'route_monitor_monitor_path_info{namespace="ns",monitor="m",path="router:b"} 1.0' in lines
    assert not any('path="router:a"' in line for line in lines)
    assert 'route_monitor_probes_total{namespace="ns",monitor="m",result="failure"} 1.0' in lines

def test_client_python_rendering_agrees() -> None:
    registry = CollectorRegistry()
    ProbeMetrics(registry).add(("ns", "m"), TargetInfo("https://shop/", "route", "shop", ("router:b",)), None)
    labels = {"namespace": "ns", "monitor": "m", "path": "router:b"}
    assert registry.get_sample_value(names.MONITOR_PATH_INFO, labels) == 1
