"""A generated RouteMonitor the world saw at an older version than the API server has (issue 16's
CI failure: a status written while the operator's RouteMonitor watch was down, then an annotation
change refused with 409 and left for a minute's backoff): the reconciler reads the monitor afresh
and applies the change in the same reconcile, against the real apiserver.

The world is fed by hand here (no watch), so the watch event that would make the world current
never comes: what the reconcile does without it is what is under test.
"""

from __future__ import annotations

import asyncio

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import Namespace
from lightkube.types import PatchType
from prometheus_client import CollectorRegistry

from alert_rules import names
from route_monitor.kube import kubeconfig as kc
from route_monitor.kube import rest, transport
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.kube.writer import KubeWriter
from route_monitor.operator.reconcile import Reconciler
from route_monitor.operator.settings import OperatorSettings
from route_monitor.operator.world import World
from tests.support.cluster import Cluster
from tests.support.engine import RecordingEngine
from tests.support.operator import admin_client, annotations, route
from tests.support.resources import Route, RouteMonitor

pytestmark = pytest.mark.cluster


def _observe_route(world: World, admin: Client, ns: str, name: str) -> None:
    world.observe("route", "MODIFIED", admin.get(Route, name, namespace=ns).to_dict())  # type: ignore[no-untyped-call]


def _objective(admin: Client, ns: str, name: str) -> str:
    stored = admin.get(RouteMonitor, name, namespace=ns).to_dict()  # type: ignore[no-untyped-call]
    return str(stored["spec"]["slo"]["availability"])


def test_a_changed_annotation_is_applied_at_once_though_the_world_holds_an_older_monitor(cluster: Cluster) -> None:
    ns = "conflict"
    admin = admin_client(cluster)
    admin.create(Namespace.from_dict({"metadata": {"name": ns}}))
    admin.create(route(ns, "web", "web.example.com", annotations(slo="99.9")))

    async def go() -> int:
        config = kc.from_file(cluster.admin_kubeconfig)
        pool = transport.for_config(config)
        metrics = OperatorMetrics(CollectorRegistry())
        direct = rest.for_config(config, pool.session)
        assert direct is not None
        kube = KubeWriter(metrics, rest=direct)
        world = World()
        reconciler = Reconciler(world=world, settings=OperatorSettings(), kube=kube, engine=RecordingEngine(),
                                metrics=metrics, schedule=lambda key, delay: None)
        try:
            _observe_route(world, admin, ns, "web")
            await reconciler.reconcile((ns, "web"))  # creates the monitor; the world holds its answer
            assert _objective(admin, ns, "web") == "99.9"
            # a status written whose watch event has not come: the world's version is behind
            admin.patch(RouteMonitor.Status, "web", {"status": {"url": "https://elsewhere/"}}, namespace=ns,
                        patch_type=PatchType.MERGE)
            admin.patch(Route, "web", {"metadata": {"annotations": {names.ANN_SLO: "99.5"}}}, namespace=ns,
                        patch_type=PatchType.MERGE)
            _observe_route(world, admin, ns, "web")
            await reconciler.reconcile((ns, "web"))  # raised RetryLater before: "its watch event decides"
            return len(world.monitors)
        finally:
            await pool.aclose()

    known = asyncio.run(go())
    assert _objective(admin, ns, "web") == "99.5"
    assert known == 1
