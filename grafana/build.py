"""Generate the Grafana dashboards (JSON) and their sidecar ConfigMaps from code.

    python grafana/build.py           # rewrite grafana/*.json and grafana/configmaps.yaml
    python grafana/build.py --check   # exit 1 if the committed files differ from what the code gives

Every metric and recording-rule name comes from ``alert_rules.names`` so the dashboards cannot
drift from the probe engine and the rule generator. Queries that can legitimately have no series
(no failures, no firing alerts) end in ``or ... vector(0)``-style fallbacks so a panel shows 0,
never "No data"; the exceptions are documented on the panel (certificate expiry: HTTPS only;
latency: monitors with a latency objective).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from dashlib import (  # noqa: E402
    NS_MON,
    Panel,
    Query,
    annotation,
    custom_var,
    dashboard,
    datasource_var,
    query_var,
    row,
)

from alert_rules import names as n  # noqa: E402
from alert_rules.model import DEFAULT_PERIOD_MS  # noqa: E402
from alert_rules.windows import AlertWindow, alert_windows  # noqa: E402

UID_OVERVIEW = "route-monitor-overview"
UID_DETAIL = n.DASHBOARD_DETAIL_UID
UID_OPERATOR = "route-monitor-operator"
WINDOWS = alert_windows(DEFAULT_PERIOD_MS)
"""The generator's window pairs for the default 30d period (docs/reference.md, Alerts), shown as burn rates."""
PAGE_PAIRS = tuple((w.long, w.short) for w in WINDOWS if w.severity == "page")
TICKET_PAIRS = tuple((w.long, w.short) for w in WINDOWS if w.severity == "ticket")
BY = "namespace, monitor"
PERIODS = ["30d", "28d", "7d", "1d"]


# --- PromQL templates ---------------------------------------------------------------------
def objective() -> str:
    return f"{n.SLO_OBJECTIVE_RECORD}{{{NS_MON}}}"


def error_ratio_over(window: str) -> str:
    """Failed / all probes over a dashboard-chosen window, from the raw counters (resets handled)."""
    return (f'sum by ({BY}) (increase({n.PROBES_TOTAL}{{{NS_MON}, {n.LABEL_RESULT}="{n.RESULT_FAILURE}"}}[{window}]))'
            f" / sum by ({BY}) (increase({n.PROBES_TOTAL}{{{NS_MON}}}[{window}]))")


def availability_over(window: str) -> str:
    return f"1 - ({error_ratio_over(window)})"


PERIOD_RECORD_LOOKBACK = "2h"
"""The period budget is recorded once an hour, at the group's own offset within the hour: an
instant selector finds it only within Prometheus' lookback (5 minutes) after each recording, so
it is read as the last value within two hours (one evaluation may be missed)."""


def period_budget() -> str:
    """The error budget left over each monitor's own SLO period, as recorded (hourly) by its
    rules; until the first recordings (up to two hours after the rules load), computed here over
    the dashboard's period from the raw counters."""
    recorded = f"last_over_time({n.BUDGET_REMAINING_RECORD}{{{NS_MON}}}[{PERIOD_RECORD_LOOKBACK}])"
    return f"{recorded} or ({budget_remaining('$period')})"


def budget_remaining(window: str) -> str:
    return f"1 - (({error_ratio_over(window)}) / on ({BY}) (1 - {objective()}))"


def burn_rate(window: str) -> str:
    """Recorded error ratio over ``window`` divided by the error budget: 1 = burning exactly on budget."""
    return f"{n.error_ratio_record(window)}{{{NS_MON}}} / on ({BY}) (1 - {objective()})"


def burn_threshold(window: AlertWindow) -> str:
    """A pair's burn factor for each monitor's own period: budget share x period / long window."""
    return (f"{window.budget_share.normalize():f} * {n.SLO_PERIOD_RECORD}{{{NS_MON}}} / {window.long_ms // 1000}")


