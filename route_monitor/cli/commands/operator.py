"""``route-monitor operator``: run in a cluster.

Its flags, the settings they make (every error names the flag), the TLS trust and the Kubernetes
credentials (the in-cluster service account, else ``$KUBECONFIG`` / ``~/.kube/config``), checked
before anything starts; then :func:`route_monitor.operator.app.serve` builds the parts and runs
them until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
from collections.abc import Mapping

from route_monitor import logs
from route_monitor.cli import cliargs
from route_monitor.cli.canaryflag import ApiServer, CanaryFlagError, canary_settings, in_cluster
from route_monitor.cli.commands.rules import rule_defaults
from route_monitor.kube import rest, transport
from route_monitor.kube.kubeconfig import KubeConfig
from route_monitor.operator import app
from route_monitor.operator.replicas import location
from route_monitor.operator.settings import OperatorSettings
from route_monitor.probe.tls.trust import TrustError, contexts_from_env
from route_monitor.slo import promapi

log = logging.getLogger("route_monitor.operator")


def add_arguments(op: argparse.ArgumentParser) -> None:
    op.add_argument("--namespace", "-n", action="append", default=[], metavar="NS",
                    help="watch only this namespace (repeatable); default: all namespaces")
    cliargs.metrics_address_flag(op, ":8080")
    op.add_argument("--metrics-port", type=cliargs.port, metavar="PORT",
                    help="deprecated: use --metrics-address :PORT")
    op.add_argument("--health-port", type=cliargs.port, default=8081, metavar="PORT",
                    help="port of the /healthz liveness endpoint (kopf's; default 8081)")
    op.add_argument("--allow-url-targets", action="store_true",
                    help="also probe RouteMonitors whose target is a plain URL (off by default)")
    op.add_argument("--max-concurrency", type=cliargs.positive_int, default=500, metavar="N",
                    help="probes in flight at most (default 500)")
    op.add_argument("--cluster-domain", default="cluster.local", metavar="DOMAIN",
                    help="cluster DNS domain of Service targets' URLs (default cluster.local)")
    cliargs.rule_flags(op)
    cliargs.log_flags(op)
    op.add_argument("--member-name", metavar="NAME",
                    help="this replica's name among replicas sharing the monitors through Leases "
                         "(default: $POD_NAME; neither set: one replica, no Lease)")
    op.add_argument("--lease-namespace", metavar="NS",
                    help="namespace of the replicas' Leases (default: $POD_NAMESPACE, else route-monitor)")
    location.add_flag(op, "the zone of the Node named by $NODE_NAME, else cluster")
    cliargs.canary_flag(op, "the kube-apiserver's /readyz ($KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT in a "
                            "pod, else the kubeconfig's server)")
    op.add_argument("--scrape-per-namespace", action="store_true",
                    help="keep a Service, EndpointSlice and ServiceMonitor in each namespace with monitors, "
                         "scraping /metrics?namespace=NS (for Prometheus stacks that enforce namespaces, e.g. "
                         "OpenShift user-workload monitoring)")
    op.add_argument("--prometheus-url", metavar="URL",
                    help="read each monitor's SLO from this Prometheus (or Thanos querier) every "
                         "--prometheus-interval into status.slo and the BudgetExhausted condition")
    op.add_argument("--prometheus-bearer-token-file", metavar="FILE",
                    help="send the token in FILE (read for every query) to --prometheus-url")
    op.add_argument("--prometheus-ca-file", metavar="FILE", help="trust these CA certificates for --prometheus-url")
    op.add_argument("--prometheus-timeout", type=cliargs.seconds, default=30.0, metavar="DURATION",
                    help="timeout of one query to --prometheus-url, e.g. 10s (default 30s; a bare number is seconds)")
    op.add_argument("--prometheus-interval", type=cliargs.seconds, default=300.0, metavar="DURATION",
                    help="time between two reads of the SLOs, e.g. 1m (default 5m; a bare number is seconds)")


def metrics_address(args: argparse.Namespace) -> tuple[str, int]:
    """``--metrics-address``, or the deprecated ``--metrics-port`` (all interfaces) when given."""
    port = getattr(args, "metrics_port", None)
    return ("0.0.0.0", port) if port is not None else tuple(args.metrics_address)


def settings_from_args(args: argparse.Namespace, env: Mapping[str, str] = os.environ) -> OperatorSettings:
    prometheus, slo_interval = _prometheus(args)
    return OperatorSettings(namespaces=tuple(args.namespace), allow_url_targets=args.allow_url_targets,
                            metrics_address=metrics_address(args), health_port=args.health_port,
                            max_concurrency=args.max_concurrency, cluster_domain=args.cluster_domain,
                            rules=rule_defaults(args),
                            member=args.member_name or env.get("POD_NAME") or None,
                            scrape_per_namespace=args.scrape_per_namespace,
                            lease_namespace=args.lease_namespace or env.get("POD_NAMESPACE") or "route-monitor",
                            prometheus=prometheus, slo_interval=slo_interval, location=args.location)


def _prometheus(args: argparse.Namespace) -> tuple[promapi.PromSettings | None, float]:
    """``--prometheus-*``: where to read SLOs back from (Contract 10) and how often; errors name the option."""
    interval = float(getattr(args, "prometheus_interval", 300.0))
    if not interval > 0:
        raise promapi.InvalidSettings("--prometheus-interval: must be a positive number of seconds")
    if not getattr(args, "prometheus_url", None):
        return None, interval
    return promapi.parse_settings(args.prometheus_url, bearer_token_file=args.prometheus_bearer_token_file,
                                  ca_file=args.prometheus_ca_file, timeout=args.prometheus_timeout), interval


def apiserver_of(config: KubeConfig, env: Mapping[str, str] = os.environ) -> ApiServer | None:
    """The kube-apiserver as the default canary sees it: its Service in a pod, else the kubeconfig's server."""
    found = in_cluster(env)
    if found is not None:
        return found
    cluster = config.cluster
    ca_file = config.abs_file(cluster.ca_file) if cluster.ca_file else None  # relative to the kubeconfig's folder
    return ApiServer(cluster.server, ca_file, cluster.ca_data, cluster.insecure)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "metrics_port", None) is not None:
        cliargs.warn("operator", f"--metrics-port is deprecated: use --metrics-address :{args.metrics_port}")
    try:
        settings = settings_from_args(args)
    except promapi.InvalidSettings as e:
        cliargs.error("operator", str(e))
        return cliargs.USAGE
    logs.configure(fmt=args.log_format, level=args.log_level)
    try:
        tls, extra_trust = contexts_from_env(os.environ)
    except TrustError as e:
        log.error("%s", e)
        return 2
    for warning, line in extra_trust.notes():
        log.log(logging.WARNING if warning else logging.INFO, "%s", line)
    if (note := transport.proxy_note(os.environ)) is not None:
        log.info("%s", note)
    try:
        config, _ = transport.load()
    except transport.UnusableConfig as e:
        log.error("the Kubernetes configuration cannot be used: %s", e)
        return 2
    if (why := rest.unsupported_user(config)) is not None:
        log.error("the Kubernetes configuration cannot be used: %s", why)
        return 2
    try:
        settings = dataclasses.replace(settings, canary=canary_settings(args.canary_url, apiserver_of(config)))
    except CanaryFlagError as e:
        log.error("%s", e)
        return 2
    return asyncio.run(app.serve(settings, tls=tls, config=config))
