"""The operator's parts, built in one place and run until SIGTERM/SIGINT.

Data flow: watches (one list+watch per kind, :mod:`~route_monitor.operator.watches`) -> the world
-> the supervisor's work queue -> one reconcile per monitor -> the probe engine and the writes
(:class:`~route_monitor.kube.writer.KubeWriter`: create, then replace pinned to the version read;
status through the status writer); results come back from the engine to the supervisor. Beside
them: the Lease membership of replicas, the per-namespace scrape objects or the shared rule
(:mod:`~route_monitor.operator.outputs.sharedrule`), the SLO read-back, the
canary, ``/metrics`` + ``/readyz`` on the metrics port and kopf's ``/healthz`` on the health port
(kopf runs the lifecycle only: no resource handlers).

Each part gets its collaborators as constructor arguments here; the few that point back (the
engine's results to the supervisor, membership changes to the supervisor and the scrape objects)
are closures over parts built later, since the parts form a cycle. Shutdown hands the replica's
monitors over first (its Lease is deleted), then cancels the loops, then closes the engine.
``route-monitor operator`` (:mod:`route_monitor.cli.commands.operator`) parses the flags into
:class:`~route_monitor.operator.settings.OperatorSettings` and calls :func:`serve`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket

import kopf
from prometheus_client import CollectorRegistry

from route_monitor.kube import patience, rest, transport
from route_monitor.kube.kubeconfig import KubeConfig
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.kube.writer import KubeWriter
from route_monitor.operator import slo_loop
from route_monitor.operator.credentials import OperatorCredentials
from route_monitor.operator.handlers import build_registry, kopf_settings
from route_monitor.operator.outputs import scrapesync, sharedrule
from route_monitor.operator.refwatch import ReferenceWatches
from route_monitor.operator.replicas import location
from route_monitor.operator.replicas.membership import Membership, MembershipSettings
from route_monitor.operator.replicas.sharding import Shard
from route_monitor.operator.settings import OperatorSettings
from route_monitor.operator.supervisor import Supervisor
from route_monitor.operator.watches import watch_all
from route_monitor.probe.canary import Canary, blind_gauge
from route_monitor.probe.engine import ProbeEngine, settle_heap
from route_monitor.probe.httpserver import MetricsServer
from route_monitor.probe.metrics import ProbeMetrics
from route_monitor.probe.prober import Prober
from route_monitor.probe.result import ProbeResult
from route_monitor.probe.tls.contexts import TLSContexts
from route_monitor.slo.state import SloStatus

log = logging.getLogger("route_monitor.operator")


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
    owner = supervisor
    scrape_targets = scrapesync.for_supervisor(direct, kube, settings, supervisor) \
        if settings.scrape_per_namespace else None
    shared_rule = None if settings.scrape_per_namespace else sharedrule.for_operator(
        kube, namespace=settings.lease_namespace, labels=dict(settings.rules.object_labels),
        owns=lambda key: owner.shard.owns(key))

    def membership_changed(before: Shard, after: Shard) -> None:
        supervisor.membership_changed(before, after)
        if scrape_targets is not None:
            scrape_targets.kick()
        if shared_rule is not None:
            shared_rule.kick()

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
        if shared_rule is not None:
            tasks.append(asyncio.create_task(shared_rule.run(), name="shared rule"))
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