def firing_alerts(severity: str) -> str:
    sel = f'alertname=~"RouteMonitor.+", alertstate="firing", {n.LABEL_SEVERITY}="{severity}", {NS_MON}'
    return f"count by ({BY}) (ALERTS{{{sel}}}) or on ({BY}) (0 * {objective()})"


def monitor_paths(extra: str = "") -> str:
    """One series per (monitor, path) among the selected monitors and paths."""
    return f'max by ({BY}, {n.LABEL_PATH}) ({n.MONITOR_PATH_INFO}{{{NS_MON}, {n.LABEL_PATH}=~"$path"{extra}}})'


def path_monitors() -> str:
    return f"count by ({n.LABEL_PATH}) ({monitor_paths()})"


def path_failing() -> str:
    """Failing monitors behind each path, as the shared-path rules count them (on a ``dns:`` path
    DNS errors only, and those on no other path); 0 for a path with none."""
    failing = f'{n.FAILING_RECORD}{{{NS_MON}, {n.LABEL_REASON}=""}}'
    dns = f'{n.FAILING_RECORD}{{{NS_MON}, {n.LABEL_REASON}="{n.REASON_DNS_ERROR}"}}'
    not_dns, is_dns = f', {n.LABEL_PATH}!~"dns:.*"', f', {n.LABEL_PATH}=~"dns:.*"'
    other = f"({monitor_paths(not_dns)} and on ({BY}) ({failing} unless on ({BY}) {dns}))"
    on_dns = f"({monitor_paths(is_dns)} and on ({BY}) {dns})"
    return f"count by ({n.LABEL_PATH}) ({other} or {on_dns}) or on ({n.LABEL_PATH}) (0 * {path_monitors()})"


def monitors_probed() -> str:
    """One series per monitor probed: a monitor of several vantages has a target_info series per
    location (and replica), so series are counted by monitor, never as they are."""
    return f"count by ({BY}) ({n.TARGET_INFO})"


def quantile(q: str, metric: str, by: str, selector: str = "") -> str:
    return f"histogram_quantile({q}, sum by ({by}, le) (rate({metric}_bucket{selector}[$__rate_interval])))"


# --- dashboards --------------------------------------------------------------------------
def monitor_vars() -> list[dict[str, object]]:
    return [datasource_var(),
            query_var("namespace", "Namespace", f"label_values({n.PROBES_TOTAL}, namespace)"),
            query_var("monitor", "Monitor", f'label_values({n.PROBES_TOTAL}{{namespace=~"$namespace"}}, monitor)'),
            custom_var("period", "SLO period", PERIODS, "30d")]


def path_var() -> dict[str, object]:
    """The overview's shared-path filter (RouteMonitorSharedPathDown links with ``var-path``)."""
    return query_var("path", "Shared path", f"label_values({n.MONITOR_PATH_INFO}, {n.LABEL_PATH})")


def table_query(expr: str) -> Query:
    return Query(expr, instant=True, table=True)


