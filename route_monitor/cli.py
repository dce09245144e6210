"""Command line (Contract 5). Each subcommand lives in ``route_monitor.commands.<name>``
and exposes ``run(args) -> int``; they are imported lazily so ``--help`` stays fast."""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

import prometheus_client

from alert_rules import durations, tiles
from alert_rules.model import DEFAULT_EVALUATION_MS
from route_monitor import __version__


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected HOST:PORT, e.g. 127.0.0.1:8080")
    return (host.strip("[]") or "0.0.0.0", int(port))


_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not _LABEL_KEY.match(key) or not _LABEL_VALUE.match(value):
        raise argparse.ArgumentTypeError(f"{text[:100]!r}: expected KEY=VALUE with a Kubernetes label key and value, "
                                         "e.g. release=kube-prometheus-stack")
    return (key, value)


def _url(text: str) -> str:
    if not re.match(r"^https?://[^\s/@]+(/\S*)?$", text):
        shown = "the URL" if "@" in text else repr(text[:100])  # never echo credentials
        raise argparse.ArgumentTypeError(f"{shown}: expected an http(s) URL without credentials")
    return text


def _tile(text: str) -> int:
    try:
        return tiles.parse(text)
    except tiles.TileError as e:
        raise argparse.ArgumentTypeError(e.reason) from None


def _tile_flag(parser: argparse.ArgumentParser) -> None:
    """``standalone`` and ``rules`` only: the operator's SLO read-back sums default tiles."""
    parser.add_argument("--tile", type=_tile, default=tiles.DEFAULT_TILE_MS, metavar="DURATION",
                        help="length of the tiles the long windows are summed from, and their rule group's "
                             "interval (default 5m). For test and demo stacks probing every few seconds: 30s "
                             "opens tickets within a minute or two, at ten times the evaluation cost")


def _rule_flags(parser: argparse.ArgumentParser) -> None:
    """Installation-wide settings of generated rules, shared by ``operator`` and ``rules``."""
    parser.add_argument("--runbook-base-url", type=_url, metavar="URL",
                        help="where the alerts' runbooks live (default: the project's docs/runbooks.md)")
    parser.add_argument("--dashboard-base-url", type=_url, metavar="URL",
                        help="Grafana's base URL: every alert then carries a dashboard_url to monitor-detail")
    parser.add_argument("--rule-label", type=_label, action="append", default=[], metavar="KEY=VALUE",
                        help="label every generated PrometheusRule (repeatable), e.g. release=kube-prometheus-stack "
                             "for kube-prometheus-stack's default rule selector")


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number of at least 1")
    return int(text)


def _share(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        value = Decimal(-1)
    if not value.is_finite() or not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a share above 0 and at most 1, e.g. 0.5")
    return value


def _hold(text: str) -> str:
    try:
        durations.parse_ms(text)
    except durations.DurationError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e}") from None
    return text


def _evaluation(text: str) -> int:
    try:
        ms = durations.parse_ms(text)
    except durations.DurationError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e}") from None
    if not 1000 <= ms <= 300_000:
        raise argparse.ArgumentTypeError(f"{text!r}: expected Prometheus' evaluation interval, 1s to 5m")
    return ms


