"""One module of names, shared by the metrics code, the rule generator and the operator.

Metric names, label names, recording-rule names, alert names and annotation keys are public
contracts (``docs/reference.md``): users' dashboards and alert routes depend on
them. Both sides import them from here so that they can never drift apart.
"""

from __future__ import annotations

import hashlib
from typing import Final

PREFIX: Final = "route_monitor_"

# --- Contract 3: metrics exported by the probe engine ------------------------------------
PROBES_TOTAL: Final = "route_monitor_probes_total"
PROBE_FAILURES_TOTAL: Final = "route_monitor_probe_failures_total"
PROBE_DURATION_SECONDS: Final = "route_monitor_probe_duration_seconds"
PROBE_SUCCESS: Final = "route_monitor_probe_success"
SLO_OBJECTIVE: Final = "route_monitor_slo_objective_ratio"
SLO_PERIOD: Final = "route_monitor_slo_period_seconds"
LATENCY_OBJECTIVE: Final = "route_monitor_latency_objective_ratio"
PROBE_INTERVAL: Final = "route_monitor_probe_interval_seconds"
"""The monitor's objectives and probe interval as the engine probes it (``alert_rules.params``): the
shared rules read every monitor's thresholds from them, so no rule of its own records them."""
PROBES_FAST_TOTAL: Final = "route_monitor_probes_fast_total"
"""Successful probes no slower than the monitor's latency threshold (monitors with a latency
objective only): the duration histogram's bucket at the threshold, under one name for every
monitor, so the latency SLI is computed by rules shared by every monitor."""
TLS_CERT_EXPIRY: Final = "route_monitor_tls_certificate_expiry_timestamp_seconds"
TARGET_INFO: Final = "route_monitor_target_info"
PROBE_PHASE_DURATION_SECONDS: Final = "route_monitor_probe_phase_duration_seconds"
"""The last probe's time in each phase (``phase`` label, :data:`PHASES`), summed over its redirects:
what blackbox_exporter's ``probe_http_duration_seconds`` shows."""
PROBE_HTTP_STATUS_CODE: Final = "route_monitor_probe_http_status_code"
"""Status of the last probe's last response, 0 when none came (blackbox's ``probe_http_status_code``)."""
WARMING_UP: Final = "route_monitor_warming_up"
"""1 while a monitor warms up (its failing probes do not count yet), else 0."""
LABEL_PHASE: Final = "phase"
PHASES: Final = ("dns", "connect", "tls", "processing", "transfer")
"""The ``phase`` label values, in order: resolving, TCP connect, TLS handshake, request sent until
the response head arrived, reading the body."""

# operator / engine health (same prefix)
MONITORS: Final = "route_monitor_monitors"
RECONCILE_ERRORS_TOTAL: Final = "route_monitor_reconcile_errors_total"
SCHEDULE_LAG_SECONDS: Final = "route_monitor_probe_schedule_lag_seconds"
EVENT_LOOP_LAG_SECONDS: Final = "route_monitor_event_loop_lag_seconds"
PROBES_IN_FLIGHT: Final = "route_monitor_probes_in_flight"
ASYNCIO_TASKS: Final = "route_monitor_asyncio_tasks"
"""asyncio tasks alive in the process (counted when /metrics is read): flat in a healthy process."""
PROBES_SKIPPED_TOTAL: Final = "route_monitor_probes_skipped_total"
KUBE_REQUESTS_TOTAL: Final = "route_monitor_kube_requests_total"
"""Requests the operator makes to the Kubernetes API itself, by verb and resource: every write, and the
reads outside kopf's watches (a rule's owner check, Lease lists and watches)."""
STATUS_WRITES_DEFERRED_TOTAL: Final = "route_monitor_status_writes_deferred_total"
BUILD_INFO: Final = "route_monitor_build_info"
"""Always 1, labelled with route-monitor's ``version`` and the ``python`` it runs on."""
MEMBERS: Final = "route_monitor_members"
"""Replicas this replica sees live (its own Lease included)."""
OWNED_MONITORS: Final = "route_monitor_owned_monitors"
"""RouteMonitors this replica owns: probes, exports and writes the status of."""
OWNERSHIP_CHANGES_TOTAL: Final = "route_monitor_ownership_changes_total"
"""Monitors this replica started (``change="gained"``) or stopped (``"lost"``) owning."""
LEASE_RENEW_FAILURES_TOTAL: Final = "route_monitor_lease_renew_failures_total"
PROBER_BLIND: Final = "route_monitor_prober_blind"
"""1 while this member's canary (``--canary-url``) is unreachable, so its network failures are its
own and not its targets' (Contract 11); labelled ``member``."""
LABEL_MEMBER_NAME: Final = "member"

