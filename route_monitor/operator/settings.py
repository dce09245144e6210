"""Settings of the operator, from the command line; keyword-only, frozen, one docstring each."""

from __future__ import annotations

from dataclasses import dataclass, field

from alert_rules.model import RuleDefaults
from route_monitor.probe.canary import CanarySettings
from route_monitor.slo.promapi import PromSettings


@dataclass(frozen=True, kw_only=True)
class OperatorSettings:
    namespaces: tuple[str, ...] = ()
    """Watch only these namespaces; empty means all namespaces (cluster-wide)."""
    allow_url_targets: bool = False
    """Probe RouteMonitors whose target is a plain URL (``--allow-url-targets``); off by default."""
    cluster_domain: str = "cluster.local"
    """DNS domain of Service targets: ``NAME.NAMESPACE.svc.DOMAIN``."""
    metrics_address: tuple[str, int] = ("0.0.0.0", 8080)
    """Host and port of ``/metrics`` and ``/readyz`` (``--metrics-address``)."""
    health_port: int = 8081
    """Port of kopf's liveness endpoint ``/healthz``."""
    max_concurrency: int = 500
    """Probes in flight at most."""
    workers: int = 8
    """Reconciles running at the same time (each monitor is reconciled by one at a time)."""
    status_min_interval: float = 10.0
    """Seconds between two status writes of one monitor that only change ``lastProbe``
    (condition changes are written at once; the first probe result too)."""
    first_status_within: float = 8.0
    """A new monitor's first status is written with its first probe result, or after this many
    seconds without one (the engine probes a new monitor within 5 s): one status write, not a
    write of the conditions followed by a second one for the first result."""
    status_writes_per_second: float = 100.0
    """Status writes of all monitors together, at most (a burst of as many is allowed): when a
    shared dependency fails, thousands of monitors change at once and status must not flood
    the API server."""
    rules: RuleDefaults = field(default_factory=RuleDefaults)
    """Runbook and dashboard base URLs and object labels of generated PrometheusRules."""
    member: str | None = None
    """This replica's name among replicas (``--member-name``, else ``$POD_NAME``): it holds the Lease
    ``route-monitor-<member>`` and probes only the monitors it owns. None: one replica, no Lease."""
    lease_namespace: str = "route-monitor"
    """Where the replicas' Leases live (``--lease-namespace``, else ``$POD_NAMESPACE``)."""
    scrape_per_namespace: bool = False
    """Keep a Service, EndpointSlice and ServiceMonitor in each namespace with monitors, scraping
    ``/metrics?namespace=NS`` (``--scrape-per-namespace``), for Prometheus stacks that enforce the
    ServiceMonitor's namespace (OpenShift user-workload monitoring)."""
    metrics_service: str = "route-monitor-metrics"
    """The operator's metrics Service in ``lease_namespace``: its EndpointSlices list the replicas."""
    retry_backoff: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
    """Delays before retrying a failed reconcile, the last one repeating."""
    prometheus: PromSettings | None = None
    """Where to read each owned monitor's SLO back from (``--prometheus-url``); None: no ``status.slo``."""
    slo_interval: float = 300.0
    """Seconds between two passes reading SLOs from Prometheus."""
    location: str | None = None
    """``--location``: where this replica probes from; None: its Node's zone, else ``cluster``."""
    canary: CanarySettings | None = None
    """What this replica probes to tell its own network failures from its targets' (``--canary-url``);
    None: no canary, every network failure counts."""
