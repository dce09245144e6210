"""Ingress and HTTPRoute targets (Contract 7) through a real control plane with the upstream
Gateway API CRDs, the operator running as the user bound only to ``deploy/clusterrole.yaml``.

Covers:
- an annotated HTTPRoute -> RouteMonitor owned by it (``generated-from: httproute``), a
  PrometheusRule ``route-monitor-<name>`` owned by the monitor, probes on the URL made of its
  hostname, the accepted parent Gateway listener's scheme and port, and its first path; before a
  gateway controller accepts it: ``TargetResolved=False``/``NoAcceptedParent`` and a Warning;
- the Gateway's listener port changes, the route's path changes -> the probes follow; the
  parentRef's section names no listener -> ``ListenerNotFound``;
- an annotated Ingress -> owned RouteMonitor and rule, the URL from its host, tls and path, and
  a host or path change is followed;
- wildcard-only hosts, ``routemonitor.io/host`` not among the hosts -> a Warning event on the
  object, no monitor; an HTTPRoute and an Ingress of one name -> the HTTPRoute wins, a Warning
  on the Ingress.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest
from lightkube import Client
from lightkube.resources.networking_v1 import Ingress
from lightkube.types import PatchType

from alert_rules import names
from tests.support.gateway import Gateway, HTTPRoute, gateway, httproute, ingress, set_parent_status
from tests.support.net import wait_for
from tests.support.operator import (
    Operator,
    Target,
    annotations,
    condition,
    get,
    wait_monitor,
    warnings_for,
)
from tests.support.resources import PrometheusRule, RouteMonitor

pytestmark = pytest.mark.cluster


def resolved(reason: str) -> Callable[[dict[str, Any]], bool]:
    return lambda m: condition(m, "TargetResolved").get("reason") == reason


def owner_kinds(obj: dict[str, object]) -> list[tuple[object, object, object]]:
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    return [(o["kind"], o["name"], o.get("controller")) for o in meta["ownerReferences"]]


def test_annotated_httproute_is_monitored_through_its_accepted_gateway_listener(
        kube: Client, operator: Operator, ns: str, target: Target) -> None:
    kube.create(gateway(ns, "edge", ("web", "HTTP", target.port), ("secure", "HTTPS", 8443)))
    kube.create(httproute(ns, "shop", ["*.example.com", "localhost"], "/healthz", annotations()))

    # no gateway controller has accepted it yet: monitor and rule exist, nothing is probed
    waiting = wait_monitor(kube, ns, "shop", resolved("NoAcceptedParent"), "TargetResolved=False/NoAcceptedParent")
    assert waiting["metadata"]["labels"][names.LABEL_GENERATED_FROM] == "httproute"
    assert owner_kinds(waiting) == [("HTTPRoute", "shop", True)]
    assert condition(waiting, "Ready")["status"] == "False"
    wait_for(lambda: warnings_for(kube, ns, "RouteMonitor", "shop", "NoAcceptedParent"), timeout=10,
             what="a NoAcceptedParent Warning on the RouteMonitor")
    assert target.count() == 0

    set_parent_status(kube, ns, "shop")
    url = f"http://localhost:{target.port}/healthz"
    monitor = wait_monitor(kube, ns, "shop", lambda m: condition(m, "Ready").get("status") == "True", "Ready")
    assert monitor["status"]["url"] == url
    rule = get(kube, PrometheusRule, names.prometheus_rule_name("shop"), ns)
    assert rule is not None and owner_kinds(rule) == [("RouteMonitor", "shop", True)]
    wait_for(lambda: target.count("/healthz") >= 2, timeout=10, what="probes on the listener's port")
    assert operator.sample(names.TARGET_INFO, namespace=ns, monitor="shop", kind="httproute",
                           url=url) == 1


def test_listener_port_and_path_changes_are_followed(kube: Client, operator: Operator, ns: str,
                                                     target: Target) -> None:
    second = Target()
    try:
        kube.create(gateway(ns, "edge", ("web", "HTTP", target.port)))
        kube.create(httproute(ns, "shop", ["localhost"], "/a", annotations()))
        set_parent_status(kube, ns, "shop")
        wait_for(lambda: target.count("/a") >= 1, timeout=20, what="probes on the first listener port")

        kube.patch(Gateway, "edge", {"spec": {"listeners": [{"name": "web", "protocol": "HTTP",
                                                             "port": second.port}]}},
                   namespace=ns, patch_type=PatchType.MERGE)
        wait_monitor(kube, ns, "shop", lambda m: m["status"].get("url") == f"http://localhost:{second.port}/a",
                     "the URL to follow the listener's port")
        wait_for(lambda: second.count("/a") >= 1, timeout=10, what="probes on the new listener port")

        kube.patch(HTTPRoute, "shop", {"spec": {"rules": [{"matches": [{"path": {"type": "Exact", "value": "/b"}}],
                                                           "backendRefs": [{"name": "shop", "port": 8080}]}]}},
                   namespace=ns, patch_type=PatchType.MERGE)
        wait_for(lambda: second.count("/b") >= 1, timeout=20, what="probes on the route's new path")

        set_parent_status(kube, ns, "shop", section="nope")  # the controller now reports another section
        m = wait_monitor(kube, ns, "shop", resolved("ListenerNotFound"), "TargetResolved=False/ListenerNotFound")
        assert "sectionName 'nope'" in condition(m, "TargetResolved")["message"]
        wait_for(lambda: warnings_for(kube, ns, "RouteMonitor", "shop", "ListenerNotFound"), timeout=10,
                 what="a ListenerNotFound Warning")
    finally:
        second.close()


def _bind_port_80() -> Target | None:
    """An Ingress is probed on the scheme's default port: a Target on 127.0.0.1:80 if allowed."""
    probe = socket.socket()
    try:
        probe.bind(("127.0.0.1", 80))
    except OSError:
        return None
    finally:
        probe.close()
    return Target(port=80)