# --- Contract 11: paths (shared components between the prober and the targets) ---------------
MONITOR_PATH_INFO: Final = "route_monitor_monitor_path_info"
"""Always 1: one series per (monitor, path), exported by the monitor's owner."""
PROBE_FAILING: Final = "route_monitor_probe_failing"
"""The prober's verdict on the monitor (``alert_rules.failing``): 0 not failing, 1 failing, 2 failing
by DNS errors; one series per monitor (and location), read by the shared failing records."""
LABEL_PATH: Final = "path"
DNS_PATH_PREFIX: Final = "dns:"
"""On a ``dns:`` path only ``dns_error`` failures make a monitor count as failing."""
REASON_DNS_ERROR: Final = "dns_error"
ALERT_SHARED_PATH_DOWN: Final = "RouteMonitorSharedPathDown"
ALERT_PARTIALLY_UNREACHABLE: Final = "RouteMonitorPartiallyUnreachable"
"""Contract 12: failing from some locations, fewer than the quorum (ticket, never a page)."""
DASHBOARD_OVERVIEW_UID: Final = "route-monitor-overview"
"""uid of grafana/slo-overview.json (SharedPathDown links to it, filtered to the path)."""
PATH_LEVEL: Final = "path"
PATH_MONITORS_RECORD: Final = f"path:{PREFIX}path_monitors:count"
"""Monitors behind each path (from ``route_monitor_monitor_path_info``)."""
PATH_FAILING_RECORD: Final = f"path:{PREFIX}path_failing_monitors:count"
"""Monitors behind each path that are failing (only paths with at least one)."""
PATH_DOWN_RECORD: Final = f"path:{PREFIX}path_down:bool"
"""1 while at least K failing monitors, at least F of the path's monitors, fail together; else 0."""
PATH_DOWN_THRESHOLD_RECORD: Final = f"path:{PREFIX}path_down_threshold:count"
"""Failing monitors a path needs to be down: ``max(K, ceil(F x its monitors))``, for each path
that has monitors (the monitors' fast alerts compare their siblings' failing series with it)."""
FAILING_ON_PATH_RECORD: Final = f"namespace_monitor_{PATH_LEVEL}:{PREFIX}probe_failing:bool"
"""1 for each path on which the monitor counts as failing (on a ``dns:`` path DNS errors only,
elsewhere any failure but DNS errors), recorded in the monitor's fast group; absent otherwise."""