def _path_flags(parser: argparse.ArgumentParser) -> None:
    """Contract 11: when a shared path counts as down (``rules --operator`` and ``standalone``)."""
    parser.add_argument("--shared-path-min-monitors", type=_positive_int, default=3, metavar="K",
                        help="a path is down when at least K of its monitors fail together (default 3)")
    parser.add_argument("--shared-path-min-ratio", type=_share, default=Decimal("0.5"), metavar="F",
                        help="... and they are at least this share of its monitors (default 0.5)")
    parser.add_argument("--evaluation-interval", type=_evaluation, default=DEFAULT_EVALUATION_MS, metavar="DURATION",
                        help="Prometheus' evaluation interval for these rules (default 30s): a monitor's page waits "
                             "about one probe interval plus one evaluation, so that a shared outage is seen first")
    parser.add_argument("--shared-path-hold", type=_hold, default="5m", metavar="DURATION",
                        help="RouteMonitorSharedPathDown stays open this long after the path is up again, so a "
                             "short flap stays one incident (default 5m)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="route-monitor", description="Blackbox SLO monitoring for "
                                "Kubernetes/OpenShift Routes and Services.")
    p.add_argument("--version", action="version", version=f"route-monitor {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    op = sub.add_parser("operator",
                        help="run in a cluster: watch Routes, Services, Ingresses, HTTPRoutes and RouteMonitors")
    op.add_argument("--namespace", "-n", action="append", default=[], metavar="NS",
                    help="watch only this namespace (repeatable); default: all namespaces")
    op.add_argument("--metrics-port", type=int, default=8080, help="port of /metrics (default 8080)")
    op.add_argument("--health-port", type=int, default=8081,
                    help="port of the /healthz liveness endpoint (kopf's; default 8081)")
    op.add_argument("--allow-url-targets", action="store_true",
                    help="also probe RouteMonitors whose target is a plain URL (off by default)")
    op.add_argument("--max-concurrency", type=int, default=500, help="probes in flight at most (default 500)")
    op.add_argument("--cluster-domain", default="cluster.local",
                    help="cluster DNS domain of Service targets' URLs (default cluster.local)")
    _rule_flags(op)
    op.add_argument("--log-format", choices=("text", "json"), default="text",
                    help="text lines (default) or one JSON object per line with namespace/monitor fields")
    op.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info",
                    help="default info: start-up, replicas, each monitor's transitions")
    op.add_argument("--member-name", metavar="NAME",
                    help="this replica's name among replicas sharing the monitors through Leases "
                         "(default: $POD_NAME; neither set: one replica, no Lease)")
    op.add_argument("--lease-namespace", metavar="NS",
                    help="namespace of the replicas' Leases (default: $POD_NAMESPACE, else route-monitor)")
    op.add_argument("--scrape-per-namespace", action="store_true",
                    help="keep a Service, EndpointSlice and ServiceMonitor in each namespace with monitors, "
                         "scraping /metrics?namespace=NS (for Prometheus stacks that enforce namespaces, e.g. "
                         "OpenShift user-workload monitoring)")
    op.add_argument("--prometheus-url", metavar="URL",
                    help="read each monitor's SLO from this Prometheus (or Thanos querier) every 5 minutes "
                         "into status.slo and the BudgetExhausted condition")
    op.add_argument("--prometheus-bearer-token-file", metavar="FILE",
                    help="send the token in FILE (read for every query) to --prometheus-url")
    op.add_argument("--prometheus-ca-file", metavar="FILE", help="trust these CA certificates for --prometheus-url")
    op.add_argument("--prometheus-timeout", type=float, default=30.0, metavar="SECONDS",
                    help="timeout of one query to --prometheus-url (default 30)")
    op.add_argument("--prometheus-interval", type=float, default=300.0, metavar="SECONDS",
                    help="seconds between two reads of the SLOs (default 300)")

    st = sub.add_parser("standalone", help="probe monitors from YAML files, no cluster")
    st.add_argument("paths", nargs="+", metavar="PATH",
                    help="YAML file or folder of RouteMonitor, Route, HTTPRoute, Gateway, Ingress, Service manifests")
    st.add_argument("--metrics-address", type=_address, default=("127.0.0.1", 8080), metavar="HOST:PORT",
                    help="where /metrics is served (default 127.0.0.1:8080)")
    st.add_argument("--rules-dir", metavar="DIR", help="write the generated Prometheus rule files here")
    st.add_argument("--max-concurrency", type=int, default=500, help="probes in flight at most (default 500)")
    st.add_argument("--service-url", action="append", default=[], metavar="NAMESPACE/NAME=URL",
                    help="probe this URL for an annotated Service instead of its cluster DNS name "
                         "(repeatable; the monitor's path still applies)")
    st.add_argument("--cluster-domain", default="cluster.local",
                    help="cluster DNS domain of Service URLs (default cluster.local)")
    _tile_flag(st)
    _path_flags(st)

    ru = sub.add_parser("rules", help="print the generated recording and alerting rules")
    ru.add_argument("paths", nargs="*", metavar="PATH")
    ru.add_argument("--operator", action="store_true",
                    help="print route-monitor's own alerts (operator down, reconcile errors, lag...) instead")
    _rule_flags(ru)
    _tile_flag(ru)
    _path_flags(ru)
    ru.add_argument("--job", default="route-monitor",
                    help="with --operator: the scrape job of route-monitor's /metrics (default route-monitor)")
    ru.add_argument("--format", choices=("prometheus", "prometheusrule"), default="prometheus",
                    help="plain Prometheus rule groups (default) or PrometheusRule objects")
    ru.add_argument("--tests", metavar="DIR", help="also write promtool test fixtures for the generated rules here")
    ru.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")

    ch = sub.add_parser("check", help="validate manifests and explain what each monitor's alerts mean")
    ch.add_argument("paths", nargs="+", metavar="PATH")

    do = sub.add_parser("doctor", help="read the cluster: will the generated rules and ServiceMonitor be loaded?")
    do.add_argument("--operator-namespace", default="route-monitor", metavar="NS",
                    help="where route-monitor runs (default route-monitor)")

    rp = sub.add_parser("report", help="SLO report over a calendar month or a date range, from Prometheus")
    rp.add_argument("--prometheus-url", required=True, metavar="URL")
    rp.add_argument("--prometheus-bearer-token-file", metavar="FILE")
    rp.add_argument("--prometheus-ca-file", metavar="FILE")
    rp.add_argument("--prometheus-timeout", type=float, default=60.0, metavar="SECONDS")
    rp.add_argument("--month", metavar="YYYY-MM", help="a calendar month (default: the previous month)")
    rp.add_argument("--from", dest="start", metavar="DATE", help="start (YYYY-MM-DD or an ISO date-time)")
    rp.add_argument("--to", dest="end", metavar="DATE",
                    help="end (YYYY-MM-DD: included, up to the next midnight; or an ISO date-time)")
    rp.add_argument("--timezone", default="UTC", metavar="TZ",
                    help="IANA zone in which dates and months are taken (default UTC)")
    rp.add_argument("--namespace", "-n", action="append", default=[], metavar="NS",
                    help="only monitors in this namespace (repeatable)")
    rp.add_argument("--format", choices=("markdown", "csv", "json"), default="markdown")

    de = sub.add_parser("demo", help="built-in local targets, real engine, live view; no cluster")
    de.add_argument("--metrics-address", type=_address, default=("127.0.0.1", 8080), metavar="HOST:PORT")
    de.add_argument("--duration", type=float, default=0, help="stop after this many seconds (default: until Ctrl-C)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # process-wide, before any metric exists: no `_created` series (Prometheus does not use them,
    # and they add a series to every counter and histogram on /metrics)
    prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
    module = importlib.import_module(f"route_monitor.commands.{args.command}")
    try:
        return int(module.run(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