def test_annotated_ingress_is_monitored_and_host_and_path_changes_are_followed(
        kube: Client, operator: Operator, ns: str) -> None:
    web = _bind_port_80()
    if web is None:
        pytest.skip("an Ingress is probed on port 80: binding 127.0.0.1:80 is not allowed here")
    try:
        created = kube.create(ingress(ns, "shop", [("*.example.com", "/"), ("localhost", "/healthz")],
                                      annotations()))
        monitor = wait_monitor(kube, ns, "shop", lambda m: condition(m, "Ready").get("status") == "True", "Ready")
        assert monitor["metadata"]["labels"][names.LABEL_GENERATED_FROM] == "ingress"
        assert [o["uid"] for o in monitor["metadata"]["ownerReferences"]] == [created.metadata.uid]
        assert monitor["status"]["url"] == "http://localhost/healthz"
        assert get(kube, PrometheusRule, names.prometheus_rule_name("shop"), ns) is not None
        wait_for(lambda: web.count("/healthz") >= 2, timeout=10, what="probes on the Ingress's host and path")

        kube.patch(Ingress, "shop", {"spec": {"rules": [
            {"host": "localhost", "http": {"paths": [{"path": "/ready", "pathType": "Exact", "backend": {
                "service": {"name": "shop", "port": {"number": 80}}}}]}}]}}, namespace=ns, patch_type=PatchType.MERGE)
        wait_for(lambda: web.count("/ready") >= 1, timeout=20, what="probes on the new path")

        kube.patch(Ingress, "shop", {"spec": {"tls": [{"hosts": ["shop.localhost"]}], "rules": [
            {"host": "shop.localhost", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {
                "service": {"name": "shop", "port": {"number": 80}}}}]}}]}}, namespace=ns, patch_type=PatchType.MERGE)
        wait_monitor(kube, ns, "shop", lambda m: m["status"].get("url") == "https://shop.localhost/",
                     "the URL to follow the new host (https: spec.tls lists it)")
    finally:
        web.close()


@pytest.mark.parametrize(("rules", "extra", "reason", "says"), [
    pytest.param([("*.example.com", "/")], {}, "NoUsableHost", "only wildcard hosts", id="wildcard-only"),
    pytest.param([("shop.example.com", "/")], {"host": "other.example.com"}, "HostNotFound",
                 "'other.example.com'", id="host-annotation-not-among-hosts"),
])
def test_ingress_without_a_usable_host_gets_a_warning_and_no_monitor(
        kube: Client, operator: Operator, ns: str, rules: list[tuple[str, str]], extra: dict[str, str],
        reason: str, says: str) -> None:
    kube.create(ingress(ns, "shop", rules, annotations(**extra)))
    wait_for(lambda: warnings_for(kube, ns, "Ingress", "shop", reason), timeout=20, what=f"a {reason} Warning")
    [message] = warnings_for(kube, ns, "Ingress", "shop", reason)
    assert says in message and "Ingress" in message
    assert get(kube, RouteMonitor, "shop", ns) is None


def test_httproute_wins_over_an_ingress_of_the_same_name(kube: Client, operator: Operator, ns: str,
                                                         target: Target) -> None:
    kube.create(ingress(ns, "both", [("shop.example.com", "/")], annotations()))
    wait_monitor(kube, ns, "both", lambda m: m["metadata"]["labels"].get(names.LABEL_GENERATED_FROM) == "ingress",
                 "the Ingress's monitor")
    kube.create(gateway(ns, "edge", ("web", "HTTP", target.port)))
    kube.create(httproute(ns, "both", ["localhost"], "/", annotations()))
    set_parent_status(kube, ns, "both")
    m = wait_monitor(kube, ns, "both", lambda m: m["metadata"]["labels"].get(names.LABEL_GENERATED_FROM) == "httproute"
                     and condition(m, "Ready").get("status") == "True", "the HTTPRoute's monitor instead")
    assert owner_kinds(m) == [("HTTPRoute", "both", True)]
    wait_for(lambda: warnings_for(kube, ns, "Ingress", "both", "HTTPRouteTakesPrecedence"), timeout=10,
             what="a HTTPRouteTakesPrecedence Warning on the Ingress")