# --- Contract 9: results excluded from the SLI (maintenance windows, pauses, warm-up) ----------
PROBES_EXCLUDED_TOTAL: Final = "route_monitor_probes_excluded_total"
"""Probes whose result did not count, by reason (never in ``route_monitor_probes_total``)."""
MAINTENANCE: Final = "route_monitor_maintenance"
"""1 while a monitor is in a maintenance window or paused, else 0."""
EXCLUDED_MAINTENANCE: Final = "maintenance"
EXCLUDED_WARMUP: Final = "warmup"
EXCLUDED_PAUSED: Final = "paused"
EXCLUDED_BLIND: Final = "blind"
"""Contract 11: a network failure while the member's own canary was unreachable (the prober's fault)."""
EXCLUDED_REASONS: Final = (EXCLUDED_MAINTENANCE, EXCLUDED_WARMUP, EXCLUDED_PAUSED, EXCLUDED_BLIND)
# --- Contract 10: the SLO read back from Prometheus (operator with --prometheus-url) -------
SLO_BUDGET_REMAINING_RATIO: Final = "route_monitor_slo_budget_remaining_ratio"
"""Share of the period's error budget left, as the owner last read it (1 untouched, <= 0 spent)."""
SLO_READ_ERRORS_TOTAL: Final = "route_monitor_slo_read_errors_total"

# labels
LABEL_NAMESPACE: Final = "namespace"
LABEL_MONITOR: Final = "monitor"
LABEL_RESULT: Final = "result"
LABEL_REASON: Final = "reason"
LABEL_URL: Final = "url"
LABEL_KIND: Final = "kind"
LABEL_NAME: Final = "name"
LABEL_STATE: Final = "state"
IDENTITY_LABELS: Final = (LABEL_NAMESPACE, LABEL_MONITOR)

RESULT_SUCCESS: Final = "success"
RESULT_FAILURE: Final = "failure"

# --- Contract 4: alerts --------------------------------------------------------------------
ALERT_ERROR_BUDGET_BURN: Final = "RouteMonitorErrorBudgetBurn"
ALERT_LATENCY_BUDGET_BURN: Final = "RouteMonitorLatencyBudgetBurn"
ALERT_PROBES_ABSENT: Final = "RouteMonitorProbesAbsent"
ALERT_CERTIFICATE_EXPIRY: Final = "RouteMonitorCertificateExpiry"
ALERT_RULES_INCOMPLETE: Final = "RouteMonitorRulesIncomplete"
"""A monitor has probe series but the shared records its alerts read are missing (the Prometheus
evaluating its rules does not load the shared groups, ``alert_rules.shared``)."""

LABEL_SEVERITY: Final = "severity"
LABEL_LONG: Final = "long"
LABEL_SHORT: Final = "short"
SEVERITY_CRITICAL: Final = "critical"
SEVERITY_WARNING: Final = "warning"

ANNOTATION_SUMMARY: Final = "summary"
ANNOTATION_DESCRIPTION: Final = "description"
ANNOTATION_RUNBOOK_URL: Final = "runbook_url"
ANNOTATION_DASHBOARD_URL: Final = "dashboard_url"
DASHBOARD_DETAIL_UID: Final = "route-monitor-detail"
"""uid of grafana/monitor-detail.json (alerts link to it when a Grafana base URL is configured)."""

# --- Contracts 1 and 7: opt-in annotations on Routes, Services, Ingresses, HTTPRoutes -------
ANNOTATION_PREFIX: Final = "routemonitor.io/"
ANN_SLO: Final = "routemonitor.io/slo"
ANN_PATH: Final = "routemonitor.io/path"
ANN_INTERVAL: Final = "routemonitor.io/interval"
ANN_LATENCY_THRESHOLD: Final = "routemonitor.io/latency-threshold"
ANN_LATENCY_SLO: Final = "routemonitor.io/latency-slo"
ANN_PORT: Final = "routemonitor.io/port"
ANN_MAINTENANCE: Final = "routemonitor.io/maintenance"
"""Contract 9: maintenance windows, one a line (on a Route, a Service or a RouteMonitor)."""
ANN_PAUSED: Final = "routemonitor.io/paused"
"""Contract 9: ``"true"`` excludes every probe result (on a Route, a Service or a RouteMonitor)."""
ANN_HOST: Final = "routemonitor.io/host"
"""Ingress and HTTPRoute only (Contract 7): which of the object's hosts to probe."""
ANN_PATHS: Final = "routemonitor.io/paths"
"""Contract 11: comma-separated paths the operator cannot see (a CDN, an external load balancer)."""
LABEL_GENERATED_FROM: Final = "routemonitor.io/generated-from"

