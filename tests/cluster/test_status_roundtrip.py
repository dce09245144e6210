"""Every status field the operator writes survives the real API server (issue 21, item 6).

The API server prunes what the CRD's schema does not declare and keeps, under a merge patch,
what the patch does not mention: ``lastProbe.message`` was written and never stored. Here the
operator's own reconciler and status writer, writing through the operator's RBAC user to the real
kube-apiserver, are driven through the states a monitor goes through: warming up, probing,
failing with a message (longer than the bound, in several scripts), inside a maintenance window
with another window to come, paused, with its SLO read back, the windows removed, refused by the
operator's validation, its target gone. After each write the status read back must equal the one
the writer sent (nulls being deletions): nothing pruned, nothing left over, nothing reformatted.

The fields compared are whatever the writer sent, not a list kept here; the only list is the
CRD's own schema, and every field it declares must have been sent at least once, so a state
missing from the drive (or a field added to the CRD and never written) fails too.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace
from lightkube.types import PatchType
from prometheus_client import CollectorRegistry

from alert_rules import names
from route_monitor.kube import kubeconfig as kc
from route_monitor.kube import rest, transport
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.kube.writer import KubeWriter
from route_monitor.operator import status
from route_monitor.operator.reconcile import Reconciler
from route_monitor.operator.settings import OperatorSettings
from route_monitor.operator.world import World
from route_monitor.probe.result import Exclusion, FailureReason, ProbeResult
from route_monitor.slo.state import SloStatus, SloValues
from tests.support.cluster import ROOT, Cluster
from tests.support.engine import RecordingEngine
from tests.support.operator import admin_client
from tests.support.resources import RouteMonitor

pytestmark = pytest.mark.cluster

NS, NAME = "status-roundtrip", "web"
URL = "http://127.0.0.1:9/"
SCHEMA = yaml.safe_load((ROOT / "crds" / "routemonitor.yaml").read_text())["spec"]["versions"][0]["schema"]
LONG_DETAIL = "the server refused the client certificate: " + "証明書が拒否されました; Zertifikat abgelehnt. " * 40


def utc(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def result(success: bool, *, reason: FailureReason | None = None, detail: str = "",
           excluded: Exclusion | None = None) -> ProbeResult:
    return ProbeResult((NS, NAME), URL, time.time(), success, reason, 0.01, 200 if success else None, detail,
                       excluded=excluded)


@dataclass(frozen=True)
class Step:
    what: str
    result: ProbeResult | None
    spec: Mapping[str, Any] = field(default_factory=dict)
    """A merge patch of the spec before the reconcile (null deletes)."""
    slo: SloStatus | None = None


def steps(now: float) -> list[Step]:
    window = [{"start": utc(now - 600), "end": utc(now + 3600)}, {"schedule": "0 3 * * *", "duration": "1h"}]
    slo = SloStatus("30d", "BudgetRemaining", "availability 99.9500% over 30d (objective 99.9%): 50.0% of the "
                    "error budget left", SloValues(0.9995, 0.5, 0.42, uptime_1h=0.9996, reachability_1h=0.9871,
                                                      reachability=0.9988), now)
    return [
        Step("warming up, failing", result(False, reason=FailureReason.HTTP_STATUS, detail="HTTP 503",
                                           excluded=Exclusion.WARMUP)),
        Step("probing, counted", result(True)),
        Step("failing with a long message", result(False, reason=FailureReason.TLS_ERROR, detail=LONG_DETAIL)),
        Step("inside a maintenance window, another to come", result(True, excluded=Exclusion.MAINTENANCE),
             spec={"maintenance": window}),
        Step("paused, probed from two locations", result(False, reason=FailureReason.CONNECTION_REFUSED,
                                                        detail="connection refused", excluded=Exclusion.PAUSED),
             spec={"paused": True, "probe": {"interval": "30s", "vantages": 2}}),
        Step("SLO read back", result(False, reason=FailureReason.CONNECTION_REFUSED, detail="connection refused",
                                     excluded=Exclusion.PAUSED), slo=slo),
        Step("windows removed, pause lifted", result(True), spec={"maintenance": None, "paused": None}, slo=slo),
        Step("behind a declared shared path", result(True), spec={"paths": ["cdn:edge"]}, slo=slo),
        Step("refused by the operator's validation", result(True), spec={"probe": {"timeout": "2m"}}, slo=slo),
        Step("target gone", result(True), spec={"probe": None, "target": {"url": None, "route": {"name": "gone"}}},
             slo=slo),
    ]


def without_nulls(value: Any) -> Any:
    """What a merge patch leaves: a null is a deletion."""
    if isinstance(value, Mapping):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def paths(value: Any, prefix: str = "") -> set[str]:
    """Leaf paths of a status (``lastProbe.message``, ``conditions[].reason``)."""
    if isinstance(value, Mapping):
        return set().union(*(paths(v, f"{prefix}.{k}" if prefix else k) for k, v in value.items()), set())
    if isinstance(value, list):
        return set().union(*(paths(v, f"{prefix}[]") for v in value), set())
    return {prefix}


def in_maps(leaf: str) -> str:
    """``locations.zone-a.member`` -> ``locations.*.member`` (a map's keys are data)."""
    head, _, rest = leaf.partition(".")
    return f"{head}.*.{rest.partition('.')[2]}" if head in MAPS and rest else leaf


MAPS = {"locations"}


def schema_paths(schema: Mapping[str, Any], prefix: str = "") -> set[str]:
    if isinstance(schema.get("additionalProperties"), Mapping):
        return schema_paths(schema["additionalProperties"], f"{prefix}.*")
    if "properties" in schema:
        return set().union(*(schema_paths(s, f"{prefix}.{k}" if prefix else k)
                             for k, s in schema["properties"].items()))
    if "items" in schema:
        return schema_paths(schema["items"], f"{prefix}[]")
    return {prefix}


@pytest.fixture
def admin(cluster: Cluster) -> Iterator[Client]:
    client = admin_client(cluster)
    client.create(Namespace(metadata=ObjectMeta(name=NS)))
    yield client
    client.delete(Namespace, NS)


def test_every_status_field_the_operator_writes_survives_the_api_server(cluster: Cluster, admin: Client) -> None:
    admin.create(RouteMonitor.from_dict({
        "apiVersion": f"{names.GROUP}/{names.VERSION}", "kind": names.KIND, "metadata": {"name": NAME, "namespace": NS},
        "spec": {"target": {"url": URL}, "probe": {"interval": "30s"}, "slo": {"availability": "99.9"}}}))

    def stored() -> dict[str, Any]:
        return dict(admin.get(RouteMonitor, NAME, namespace=NS).to_dict())  # type: ignore[no-untyped-call]

    async def drive() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        config = kc.from_file(cluster.operator_kubeconfig)  # the operator's RBAC, not an admin's
        pool = transport.for_config(config)
        direct = rest.for_config(config, pool.session)
        assert direct is not None
        metrics = OperatorMetrics(CollectorRegistry())
        settings = OperatorSettings(allow_url_targets=True, status_min_interval=0, first_status_within=0)
        world, slo = World(), {}
        reconciler = Reconciler(world=world, settings=settings, kube=KubeWriter(metrics, rest=direct),
                                engine=RecordingEngine(), metrics=metrics, schedule=lambda key, delay: None,
                                member="alpha", slo_of=slo.get)
        key, seen = (NS, NAME), []
        try:
            for step in steps(time.time()):
                if step.spec:
                    admin.patch(RouteMonitor, NAME, {"spec": dict(step.spec)}, namespace=NS,
                                patch_type=PatchType.MERGE)
                world.observe("routemonitor", "MODIFIED", stored())  # what the watch would bring
                reconciler.status.seen(key)
                if step.result is not None:
                    reconciler.results[key] = step.result
                if step.slo is not None:
                    slo[key] = step.slo
                before = dict(reconciler.status.written.get(key) or {})
                await reconciler.reconcile(key)
                sent = reconciler.status.written.get(key)
                assert sent is not None and sent != before, f"{step.what}: no status written"
                if reconciler.locations_sent(key):  # each location's entry is written by its own prober
                    sent = {**sent, "locations": dict(reconciler.locations_sent(key))}
                seen.append((step.what, sent, stored().get("status") or {}))
        finally:
            await pool.aclose()
        return seen

    written: set[str] = set()
    for what, sent, back in asyncio.run(drive()):
        expected = without_nulls(sent)
        lost = paths(expected) - paths(back)
        assert back == expected, f"{what}: fields lost {sorted(lost)}, left over {sorted(paths(back) - paths(expected))}" \
                                 f"\nsent: {expected}\nread back: {back}"
        written |= {in_maps(p) for p in paths(expected)}
        if what == "failing with a long message":
            assert back["lastProbe"]["message"] == LONG_DETAIL[:status.PROBE_MESSAGE_MAX]
    declared = schema_paths(SCHEMA["openAPIV3Schema"]["properties"]["status"])
    assert written == declared, (f"declared, never written: {sorted(declared - written)}; "
                                 f"written, not declared: {sorted(written - declared)}")
