"""The operator's own health metrics, on the same registry (and ``/metrics``) as the probes'.

- ``route_monitor_monitors{state}``: RouteMonitors by state (every state always present);
- ``route_monitor_reconcile_errors_total{reason}``: failed reconciles (retried with backoff);
- ``route_monitor_kube_requests_total{verb,resource}``: requests the operator makes itself (writes, and
  the reads and Lease lists/watches, not the watches of the watched kinds);
- ``route_monitor_status_writes_deferred_total``: status writes postponed by the rate bound;
- replicas: ``route_monitor_members`` (live replicas seen), ``route_monitor_owned_monitors``,
  ``route_monitor_ownership_changes_total{change=gained|lost}``,
  ``route_monitor_lease_renew_failures_total``.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import GaugeMetricFamily, Metric

from alert_rules import names

STATES = ("ready", "target_unresolved", "rules_failed", "invalid")
"""``ready``: probing and rules applied; ``target_unresolved``: no URL (missing Route, no host, URL
targets off, forbidden address); ``rules_failed``: ``RulesApplied`` is False: the PrometheusRule could not be
applied, or its objective cannot page as written (``ObjectiveNotAlertable``, rules applied);
``invalid``: the spec failed the operator's validation."""


class OperatorMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._states: dict[tuple[str, str], str] = {}
        self.reconcile_errors = Counter(names.RECONCILE_ERRORS_TOTAL, "Reconciles of a monitor that failed "
                                        "(retried with backoff), by reason", ["reason"], registry=registry)
        self.kube_requests = Counter(names.KUBE_REQUESTS_TOTAL, "Requests the operator makes to the Kubernetes "
                                     "API besides the watches of the kinds it monitors, by verb and resource",
                                     ["verb", "resource"],
                                     registry=registry)
        self.status_deferred = Counter(names.STATUS_WRITES_DEFERRED_TOTAL, "RouteMonitor status writes "
                                       "postponed to keep within the per-monitor rate bound", registry=registry)
        self.members = Gauge(names.MEMBERS, "Operator replicas this replica sees live (itself included)",
                             registry=registry)
        self.members.set(1)
        self.ownership_changes = Counter(names.OWNERSHIP_CHANGES_TOTAL, "Monitors this replica started "
                                         "(gained) or stopped (lost) owning as replicas came and went",
                                         ["change"], registry=registry)
        for change in ("gained", "lost"):
            self.ownership_changes.labels(change=change)
        self.lease_renew_failures = Counter(names.LEASE_RENEW_FAILURES_TOTAL, "Failed renewals of this "
                                            "replica's Lease", registry=registry)
        registry.register(_StatesCollector(self))

    def set_state(self, key: tuple[str, str], state: str | None) -> None:
        """Record a monitor's state; None forgets the monitor."""
        if state is None:
            self._states.pop(key, None)
        else:
            assert state in STATES, state
            self._states[key] = state

    def counts(self) -> dict[str, int]:
        tally = Tally(self._states.values())
        return {s: tally.get(s, 0) for s in STATES}


class _StatesCollector:
    def __init__(self, metrics: OperatorMetrics) -> None:
        self._metrics = metrics

    def describe(self) -> Iterable[Metric]:
        return [GaugeMetricFamily(names.MONITORS, "RouteMonitors known to the operator, by state",
                                  labels=[names.LABEL_STATE]),
                GaugeMetricFamily(names.OWNED_MONITORS, "RouteMonitors this replica owns", value=0)]

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(names.MONITORS, "RouteMonitors known to the operator, by state",
                                   labels=[names.LABEL_STATE])
        counts = self._metrics.counts()
        for state, n in counts.items():
            family.add_metric([state], n)
        yield family
        yield GaugeMetricFamily(names.OWNED_MONITORS, "RouteMonitors this replica owns (probes, exports, "
                                "writes the status of)", value=sum(counts.values()))