# --- Contract 6: replicas ----------------------------------------------------------------------
LABEL_MEMBER: Final = "routemonitor.io/member"
"""On each replica's Lease: ``"true"``."""
LEASE_PREFIX: Final = "route-monitor-"
"""Each replica's Lease is ``route-monitor-<member>``."""
ANN_BLIND: Final = "routemonitor.io/blind"
"""Contract 11: on a replica's Lease, ``"true"`` while its canary is unreachable; ownership then
ranks the replicas without it (while any exists)."""
ANN_LOCATION: Final = "routemonitor.io/location"
"""Contract 12: on a replica's Lease, where it probes from (``--location``, its Node's zone, else
``cluster``), so every replica picks a monitor's owners in distinct locations."""
LABEL_LOCATION: Final = "location"
"""Contract 12: on every per-monitor series, the location of the replica that probed."""
NODE_ZONE_LABEL: Final = "topology.kubernetes.io/zone"

# --- Contract 2: the RouteMonitor resource -------------------------------------------------
GROUP: Final = "routemonitor.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = "routemonitor.io/v1alpha1"
KIND: Final = "RouteMonitor"
PLURAL: Final = "routemonitors"
FIELD_MANAGER: Final = "route-monitor"

DEFAULT_RUNBOOK_BASE: Final = "https://github.com/route-monitor/route-monitor/blob/main/docs/runbooks.md"


def slug(name: str) -> str:
    """``RouteMonitorErrorBudgetBurn`` -> ``routemonitorerrorbudgetburn`` (runbook anchors)."""
    return name.lower()


# --- Contract 4: recording rules (level:metric:operations), aggregated by (namespace, monitor) --
RECORD_LEVEL: Final = "namespace_monitor"


def error_ratio_record(window: str) -> str:
    """Failed / all probes over ``window`` (e.g. ``5m``): the availability SLI's error ratio."""
    return f"{RECORD_LEVEL}:{PREFIX}probe_errors:ratio_rate{window}"


def location_error_ratio_record(window: str) -> str:
    """Contract 12: failed / all counted probes of one location over ``window``."""
    return f"{RECORD_LEVEL}_{LABEL_LOCATION}:{PREFIX}probe_errors:ratio_rate{window}"


def reachability_record(window: str) -> str:
    """Contract 12: failed / all probes of every location over ``window`` (no quorum)."""
    return f"{error_ratio_record(window)}_reachability"


def reachability_errors_increase_record(tile: str) -> str:
    """Contract 12: failed probes of every location within one ``tile`` (no quorum), beside the
    error tile under the quorum: summed over the SLO period for ``status.slo.reachability``."""
    return f"{errors_increase_record(tile)}_reachability"


def slow_ratio_record(window: str) -> str:
    """Probes slower than the latency threshold (or failed) / all probes over ``window``."""
    return f"{RECORD_LEVEL}:{PREFIX}probe_slow:ratio_rate{window}"


def error_count_record(window: str) -> str:
    """Failed probes seen within ``window`` (scrapes whose failure counter rose; never extrapolated):
    the guard that keeps a single failed probe from ever paging."""
    return f"{RECORD_LEVEL}:{PREFIX}probe_errors:count{window}"


def slow_count_record(window: str) -> str:
    """Slow or failed probes seen within ``window`` (the latency SLO's guard, like ``error_count_record``)."""
    return f"{RECORD_LEVEL}:{PREFIX}probe_slow:count{window}"


def probes_increase_record(window: str) -> str:
    """All probes within ``window``: a tile that long windows are summed from (long-window group)."""
    return f"{RECORD_LEVEL}:{PREFIX}probes:increase{window}"


def errors_increase_record(window: str) -> str:
    """Failed probes within ``window`` (tile)."""
    return f"{RECORD_LEVEL}:{PREFIX}probe_errors:increase{window}"


