"""Keep the per-namespace scrape objects (:mod:`route_monitor.operator.outputs.scrapes`) in the cluster.

Written like every generated object (:func:`route_monitor.kube.apply.apply`): a name is
*created* (the API server refuses when anything holds it); a 409 reads what is there, and an
object that is not the operator's (no ``app.kubernetes.io/managed-by: route-monitor`` label) is
left untouched and logged; ours are replaced only when they differ, pinned to the uid and
resourceVersion read; deletes carry a uid precondition.

One replica writes each namespace's objects: the owner of the key ``(namespace, "")`` in the
replicas' rendezvous hashing (:mod:`route_monitor.operator.replicas.sharding`). Every replica computes the
same owner from the same Leases, so there is one writer per namespace without any extra
coordination; when replicas come or go the duty moves with the hash, like monitors do. (Each
replica writing an EndpointSlice of its own would need someone to delete the slice of a replica
that died, i.e. this same election.) The Endpoints and the EndpointSlice list every ready
replica, read from the EndpointSlices Kubernetes keeps for the operator's metrics Service, so
scraping covers all replicas and each answers with the monitors it owns.

A pass runs every ``interval`` seconds, when kicked (replicas changed) and within a second of the
set of namespaces with monitors changing: one list of the metrics Service's EndpointSlices;
writes only for what changed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from alert_rules import names
from route_monitor.kube import ownership
from route_monitor.kube.apierrors import status_code
from route_monitor.kube.apply import Kind, Outcome
from route_monitor.kube.resources import ENDPOINTS, PROMETHEUS_RULE, SERVICE, SERVICE_MONITOR, Resource, endpoint_slice
from route_monitor.kube.rest import Rest
from route_monitor.kube.writer import KubeWriter
from route_monitor.operator.outputs import scrapes
from route_monitor.operator.outputs.kept import KeptObjects
from route_monitor.operator.settings import OperatorSettings
from route_monitor.operator.supervisor import Supervisor
from route_monitor.waits import wait_event

log = logging.getLogger("route_monitor.operator.outputs.scrapesync")  # the logger name in earlier versions' logs
SLICE_VERSIONS = ("v1", "v1beta1")
"""discovery.k8s.io versions, newest first: v1 from Kubernetes 1.21, v1beta1 before (and until 1.25)."""


def slice_resource(version: str) -> Resource:
    return endpoint_slice(version)


def _plural(kind: str) -> str:
    return {"Service": "services", "Endpoints": "endpoints", "EndpointSlice": "endpointslices",
            "ServiceMonitor": "servicemonitors", "PrometheusRule": "prometheusrules"}[kind]


def _name(kind: str) -> str:
    return names.SHARED_RULE_NAME if kind == "PrometheusRule" else names.SCRAPE_OBJECT_NAME


class ScrapeObjects:
    def __init__(self, rest: Rest, kube: KubeWriter, *, operator_namespace: str, metrics_service: str,
                 namespaces: tuple[str, ...] = (), rule_labels: Mapping[str, str] | None = None) -> None:
        self._rest = rest
        self._rule_labels = dict(rule_labels or {})
        self._kube = kube
        self._operator_namespace = operator_namespace
        self._metrics_service = metrics_service
        self._namespaces = namespaces
        self.slice_version: str | None = None
        self._kept = KeptObjects(scrapes.up_to_date)
        """(namespace, kind) -> what was last written there."""
        self.present: set[str] = set()
        """Namespaces holding our scrape objects."""
        self._reported: set[tuple[str, str]] = set()

    def _res(self, kind: str) -> Resource:
        if kind == "EndpointSlice":
            return slice_resource(self.slice_version or SLICE_VERSIONS[0])
        return {"Service": SERVICE, "Endpoints": ENDPOINTS, "ServiceMonitor": SERVICE_MONITOR,
                "PrometheusRule": PROMETHEUS_RULE}[kind]

    async def start(self) -> None:
        """Detect the EndpointSlice version served here; find the namespaces holding our objects."""
        await self._detect_version()
        await self.refresh_present()
        log.info("per-namespace scraping: EndpointSlices discovery.k8s.io/%s; scrape objects in %d namespaces",
                 self.slice_version, len(self.present))

    async def _detect_version(self) -> None:
        for version in SLICE_VERSIONS:
            try:
                await self._rest.get(slice_resource(version).collection(self._operator_namespace), {"limit": "1"})
            except Exception as e:
                if status_code(e) == 404:
                    continue
                raise
            self.slice_version = version
            break
        if self.slice_version is None:
            raise RuntimeError("this cluster serves no EndpointSlice API (discovery.k8s.io v1 or v1beta1)")

    async def refresh_present(self) -> None:
        """Which namespaces hold our ServiceMonitor or shared rule (another replica may have written them)."""
        selector = {"labelSelector": f"{names.LABEL_MANAGED_BY}={names.MANAGED_BY}"}
        present: set[str] = set()
        for ns in self._namespaces or (None,):
            for kind in ("ServiceMonitor", "PrometheusRule"):
                items, _ = await self._rest.list(self._res(kind).collection(ns), selector)
                for obj in items:
                    meta = obj["metadata"]
                    if meta["name"] == _name(kind):
                        present.add(str(meta["namespace"]))
        self.present = present

    async def operator_endpoints(self) -> scrapes.OperatorEndpoints | None:
        selector = {"labelSelector": f"{names.LABEL_SERVICE_NAME}={self._metrics_service}"}
        slices, _ = await self._rest.list(self._res("EndpointSlice").collection(self._operator_namespace), selector)
        return scrapes.operator_endpoints(slices)

    async def ensure(self, namespace: str, endpoints: scrapes.OperatorEndpoints) -> None:
        assert self.slice_version is not None, "start() first"
        self.present.add(namespace)  # (removal deletes only what is ours)
        for obj in scrapes.objects(namespace, endpoints, slice_version=self.slice_version,
                                   rule_labels=self._rule_labels):
            try:
                written = await self._write(namespace, obj)
            except Exception as e:
                if obj["kind"] != "Endpoints" or status_code(e) not in (403, 422):
                    raise
                self._endpoints_refused(namespace, e)
                continue  # the EndpointSlice and ServiceMonitor still serve the endpointslice role
            if not written and obj["kind"] != "PrometheusRule":
                return  # a foreign object holds the scrape objects' name: write nothing after it there

    def _endpoints_refused(self, namespace: str, error: Exception) -> None:
        """Endpoints refused (RBAC of an older install: 403; addresses the API server does not take
        in Endpoints, e.g. loopback: 422): said once per namespace; the other objects are written."""
        key = (namespace, f"Endpoints-{status_code(error)}")
        if key in self._reported:
            return
        self._reported.add(key)
        hint = ("grant endpoints get, create, update, delete (deploy/overlays/openshift-user-workload/"
                "scrape-per-namespace-rbac.yaml)" if status_code(error) == 403 else
                "the API server refuses these addresses in Endpoints")
        log.warning("Endpoints %s/%s not written (%s): a Prometheus discovering with the endpoints role (the "
                    "prometheus-operator default) finds no target in this namespace; %s",
                    namespace, names.SCRAPE_OBJECT_NAME, error, hint)

    def _kind(self, res: Resource) -> Kind:
        """``res`` for :func:`apply`."""
        async def create(obj: Mapping[str, Any]) -> dict[str, Any]:
            return await self._rest.create(res.collection(str(obj["metadata"]["namespace"])), obj)

        async def get(namespace: str, name: str) -> dict[str, Any] | None:
            try:
                return await self._rest.get(res.item(namespace, name), {})
            except Exception as e:
                if status_code(e) == 404:
                    return None
                raise

        async def replace(obj: Mapping[str, Any], uid: str, version: str) -> dict[str, Any]:
            pinned = {**obj, "metadata": {**obj["metadata"], "uid": uid, "resourceVersion": version}}
            meta = obj["metadata"]
            return await self._rest.replace(res.item(str(meta["namespace"]), str(meta["name"])), pinned)

        return Kind(create, get, replace)

    async def _write(self, namespace: str, obj: Mapping[str, Any]) -> bool:
        """Create or update ``obj``; False when a foreign object holds its name (left untouched)."""
        kind, name = str(obj["kind"]), _name(str(obj["kind"]))
        done = await self._kept.write((namespace, kind), obj, self._kind(self._res(kind)))
        if done.outcome is not Outcome.FOREIGN:
            return True
        if done.first_report:
            what = ("the monitors' alerts here read no shared SLI records" if kind == "PrometheusRule"
                    else "this namespace's probe series are not scraped per namespace")
            log.warning("%s %s/%s exists and was not created by route-monitor: left untouched; %s until it is "
                        "renamed or removed", kind, namespace, name, what)
        return False

    async def remove(self, namespace: str) -> None:
        """Delete our scrape objects in ``namespace`` (no monitors left there); never a foreign one."""
        for kind in ("ServiceMonitor", "EndpointSlice", "Endpoints", "Service", "PrometheusRule"):
            self._kept.forget((namespace, kind))
            res = self._res(kind)
            try:
                existing = await self._rest.get(res.item(namespace, _name(kind)), {})
            except Exception as e:
                if status_code(e) == 404:
                    continue
                raise
            if ownership.is_ours(existing):
                await self._kube.delete_at_uid(res, _plural(kind), namespace, _name(kind), ownership.uid_of(existing))
        self.present.discard(namespace)


class ScrapeTargets:
    """The loop: namespaces with monitors -> scrape objects there, for the namespaces this replica owns."""

    def __init__(self, objects: ScrapeObjects, *, monitored: Callable[[], set[str]], owns: Callable[[str], bool],
                 interval: float = 10.0) -> None:
        self.objects = objects
        self._monitored = monitored
        self._owns = owns
        self._interval = interval
        self._kicked = asyncio.Event()
        self._waiting_reported = False

    def kick(self) -> None:
        self._kicked.set()

    async def run(self) -> None:
        await self.objects.start()
        while True:
            kicked = self._kicked.is_set()
            self._kicked.clear()
            try:
                if kicked:  # replicas changed: namespaces may have come to this one
                    await self.objects.refresh_present()
                await self.sync_once()
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.warning("per-namespace scrape objects not synced (retrying in %.0fs): %s", self._interval, e)
            await self._until_due()

    async def _until_due(self) -> None:
        """Until kicked, ``interval`` passed, or the namespaces with monitors changed (checked in
        memory every second: a namespace's first monitor is scraped without waiting a full pass)."""
        seen = self._monitored()
        loop = asyncio.get_running_loop()
        due = loop.time() + self._interval
        while loop.time() < due and not self._kicked.is_set():
            await wait_event(self._kicked, min(1.0, max(0.0, due - loop.time())))
            if self._monitored() != seen:
                return

    async def sync_once(self) -> None:
        monitored = self._monitored()
        mine = sorted(ns for ns in monitored if self._owns(ns))
        endpoints = await self.objects.operator_endpoints() if mine else None
        if mine and endpoints is None:
            if not self._waiting_reported:
                self._waiting_reported = True
                log.warning("per-namespace scraping: the operator's metrics Service has no ready endpoints yet")
        elif endpoints is not None:
            self._waiting_reported = False
            for ns in mine:
                await self.objects.ensure(ns, endpoints)
        for ns in sorted(self.objects.present - monitored):
            if self._owns(ns):
                await self.objects.remove(ns)


def for_supervisor(rest: Rest, kube: KubeWriter, settings: OperatorSettings,
                   supervisor: Supervisor) -> ScrapeTargets:
    """The loop for the operator: namespaces of the supervisor's monitors, owned by the owner of
    ``(namespace, "")`` among the live replicas."""
    objects = ScrapeObjects(rest, kube, operator_namespace=settings.lease_namespace,
                            metrics_service=settings.metrics_service, namespaces=settings.namespaces,
                            rule_labels=dict(settings.rules.object_labels))
    return ScrapeTargets(objects, monitored=lambda: {ns for ns, _ in supervisor.world.monitors},
                         owns=lambda ns: supervisor.shard.owns((ns, "")))
