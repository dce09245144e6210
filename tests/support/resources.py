"""The test cluster's admin client's view of the kinds route-monitor reads and writes (lightkube's
generic resources). The operator has its own client (route_monitor/kube/rest.py); lightkube is a
test-only dependency, for setting up and inspecting the cluster."""

from __future__ import annotations

from lightkube.generic_resource import create_namespaced_resource

from alert_rules import names

RouteMonitor = create_namespaced_resource(names.GROUP, names.VERSION, names.KIND, names.PLURAL)
PrometheusRule = create_namespaced_resource("monitoring.coreos.com", "v1", "PrometheusRule", "prometheusrules")
Route = create_namespaced_resource("route.openshift.io", "v1", "Route", "routes")
ServiceMonitor = create_namespaced_resource("monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors")
Prometheus = create_namespaced_resource("monitoring.coreos.com", "v1", "Prometheus", "prometheuses")