def fast_increase_record(window: str) -> str:
    """Successful probes no slower than the latency threshold within ``window`` (tile)."""
    return f"{RECORD_LEVEL}:{PREFIX}probe_fast:increase{window}"


def burning_record(sli_kind: str, long_window: str) -> str:
    """1 while a monitor's SLI burns its budget over the window pair whose long window is
    ``long_window`` (both ratios above the threshold, the guard met, no shared path down), else 0;
    what each monitor's burn alert reads (``alert_rules.shared``)."""
    metric = "probe_errors" if sli_kind == "availability" else "probe_slow"
    return f"{RECORD_LEVEL}:{PREFIX}{metric}:burning{long_window}"


QUORUM_RECORD: Final = f"{RECORD_LEVEL}:{PREFIX}quorum:count"
"""Contract 12: a monitor of several vantages' quorum, recorded only for such a monitor; the shared
groups leave the monitors carrying it to their own quorum rules (``alert_rules.quorum``)."""
PROBES_ABSENT_RECORD: Final = f"{RECORD_LEVEL}:{PREFIX}probes:absent"
"""1 for a monitor with no probe result (counted or excluded) within 5m and no shared path down:
what each monitor's ``RouteMonitorProbesAbsent`` reads (``alert_rules.shared``)."""
RULES_OBJECTIVE_RECORD: Final = f"{RECORD_LEVEL}:{PREFIX}rules_objective:ratio"
"""The availability objective as a monitor's own rules state it (its long-window group, every
tile), for every monitor whose rules this Prometheus evaluates: what ``RouteMonitorProbesAbsent``
and ``RouteMonitorOperatorDown`` expect probes for, and the objective a report shows for a monitor
that had no probes (:data:`SLO_OBJECTIVE_RECORD` comes from the prober's series)."""

FAILING_RECORD: Final = f"{RECORD_LEVEL}:{PREFIX}probe_failing:bool"
"""Contract 11: 1 while the monitor is *failing* (its last two counted probes failed and at least
half of its probes over ``max(2 x interval, 1m)`` did) from at least half of the locations probing
it; a second series with ``reason="dns_error"`` while that holds for DNS errors (what counts on a
``dns:`` path). Absent otherwise. From the prober's :data:`PROBE_FAILING` (``alert_rules.failing``)."""

PERIOD_ERROR_RATIO_RECORD: Final = f"{RECORD_LEVEL}:{PREFIX}probe_errors:ratio_period"
"""Failed / all probes over the monitor's whole SLO period (e.g. 30d), from hourly tiles: recorded
once an hour, read by dashboards instead of a 30-day ``increase()`` over raw counters."""
BUDGET_REMAINING_RECORD: Final = f"{RECORD_LEVEL}:{PREFIX}error_budget_remaining:ratio_period"
"""``1 - period error ratio / error budget``: 1 = untouched, 0 = spent, below 0 = overspent."""
SLO_OBJECTIVE_RECORD: Final = f"{RECORD_LEVEL}:{PREFIX}slo_objective:ratio"
"""The availability objective as a ratio (0.999), one series per monitor (for dashboards)."""
LATENCY_OBJECTIVE_RECORD: Final = f"{RECORD_LEVEL}:{PREFIX}latency_objective:ratio"
SLO_PERIOD_RECORD: Final = f"{RECORD_LEVEL}:{PREFIX}slo_period:seconds"

