"""``route-monitor operator``: run in a cluster (Contract 5).

Wires the parts together: watches (one list+watch per kind, ``operator.watches``) -> supervisor
(reconciles) -> probe engine, Kubernetes writes (as ``route-monitor``: created, then replaced
pinned to the version read), ``/metrics`` + ``/readyz`` on the metrics port and kopf's
``/healthz`` on the health port (kopf runs the lifecycle only).
Credentials: the in-cluster service account, else ``$KUBECONFIG`` / ``~/.kube/config``. Stops
cleanly on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import socket
from collections.abc import Mapping

import kopf
from prometheus_client import CollectorRegistry

from route_monitor import logs
from route_monitor.cli import cliargs, location
from route_monitor.cli.canaryflag import ApiServer, CanaryFlagError, canary_settings, in_cluster
from route_monitor.cli.commands.rules import rule_defaults
from route_monitor.cli.httpserver import MetricsServer
from route_monitor.kube import patience, rest, transport
from route_monitor.kube.kubeconfig import KubeConfig
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.kube.writer import KubeWriter
from route_monitor.operator import slo_loop
from route_monitor.operator.credentials import OperatorCredentials
from route_monitor.operator.handlers import build_registry, kopf_settings
from route_monitor.operator.outputs import scrapesync
from route_monitor.operator.refwatch import ReferenceWatches
from route_monitor.operator.replicas.membership import Membership, MembershipSettings
from route_monitor.operator.replicas.sharding import Shard
from route_monitor.operator.settings import OperatorSettings
from route_monitor.operator.supervisor import Supervisor
from route_monitor.operator.watches import watch_all
from route_monitor.probe.canary import Canary, blind_gauge
from route_monitor.probe.engine import ProbeEngine, settle_heap
from route_monitor.probe.metrics import ProbeMetrics
from route_monitor.probe.prober import Prober
from route_monitor.probe.result import ProbeResult
from route_monitor.probe.tls.contexts import TLSContexts
from route_monitor.probe.tls.trust import TrustError, contexts_from_env
from route_monitor.slo import promapi
from route_monitor.slo.state import SloStatus

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


async def serve(settings: OperatorSettings, *, tls: TLSContexts | None = None, config: KubeConfig | None = None) -> int:
    registry = CollectorRegistry()
    operator_metrics = OperatorMetrics(registry)
    config, pool = transport.load() if config is None else (config, transport.for_config(config))
    supervisor: Supervisor | None = None

    def on_result(result: ProbeResult) -> None:
        if supervisor is not None:
            supervisor.on_result(result)

    membership: Membership | None = None
    show_blind = blind_gauge(registry, settings.member or socket.gethostname())

    def blind_changed(blind: bool) -> None:
        show_blind(blind)
        if membership is not None:
            membership.set_blind(blind)

    direct = rest.for_config(config, pool.session, pool.watch_session, pools=pool)
    if direct is None:
        raise rest.UnsupportedUser(rest.unsupported_user(config) or "no usable credentials")
    where, how = await location.resolve(settings.location, os.environ.get("NODE_NAME"),
                                        lambda path: direct.get(path, {}))
    log.info("location: %s (%s)", where, how)
    probe_metrics = ProbeMetrics(registry, location=where)
    prober = Prober(tls=tls)
    canary = None if settings.canary is None else Canary(settings.canary, prober=prober, on_blind=blind_changed)
    engine = ProbeEngine(metrics=probe_metrics, max_concurrency=settings.max_concurrency,
                         on_result=on_result, prober=prober, canary=canary)
    kube = KubeWriter(operator_metrics, instance=settings.member, rest=direct)

    def references_changed(keys: set[tuple[str, str]]) -> None:
        if supervisor is not None:
            for key in keys:
                supervisor.enqueue(key)

    references = ReferenceWatches(direct, on_change=references_changed)
    slo_states: dict[tuple[str, str], SloStatus] = {}
    supervisor = Supervisor(settings=settings, kube=kube, engine=engine, metrics=operator_metrics,
                            member=settings.member, credentials=OperatorCredentials(references),
                            slo_of=None if settings.prometheus is None else slo_states.get)
    scrape_targets = scrapesync.for_supervisor(direct, kube, settings, supervisor) \
        if settings.scrape_per_namespace else None

    def membership_changed(before: Shard, after: Shard) -> None:
        supervisor.membership_changed(before, after)
        if scrape_targets is not None:
            scrape_targets.kick()

    membership = None if settings.member is None else Membership(
        leases=kube.leases, metrics=operator_metrics, on_change=membership_changed,
        settings=MembershipSettings(member=settings.member, namespace=settings.lease_namespace, location=where))
    slo = slo_loop.start(settings, supervisor, registry, slo_states)
    ready = asyncio.Event()
    server = MetricsServer(registry, *settings.metrics_address, ready=ready.is_set,
                           render=probe_metrics.exposition, render_namespace=probe_metrics.exposition_of)
    server.start()
    await engine.start()
    tasks: list[asyncio.Task[None]] = []

    async def stop_work() -> None:
        if membership is not None and tasks:  # hand over first: the others take this replica's monitors at once
            await membership.leave()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        tasks.clear()
        await references.close()
        await slo.stop()
        await engine.close()

    log.info("route-monitor operator: %s, url targets %s, /metrics on %s, /healthz on :%d, %s",
             "namespaces " + ", ".join(settings.namespaces) if settings.namespaces else "all namespaces",
             "allowed" if settings.allow_url_targets else "refused", server.url, settings.health_port,
             f"member {settings.member} (leases in {settings.lease_namespace})" if settings.member
             else "one replica (no --member-name or $POD_NAME: no Lease)")
    log.info("canary: %s", f"{settings.canary.url} every {settings.canary.every:g}s" if settings.canary
             else "none (--canary-url none): every network failure of a probe counts")
    world = supervisor.world
    watches = watch_all(direct, settings.namespaces, observe=supervisor.observe,
                        known=lambda kind: list(world.objects[kind]))
    try:
        await supervisor.prime(watches)  # load the world first: nothing is reconciled before the loop starts
        settle_heap()  # the world is loaded: keep full GC passes from stalling the loop
        if membership is not None:
            # join only now, ready to probe its share at once: the others hand over the moment
            # they see this Lease, so a replica still loading must not hold one yet
            await patience.until_answered(f"taking the Lease of member {settings.member}", membership.join)
            supervisor.shard = membership.shard
            tasks.append(asyncio.create_task(membership.run(), name="membership"))
        supervisor.start_owned()
        tasks.append(asyncio.create_task(supervisor.run(), name="supervisor"))
        slo.begin()
        if scrape_targets is not None:
            tasks.append(asyncio.create_task(scrape_targets.run(), name="per-namespace scrape objects"))
        for watch in watches:  # from their start-up lists' versions
            tasks.append(asyncio.create_task(watch.run(), name=f"{watch.api.kind_name} watch"))
        await kopf.operator(
            registry=build_registry(supervisor, on_cleanup=stop_work),
            settings=kopf_settings(), standalone=True,
            clusterwide=not settings.namespaces, namespaces=list(settings.namespaces), ready_flag=ready,
            liveness_endpoint=f"http://0.0.0.0:{settings.health_port}/healthz",
        )
    finally:
        await stop_work()
        server.stop()
        await pool.aclose()
    return 0


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
    return asyncio.run(serve(settings, tls=tls, config=config))