def overview() -> dict[str, object]:
    fast, slow = PAGE_PAIRS[0][0], TICKET_PAIRS[0][0]
    columns = [("Objective", objective()), ("Availability ($period)", availability_over("$period")),
               ("Budget remaining (SLO period)", period_budget()), (f"Burn rate {fast}", burn_rate(fast)),
               (f"Burn rate {slow}", burn_rate(slow)), ("Pages firing", firing_alerts(n.SEVERITY_CRITICAL)),
               ("Tickets firing", firing_alerts(n.SEVERITY_WARNING))]
    rename = {f"Value #{chr(ord('A') + i)}": title for i, (title, _) in enumerate(columns)}
    table = Panel("Monitors", tuple(table_query(e) for _, e in columns), kind="table", width=24, height=12,
                  unit="percentunit",
                  description="Every monitor: objective, availability over the chosen period, error budget "
                              "left over its own SLO period (recorded hourly), burn rates (1 = spending the budget "
                              "exactly over the period), alerts firing.",
                  transformations=({"id": "merge", "options": {}},
                                   {"id": "organize", "options": {"excludeByName": {"Time": True},
                                                                  "renameByName": rename}}),
                  overrides=(*({"matcher": {"id": "byName", "options": title},
                                "properties": [{"id": "unit", "value": "none"}]} for title, _ in columns[3:]),
                             *({"matcher": {"id": "byName", "options": field},
                                "properties": [{"id": "links", "value": [row_link()]}]}
                               for field in ("namespace", "monitor"))))
    panels = [
        Panel("Monitors", (Query(f"count({objective()}) or vector(0)", instant=True),), kind="stat", width=6, height=4),
        Panel("Pages firing", (Query(f"sum({firing_alerts(n.SEVERITY_CRITICAL)}) or vector(0)", instant=True),),
              kind="stat", width=6, height=4),
        Panel("Tickets firing", (Query(f"sum({firing_alerts(n.SEVERITY_WARNING)}) or vector(0)", instant=True),),
              kind="stat", width=6, height=4),
        Panel("Lowest budget remaining", (Query(f"min({period_budget()})", instant=True),),
              kind="stat", width=6, height=4, unit="percentunit"),
        table,
        Panel(f"Burn rate {fast} (fast)", (Query(burn_rate(fast), "{{namespace}}/{{monitor}}"),)),
        Panel(f"Burn rate {slow} (slow)", (Query(burn_rate(slow), "{{namespace}}/{{monitor}}"),)),
        paths_panel(),
    ]
    return dashboard(uid=UID_OVERVIEW, title="route-monitor / SLO overview", tags=["route-monitor", "slo"],
                     description="Availability SLOs of every monitored Route, Service and URL.",
                     variables=[*monitor_vars(), path_var()], panels=panels, links=(detail_link(),))


def paths_panel() -> Panel:
    """Per shared path (router shard, ingress class, Gateway, DNS, declared): how many of the selected
    monitors are behind it and how many of them are failing; ``var-path`` (RouteMonitorSharedPathDown's
    dashboard link) narrows it to one path."""
    columns = [("Monitors", f"{path_monitors()} or vector(0)"), ("Failing", f"{path_failing()} or vector(0)")]
    rename = {f"Value #{chr(ord('A') + i)}": title for i, (title, _) in enumerate(columns)}
    return Panel("Shared paths", tuple(table_query(e) for _, e in columns), kind="table", width=24, height=8,
                 description="The shared components between the prober and the targets: monitors behind each "
                             "and how many fail now (a single row of 0 when no monitor has a path: IP targets). "
                             "When enough of them fail together, one "
                             "RouteMonitorSharedPathDown pages for the path instead of a page per monitor.",
                 transformations=({"id": "merge", "options": {}},
                                  {"id": "organize", "options": {"excludeByName": {"Time": True},
                                                                 "renameByName": rename}}))


def row_link() -> dict[str, object]:
    """A table row's link to monitor-detail on that row's monitor, keeping the time range."""
    return {"title": "Monitor detail: ${__data.fields.namespace}/${__data.fields.monitor}",
            "url": f"/d/{UID_DETAIL}/?var-namespace=${{__data.fields.namespace}}"
                   "&var-monitor=${__data.fields.monitor}&var-period=${period}&${__url_time_range}"}


def detail_link() -> dict[str, object]:
    return {"title": "Monitor detail", "type": "link", "url": f"/d/{UID_DETAIL}", "includeVars": True,
            "keepTime": True, "asDropdown": False, "icon": "dashboard", "tags": [], "targetBlank": False}


