"""Ingress and HTTPRoute as sources (Contract 7) in both paths that read the one table of sources:
the operator's planning (``operator/plan.py``, ``operator/world.py``) and the files
(``files/manifests.py``, ``files/fileplan.py`` behind ``check``/``rules``/``standalone``).

Covers: annotated Ingress/HTTPRoute -> generated RouteMonitor with ``spec.target.ingress`` /
``spec.target.httpRoute`` and the ``generated-from`` label; precedence Route > HTTPRoute >
Ingress > Service with a Warning naming the winner, the same in files; wildcard-only hosts or a
``routemonitor.io/host`` not among the hosts -> a Warning and no monitor; ``routemonitor.io/host``
refused on Routes and Services; a Gateway's change touches the monitors of the HTTPRoutes that
name it (and only those); the same objects in files resolve to the same URLs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from alert_rules import names
from route_monitor.files import fileplan, manifests
from route_monitor.operator import plan
from route_monitor.operator.world import World
from tests.unit.targets.test_resolve_http import gateway, httproute, ingress, listener, parent, rule

SLO = {names.ANN_SLO: "99.9"}


def named(obj: dict[str, Any], name: str = "web", ns: str = "ns", ann: dict[str, str] | None = None,
          kind: str = "") -> dict[str, Any]:
    meta = {**obj.get("metadata", {}), "name": name, "namespace": ns, "uid": f"uid-{kind or obj.get('kind')}-{name}"}
    if ann is not None:
        meta["annotations"] = ann
    return {**obj, "metadata": meta}


def world(*items: tuple[str, dict[str, Any]]) -> World:
    w = World()
    for kind, o in items:
        w.observe(kind, None, o)
    return w


ROUTE = {"apiVersion": "route.openshift.io/v1", "kind": "Route", "spec": {"host": "web.example.com"}}
SERVICE = {"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 80}]}}
ING = ingress(rule("web.example.com", ("/", "Prefix")))
HTTPROUTE = httproute(parent(), hostnames=("web.example.com",))


@pytest.mark.parametrize(("items", "generated_from", "target", "warnings"), [
    pytest.param([("ingress", named(ING, ann=SLO))], "ingress", {"ingress": {"name": "web"}}, [], id="ingress"),
    pytest.param([("httproute", named(HTTPROUTE, ann=SLO))], "httproute", {"httpRoute": {"name": "web"}}, [],
                 id="httproute"),
    pytest.param([("ingress", named(ING, ann={**SLO, names.ANN_HOST: "web.example.com"}))], "ingress",
                 {"ingress": {"name": "web", "host": "web.example.com"}}, [], id="ingress-with-host-annotation"),
    pytest.param([("route", named(ROUTE, ann=SLO)), ("httproute", named(HTTPROUTE, ann=SLO)),
                  ("ingress", named(ING, ann=SLO)), ("service", named(SERVICE, ann=SLO))], "route",
                 {"route": {"name": "web"}}, [("HTTPRoute", "RouteTakesPrecedence"), ("Ingress", "RouteTakesPrecedence"),
                                              ("Service", "RouteTakesPrecedence")], id="route-wins-over-all"),
    pytest.param([("httproute", named(HTTPROUTE, ann=SLO)), ("ingress", named(ING, ann=SLO))], "httproute",
                 {"httpRoute": {"name": "web"}}, [("Ingress", "HTTPRouteTakesPrecedence")],
                 id="httproute-wins-over-ingress"),
    pytest.param([("ingress", named(ING, ann=SLO)), ("service", named(SERVICE, ann=SLO))], "ingress",
                 {"ingress": {"name": "web"}}, [("Service", "IngressTakesPrecedence")], id="ingress-wins-over-service"),
])
def test_generated_from_ingress_and_httproute(items: list[tuple[str, dict[str, Any]]], generated_from: str,
                                              target: dict[str, Any], warnings: list[tuple[str, str]]) -> None:
    decision = plan.plan_generated(world(*items), ("ns", "web"))
    assert decision.action == "apply" and decision.manifest is not None
    assert decision.manifest["metadata"]["labels"] == {names.LABEL_GENERATED_FROM: generated_from}
    assert decision.manifest["spec"]["target"] == target
    [owner] = decision.manifest["metadata"]["ownerReferences"]
    assert owner["uid"].startswith("uid-") and owner["controller"] is True
    assert [(dict(w.involved)["kind"], w.reason) for w in decision.warnings] == warnings


@pytest.mark.parametrize(("kind", "obj", "ann", "reason", "says"), [
    pytest.param("ingress", ingress(rule("*.example.com")), {}, "NoUsableHost", "only wildcard hosts",
                 id="ingress-wildcard-only"),
    pytest.param("httproute", httproute(parent(), hostnames=("*.example.com",)), {}, "NoUsableHost",
                 "only wildcard hosts", id="httproute-wildcard-only"),
    pytest.param("ingress", ING, {names.ANN_HOST: "other.example.com"}, "HostNotFound",
                 "'other.example.com'", id="host-annotation-not-among-hosts"),
    pytest.param("route", ROUTE, {names.ANN_HOST: "web.example.com"}, "InvalidAnnotation",
                 "only applies to Ingresses, HTTPRoutes and GRPCRoutes", id="host-annotation-on-a-route"),
    pytest.param("ingress", ING, {names.ANN_PORT: "8080"}, "InvalidAnnotation", "only applies to Services",
                 id="port-annotation-on-an-ingress"),
])
def test_no_usable_host_is_a_warning_and_no_monitor(kind: str, obj: dict[str, Any], ann: dict[str, str],
                                                    reason: str, says: str) -> None:
    decision = plan.plan_generated(world((kind, named(obj, ann={**SLO, **ann}, kind=kind))), ("ns", "web"))
    assert decision.action == "none" and decision.manifest is None
    [warning] = decision.warnings
    assert (warning.reason, dict(warning.involved)["name"]) == (reason, "web")
    assert says in warning.message


def test_a_gateway_change_touches_the_monitors_of_the_httproutes_that_name_it() -> None:
    w = World()
    route = named(HTTPROUTE, ann=SLO, ns="infra")
    w.observe("httproute", None, route)
    w.observe("routemonitor", None, {"metadata": {"name": "custom", "namespace": "infra"},
                                     "spec": {"target": {"httpRoute": {"name": "web"}}}})
    unrelated = named(httproute(parent(name="other")), name="unrelated", ns="infra")
    unrelated["spec"]["parentRefs"] = [{"name": "other"}]
    w.observe("httproute", None, unrelated)
    gw = gateway(listener("http", "HTTP", 80))
    assert w.observe("gateway", None, gw) == {("infra", "web"), ("infra", "custom")}
    gw2 = gateway(listener("http", "HTTP", 8080))
    assert w.observe("gateway", "MODIFIED", gw2) == {("infra", "web"), ("infra", "custom")}
    assert w.observe("gateway", "MODIFIED", {**gw2, "status": {"listeners": []}}) == set()  # status unread
    assert w.observe("gateway", None, gateway(name="else")) == set()


def test_an_httproute_status_change_is_followed() -> None:
    w = world(("httproute", named(httproute(), ann=SLO)))
    assert w.observe("httproute", "MODIFIED", named(httproute(parent()), ann=SLO)) == {("ns", "web")}


def test_files_hold_ingresses_httproutes_and_gateways(tmp_path: Path) -> None:
    route = named(HTTPROUTE, name="api", ns="infra", ann={**SLO, names.ANN_PATH: "/healthz"})
    del route["status"]  # as written: the parentRefs are taken as they are
    docs = [named(ING, name="shop", ns="infra", ann=SLO), route, gateway(listener("web", "HTTPS", 8443)),
            named(ingress(rule("*.example.com")), name="wild", ns="infra", ann=SLO),
            named(ING, name="both", ns="infra", ann=SLO), named(SERVICE, name="both", ns="infra", ann=SLO)]
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all(docs))
    planned = fileplan.plan([tmp_path])
    assert {k: p.target.url for k, p in planned.monitors.items()} == {
        ("infra", "shop"): "http://web.example.com/", ("infra", "api"): "https://web.example.com:8443/healthz",
        ("infra", "both"): "http://web.example.com/"}
    problems = [str(p) for p in planned.problems]
    assert any("Ingress/infra/wild: spec.rules[].host: NoUsableHost" in p and "error" in p for p in problems)
    assert any("warning: Service/infra/both: an Ingress of the same name is also annotated: the Ingress is "
               "monitored, this Service is not" in p for p in problems)
    assert ("infra", "wild") in planned.failed


def test_check_and_rules_read_the_same_monitors(tmp_path: Path) -> None:
    (tmp_path / "i.yaml").write_text(yaml.safe_dump(named(ING, name="shop", ns="infra", ann=SLO)))
    docs, problems = manifests.load([tmp_path])
    found = manifests.collect(docs)
    assert not problems and not found.problems
    assert [(m.name, m.target.kind) for m in found.monitors] == [("shop", "ingress")]


def test_a_deleted_httproute_no_longer_ties_its_gateway_to_a_monitor() -> None:
    w = World()
    route = named(HTTPROUTE, ann=SLO, ns="infra")
    w.observe("httproute", None, route)
    assert w.observe("httproute", "DELETED", route) == {("infra", "web")}
    assert w.observe("gateway", None, gateway(listener("http", "HTTP", 80))) == set()


def test_annotated_ingresses_and_httproutes_count_for_ownership_among_replicas() -> None:
    w = world(("ingress", named(ING, name="a", ann=SLO)), ("httproute", named(HTTPROUTE, name="b", ann=SLO)),
              ("ingress", named(ING, name="c")))
    assert w.opted_in_keys() == {("ns", "a"), ("ns", "b")}