# --- Contract 3: histogram buckets of route_monitor_probe_duration_seconds ------------------
DEFAULT_DURATION_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Every monitor's duration histogram has these buckets plus its own latency threshold
(per-series bucket sets: the probe engine renders each monitor's histogram itself)."""


def le_label(threshold_seconds: float) -> str:
    """The ``le`` label value of the bucket at ``threshold_seconds``, exactly as ``/metrics``
    renders it (the canonical float form of client_python / OpenMetrics): ``0.5`` -> ``"0.5"``,
    ``1`` -> ``"1.0"``, ``0.25`` -> ``"0.25"``, ``12`` -> ``"12.0"``, ``inf`` -> ``"+Inf"``.
    Both the engine and the generator use this, so ``..._bucket{le="..."}`` always matches."""
    d = float(threshold_seconds)
    if d == float("inf"):
        return "+Inf"
    s = repr(d)
    dot = s.find(".")
    if d > 0 and dot > 6:  # Go switches to exponent form earlier than Python (client_python does the same)
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1:]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return s


def duration_buckets(threshold_seconds: float | None = None) -> tuple[float, ...]:
    """Upper bounds (without +Inf) of one monitor's duration histogram: the defaults plus its threshold."""
    extra = () if threshold_seconds is None else (float(threshold_seconds),)
    return tuple(sorted(set(DEFAULT_DURATION_BUCKETS) | set(extra)))


# --- generated PrometheusRule objects ---------------------------------------------------------
LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "route-monitor"
LABEL_MONITOR_NAME: Final = "routemonitor.io/monitor"
"""On a generated PrometheusRule: the RouteMonitor it belongs to."""
GENERATED_HEADER: Final = "# Code generated by route-monitor. DO NOT EDIT."

RULE_NAME_PREFIX: Final = "route-monitor-"
"""Generated PrometheusRules are named ``route-monitor-<monitor>``: a team's own rule named after
its application (``checkout``) can never be taken for ours."""
MAX_GENERATED_NAME: Final = 63
"""Generated names stay within 63 characters (a DNS label, the strictest limit any tool applies)."""


def prometheus_rule_name(monitor: str) -> str:
    """The PrometheusRule of a monitor: ``route-monitor-checkout``. Stable (a function of the
    monitor's name only) and at most 63 characters: a longer one keeps the first characters and
    ends with 8 hex digits of the full name's SHA-256, so two long names never share a rule."""
    name = RULE_NAME_PREFIX + monitor
    if len(name) <= MAX_GENERATED_NAME:
        return name
    digest = hashlib.sha256(monitor.encode()).hexdigest()[:8]
    head = name[: MAX_GENERATED_NAME - len(digest) - 1].rstrip("-.")
    return f"{head}-{digest}"

SCRAPE_OBJECT_NAME: Final = "route-monitor-probes"
"""Per-namespace scrape mode (``--scrape-per-namespace``): the Service, Endpoints, EndpointSlice
and ServiceMonitor the operator keeps in each namespace with monitors, for Prometheus stacks that
enforce the scraping object's namespace (user-workload monitoring)."""
SHARED_RULE_NAME: Final = "route-monitor.slis"
"""Per-namespace scrape mode: the PrometheusRule holding the shared SLI groups (``alert_rules.shared``) in
each namespace with monitors (a namespace-enforcing Prometheus scopes each rule to its namespace). No
monitor's rule can take the name: theirs start with ``route-monitor-``."""
SCRAPE_PARAM_NAMESPACE: Final = "namespace"
"""``/metrics?namespace=NS``: only that namespace's probe series."""
LABEL_SERVICE_NAME: Final = "kubernetes.io/service-name"
"""On an EndpointSlice: the Service it belongs to."""
LABEL_ENDPOINTSLICE_MANAGED_BY: Final = "endpointslice.kubernetes.io/managed-by"
ENDPOINTSLICE_MANAGER: Final = "route-monitor.routemonitor.io"
"""Who manages our EndpointSlices (Kubernetes' own controllers leave slices managed by others alone)."""
LABEL_SKIP_MIRROR: Final = "endpointslice.kubernetes.io/skip-mirror"
"""On an Endpoints object: Kubernetes' EndpointSlice mirroring controller leaves it alone (we write
the EndpointSlice ourselves; a mirrored copy would list every replica twice)."""