def detail() -> dict[str, object]:
    legend = "{{namespace}}/{{monitor}}"
    pairs = list(dict.fromkeys(w for pair in (*PAGE_PAIRS, *TICKET_PAIRS) for w in pair))  # 6h once
    sel = f"{{{NS_MON}}}"
    panels = [
        row("Availability"),
        Panel("Availability (5m) against the objective",
              (Query(f"1 - {n.error_ratio_record('5m')}{sel}", legend + " availability"),
               Query(objective(), legend + " objective")), unit="percentunit"),
        Panel("Error budget remaining over the SLO period", (Query(period_budget(), legend),),
              unit="percentunit"),
        locations_panel(),
        Panel("Burn rate per window", (*(Query(burn_rate(w), f"{legend} {w}") for w in pairs),
                                       *(Query(burn_threshold(w), f"threshold {w.severity} {w.long}/{w.short}")
                                         for w in WINDOWS)), width=24,
              description=", ".join(f"{w.severity} {w.long}/{w.short} at {w.factor.normalize():f}x" for w in WINDOWS)
              + " for a 30d period (dashed lines: each pair's factor for the monitor's own period): a pair fires "
              "when both its windows burn faster than its factor.",
              overrides=({"matcher": {"id": "byRegexp", "options": "threshold .*"},
                          "properties": [{"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}},
                                         {"id": "custom.lineWidth", "value": 1}]},)),
        Panel("Probe results", (Query(f"sum by ({BY}, {n.LABEL_RESULT}) (increase({n.PROBES_TOTAL}{sel}"
                                      "[$__rate_interval]))", legend + " {{result}}"),
                                Query(f"sum by ({BY}, {n.LABEL_REASON}) (increase({n.PROBES_EXCLUDED_TOTAL}{sel}"
                                      "[$__rate_interval])) or on () vector(0)", legend + " excluded: {{reason}}")),
              description="Counted results (success, failure) and, next to them, results excluded from the SLO "
                          "by a maintenance window, a pause or warm-up (shaded: maintenance and pauses)."),
        Panel("Failures by reason", (Query(f"sum by ({n.LABEL_REASON}) (increase({n.PROBE_FAILURES_TOTAL}{sel}"
                                           "[$__rate_interval])) or on () vector(0)", "{{reason}}"),)),
        row("Latency"),
        Panel("Probe duration percentiles (successful probes)",
              tuple(Query(quantile(q, n.PROBE_DURATION_SECONDS, BY, sel), f"{legend} p{q[2:]}")
                    for q in ("0.5", "0.9", "0.99")), unit="s"),
        Panel("Probes faster than the latency threshold (5m) against the objective",
              (Query(f"1 - {n.slow_ratio_record('5m')}{sel}", legend + " fast"),
               Query(f"{n.LATENCY_OBJECTIVE_RECORD}{sel}", legend + " objective")), unit="percentunit",
              description="Only monitors with a latency objective (spec.slo.latency) have these series."),
        Panel("Last probe: time per phase", (Query(f"sum by ({BY}, {n.LABEL_PHASE}) "
                                                   f"({n.PROBE_PHASE_DURATION_SECONDS}{sel})", legend + " {{phase}}"),),
              unit="s", width=24, options={"tooltip": {"mode": "multi", "sort": "desc"}},
              description="Where the last probe spent its time, summed over its redirects: dns, connect, tls, "
                          "processing (request sent until the response head arrived) and transfer (the body)."),
        row("Target"),
        Panel("Days until the TLS certificate expires",
              (Query(f"({n.TLS_CERT_EXPIRY}{sel} - time()) / 86400", legend),), unit="d", width=12,
              description="HTTPS targets only; reported even when verification fails."),
        Panel("Targets", (table_query(f"{n.TARGET_INFO}{sel}"),), kind="table", width=12,
              transformations=({"id": "organize", "options": {"excludeByName": {"Time": True, "Value": True,
                                                                                "__name__": True}}},)),
        Panel("Last HTTP status code", (Query(f"{n.PROBE_HTTP_STATUS_CODE}{sel}", legend),), width=12,
              description="Of the last probe's last response; 0 when none came (DNS, connection or TLS failed)."),
        Panel("Warming up", (Query(f"{n.WARMING_UP}{sel}", legend),), width=12,
              description="1 while a new monitor (or one whose URL changed) warms up: its failing probes are not "
                          "counted until one succeeds or spec.probe.warmup has passed. Look at the probe results "
                          "above to see whether the target fails meanwhile."),
    ]
    return dashboard(uid=UID_DETAIL, title="route-monitor / Monitor detail", tags=["route-monitor", "slo"],
                     description="One monitor's availability, burn rates, latency and failures.",
                     variables=monitor_vars(), panels=panels,
                     links=({**detail_link(), "title": "SLO overview", "url": f"/d/{UID_OVERVIEW}"},),
                     annotations=(maintenance_annotation(),))


def locations_panel() -> Panel:
    """Contract 12: a monitor probed from several locations, each location's availability, the
    monitor's under the quorum (uptime: what pages and the budget count) and over every probe of
    every location (reachability); a monitor of one vantage has only its own line."""
    legend, sel = "{{namespace}}/{{monitor}}", f"{{{NS_MON}}}"
    return Panel("Availability (5m) per location",
                 (Query(f"1 - {n.location_error_ratio_record('5m')}{sel}", legend + " from {{location}}"),
                  Query(f"1 - {n.error_ratio_record('5m')}{sel}", legend + " uptime (quorum)"),
                  Query(f"1 - {n.reachability_record('5m')}{sel}", legend + " reachability")),
                 unit="percentunit", width=24,
                 description="Monitors with spec.probe.vantages above 1: each location's availability, the "
                             "monitor's uptime under the quorum (a failure counts only as far as the quorum of "
                             "locations sees it: pages and the budget follow it) and its reachability (every probe "
                             "of every location). Reachability below uptime: some place fails alone "
                             "(RouteMonitorPartiallyUnreachable names it). A monitor of one vantage shows its "
                             "uptime only.")


def maintenance_annotation() -> dict[str, object]:
    """Maintenance windows and pauses as shaded regions (the engine's gauge is 1 during them)."""
    return annotation("Maintenance and pauses", f"{n.MAINTENANCE}{{{NS_MON}}} == 1",
                      title="Maintenance or pause", text="{{namespace}}/{{monitor}}: results not counted",
                      color="rgba(255, 152, 48, 0.25)")


def operator() -> dict[str, object]:
    panels = [
        Panel("Monitors by state", (Query(f"sum by ({n.LABEL_STATE}) ({n.MONITORS}) or label_replace(count("
                                          f'{monitors_probed()}), "{n.LABEL_STATE}", "probing (standalone)", "", "")',
                                          "{{state}}"),),
              description="The operator's monitors by state; under standalone, the monitors being probed "
                          "(each once, however many locations probe it)."),
        Panel("Reconcile errors", (Query(f"sum(increase({n.RECONCILE_ERRORS_TOTAL}[$__rate_interval])) "
                                         "or vector(0)", "errors"),)),
        Panel("Probe schedule lag", tuple(Query(quantile(q, n.SCHEDULE_LAG_SECONDS, "instance"),
                                                f"{{{{instance}}}} p{q[2:]}") for q in ("0.5", "0.99")), unit="s"),
        Panel("Event-loop lag", tuple(Query(quantile(q, n.EVENT_LOOP_LAG_SECONDS, "instance"),
                                            f"{{{{instance}}}} p{q[2:]}") for q in ("0.5", "0.99")), unit="s"),
        Panel("Probes in flight", (Query(f"sum by (instance) ({n.PROBES_IN_FLIGHT})", "{{instance}}"),)),
        Panel("Probes skipped (overdue)", (Query(f"sum(increase({n.PROBES_SKIPPED_TOTAL}[$__rate_interval])) "
                                                 "or vector(0)", "skipped"),)),
        Panel("Probes per second", (Query(f"sum by (instance) (rate({n.PROBES_TOTAL}[$__rate_interval]))",
                                          "{{instance}}"),), unit="reqps"),
        row("Replicas"),
        Panel("Live replicas seen by each replica", (Query(
            f"max by (instance) ({n.MEMBERS}) or count by (instance) (count by (instance) ({n.TARGET_INFO}))",
            "{{instance}}"),), width=8,
              description="Each replica's count of live Leases (itself included); all should agree. Under "
                          "standalone: one process. A replica seeing fewer than the Deployment's replicas has "
                          "lost contact with the others' Leases (runbook: a replica lost its Lease)."),
        Panel("Monitors owned per replica", (Query(
            f"sum by (instance) ({n.OWNED_MONITORS}) or sum by (instance) (count by (instance, namespace, monitor) "
            f"({n.TARGET_INFO}))", "{{instance}}"),), width=8,
              description="Monitors each replica probes; together they add up to all monitors, each once, "
                          "except that a monitor of several vantages counts at each replica probing it."),
        Panel("Ownership changes", (Query(
            f"sum by (instance, change) (increase({n.OWNERSHIP_CHANGES_TOTAL}[$__rate_interval])) "
            "or on () vector(0)", "{{instance}} {{change}}"),), width=8,
              description="Monitors gained or handed over as replicas come and go (rollouts, restarts, "
                          "expired Leases); a steady stream means replicas are flapping."),
    ]
    return dashboard(uid=UID_OPERATOR, title="route-monitor / Operator health", tags=["route-monitor"],
                     description="The route-monitor operator's own health: monitors, reconciles, scheduling.",
                     variables=[datasource_var()], panels=panels)


DASHBOARDS = {"slo-overview.json": overview, "monitor-detail.json": detail, "operator-health.json": operator}


def render() -> dict[str, str]:
    files = {name: json.dumps(build(), indent=2, sort_keys=False) + "\n" for name, build in DASHBOARDS.items()}
    files["configmaps.yaml"] = configmaps(files)
    return files


NAMESPACE = "monitoring"
"""Of the ConfigMaps: where kube-prometheus-stack's Grafana usually runs; its dashboard sidecar
reads only its own namespace unless ``sidecar.dashboards.searchNamespace`` says otherwise. A
namespace written out, so ``kubectl apply -f`` does not depend on the current context."""


def configmaps(files: dict[str, str]) -> str:
    """One ConfigMap per dashboard, labelled for the Grafana sidecar (``grafana_dashboard: "1"``)."""
    docs = ["# DO NOT EDIT: generated by grafana/build.py from the dashboards beside this file.\n"
            f"# In namespace {NAMESPACE}, where kube-prometheus-stack's Grafana usually runs: its dashboard sidecar\n"
            "# reads its own namespace only (unless sidecar.dashboards.searchNamespace is ALL). Elsewhere:\n"
            "#   kubectl apply -n <grafana's namespace> -f <(sed '/^  namespace: /d' grafana/configmaps.yaml)\n"]
    for name, text in files.items():
        body = "\n".join("    " + line if line else "" for line in text.rstrip("\n").split("\n"))
        docs.append(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: route-monitor-dashboard-"
                    f"{name.removesuffix('.json')}\n  namespace: {NAMESPACE}\n  labels:\n    grafana_dashboard: \"1\"\n"
                    f"    app.kubernetes.io/part-of: route-monitor\n  annotations:\n"
                    f"    grafana_folder: route-monitor\ndata:\n  {name}: |\n{body}\n")
    return "".join(docs)


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--check", action="store_true", help="fail if the committed files are out of date")
    check = args.parse_args(argv).check
    stale = []
    for name, text in render().items():
        path = HERE / name
        if path.exists() and path.read_text() == text:
            continue
        stale.append(name)
        if not check:
            path.write_text(text)
    if check and stale:
        print(f"out of date (run python grafana/build.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
