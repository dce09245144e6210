"""The reconciler's write discipline, with a recording stand-in for the Kubernetes writes (the
real writes are covered against a real apiserver in ``test_operator*.py``):

- status: written when conditions change and when the probe outcome changes; a new monitor's
  first status waits for its first probe result (one write, not two) or ``first_status_within``;
  a later change at most once per ``status_min_interval`` (deferred, then written); never for a
  probe with the same outcome;
- the PrometheusRule: written once per content (created, then applied), again only when the spec changes;
- status writes of all monitors together stay under a rate (token bucket, fake time).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from route_monitor.kube.apply import Kind
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.operator.reconcile import Reconciler
from route_monitor.operator.settings import OperatorSettings
from route_monitor.operator.statuswriter import TokenBucket
from route_monitor.operator.world import World
from route_monitor.probe.result import Exclusion, FailureReason, ProbeResult
from tests.support.engine import RecordingEngine

KEY = ("ns", "web")


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.monitors = Kind(self.create_monitor, self.get_monitor, self.replace_monitor)
        self.rules = Kind(self.create_rule, self.get_rule, self.replace_rule)

    async def get_monitor(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.calls.append(("get_monitor", name))
        return None

    async def get_rule(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.calls.append(("get_rule", name))
        return None

    async def create_monitor(self, manifest: Any) -> dict[str, Any]:
        self.calls.append(("create_monitor", manifest["metadata"]["name"]))
        return {**manifest, "metadata": {**manifest["metadata"], "uid": "applied", "generation": 1}}

    async def replace_monitor(self, manifest: Any, uid: str, resource_version: str) -> dict[str, Any]:
        self.calls.append(("apply_monitor", manifest["metadata"]["name"]))
        return {**manifest, "metadata": {**manifest["metadata"], "uid": uid, "generation": 2}}

    async def delete_monitor(self, namespace: str, name: str, uid: str) -> None:
        self.calls.append(("delete_monitor", name))

    async def create_rule(self, rule: Any) -> dict[str, Any]:
        self.calls.append(("apply_rule", rule["metadata"]["name"]))
        return {**rule, "metadata": {**rule["metadata"], "uid": "rule-uid"}}

    async def replace_rule(self, rule: Any, uid: str, resource_version: str) -> dict[str, Any]:
        self.calls.append(("apply_rule", rule["metadata"]["name"]))
        return {**rule, "metadata": {**rule["metadata"], "uid": uid}}

    async def patch_status(self, namespace: str, name: str, status: Any) -> None:
        self.calls.append(("status", status))

    async def warn(self, involved: Any, reason: str, message: str) -> None:
        self.calls.append(("warn", reason))

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def setup(interval: str = "1s") -> tuple[Reconciler, Recorder, RecordingEngine, Clock, list[tuple[Any, float]]]:
    world = World()
    world.observe("route", None, {"metadata": {"name": "web", "namespace": "ns", "uid": "r1"},
                                  "spec": {"host": "127.0.0.1:8080"}})
    world.observe("routemonitor", None, {
        "metadata": {"name": "web", "namespace": "ns", "uid": "m1", "generation": 1},
        "spec": {"target": {"route": {"name": "web"}}, "probe": {"interval": interval},
                 "slo": {"availability": "99.9"}}})
    kube, engine, clock, scheduled = Recorder(), RecordingEngine(), Clock(), []
    rec = Reconciler(world=world, settings=OperatorSettings(status_min_interval=10.0), kube=kube,  # type: ignore[arg-type]
                     engine=engine, metrics=OperatorMetrics(CollectorRegistry()),
                     schedule=lambda key, delay: scheduled.append((key, delay)), clock=clock)
    return rec, kube, engine, clock, scheduled


def probe(success: bool, at: float, reason: FailureReason | None = None) -> ProbeResult:
    return ProbeResult(key=KEY, url="http://127.0.0.1:8080/", timestamp=at, success=success, reason=reason,
                       duration_seconds=0.01, status_code=200, detail="")


async def test_status_is_written_on_outcome_changes_within_the_rate_bound() -> None:
    rec, kube, engine, clock, scheduled = setup()
    await rec.reconcile(KEY)
    assert engine.monitors == {KEY: "http://127.0.0.1:8080/"}
    assert kube.names() == ["apply_rule"], "the first status waits for the first probe result"
    assert scheduled == [(KEY, 8.0)]
    scheduled.clear()
    kube.calls.clear()

    rec.results[KEY] = probe(True, 1000.5)
    clock.now = 1000.5
    await rec.reconcile(KEY)
    assert kube.names() == ["status"], "the first result rides on the first status write"
    assert kube.calls[0][1]["lastProbe"]["result"] == "success"
    assert kube.calls[0][1]["conditions"][0]["status"] == "True"
    kube.calls.clear()

    for t in (1001.5, 1002.5, 1003.5):  # same outcome: nothing to write
        rec.results[KEY] = probe(True, t)
        clock.now = t
        await rec.reconcile(KEY)
    assert kube.calls == []

    rec.results[KEY] = probe(False, 1004.5, FailureReason.HTTP_STATUS)
    clock.now = 1004.5
    await rec.reconcile(KEY)
    assert kube.calls == [], "a change within 10 s of the last write waits"
    assert scheduled == [(KEY, 6.0)]
    clock.now = 1010.5
    await rec.reconcile(KEY)
    assert kube.names() == ["status"]
    written = kube.calls[0][1]["lastProbe"]
    assert (written["result"], written["reason"]) == ("failure", "http_status")


async def test_first_status_without_a_probe_result_is_written_after_the_deadline() -> None:
    rec, kube, _, clock, scheduled = setup()
    await rec.reconcile(KEY)
    clock.now = 1004.0
    await rec.reconcile(KEY)  # an unrelated change: still waiting, for the rest of the time only
    assert kube.names() == ["apply_rule"] and scheduled == [(KEY, 8.0), (KEY, 4.0)]
    clock.now = 1008.0
    await rec.reconcile(KEY)
    assert kube.names() == ["apply_rule", "status"]
    assert kube.calls[1][1]["lastProbe"] is None and kube.calls[1][1]["conditions"][0]["status"] == "True"


async def test_first_status_of_a_monitor_that_cannot_probe_is_written_at_once() -> None:
    rec, kube, _, _, scheduled = setup()
    rec.world.observe("route", "DELETED", {"metadata": {"name": "web", "namespace": "ns"}})
    await rec.reconcile(KEY)
    assert kube.names() == ["apply_rule", "status", "warn"] and scheduled == []
    assert kube.calls[1][1]["conditions"][1]["status"] == "False"


async def test_rule_is_applied_once_per_content() -> None:
    rec, kube, _, _, _ = setup()
    rec.results[KEY] = probe(True, 1000.0)
    await rec.reconcile(KEY)
    await rec.reconcile(KEY)
    assert kube.names().count("apply_rule") == 1
    rec.world.observe("routemonitor", "MODIFIED", {
        "metadata": {"name": "web", "namespace": "ns", "uid": "m1", "generation": 2},
        "spec": {"target": {"route": {"name": "web"}}, "probe": {"interval": "1s"},
                 "slo": {"availability": "99.5"}}})
    await rec.reconcile(KEY)
    assert kube.names().count("apply_rule") == 2
    [*_, last] = [c for c in kube.calls if c[0] == "status"]
    assert last[1]["observedGeneration"] == 2


async def test_deleted_monitor_stops_probing_and_is_forgotten() -> None:
    rec, _kube, engine, _, _ = setup()
    await rec.reconcile(KEY)
    rec.world.observe("routemonitor", "DELETED", {"metadata": {"name": "web", "namespace": "ns"}})
    await rec.reconcile(KEY)
    assert engine.monitors == {}
    assert rec.metrics.counts() == {"ready": 0, "target_unresolved": 0, "rules_failed": 0, "invalid": 0}


@pytest.mark.looptime
async def test_status_writes_of_all_monitors_are_rate_bounded() -> None:
    loop = asyncio.get_running_loop()
    bucket = TokenBucket(10, clock=loop.time)
    start = loop.time()
    for _ in range(25):  # a burst of 10 at once, then 10 per second
        await bucket.acquire()
    assert loop.time() - start == pytest.approx(1.5, abs=0.05)


@pytest.mark.parametrize("result", [
    pytest.param(ProbeResult(("ns", "m"), "http://x/", 1.7e9, True, None, 0.01, 200, ""), id="success"),
    pytest.param(ProbeResult(("ns", "m"), "http://x/", 1.7e9, False, FailureReason.HTTP_STATUS, 0.01, 503, "503"),
                 id="http-status"),
    pytest.param(ProbeResult(("ns", "m"), "http://x/", 1.7e9, False, None, 0.01, None, "?"), id="failure-no-reason"),
    pytest.param(ProbeResult(("ns", "m"), "http://x/", 1.7e9, False, FailureReason.HTTP_STATUS, 0.01, 503, "503",
                             excluded=Exclusion.WARMUP), id="excluded"),
    pytest.param(None, id="none"),
])
def test_per_probe_outcome_matches_what_the_status_records(result: ProbeResult | None) -> None:
    from route_monitor.operator import status
    assert status.result_outcome(result) == status.outcome(status.last_probe(result))


async def test_the_status_written_is_not_kept_when_the_watch_brings_it_back_before_the_patch_answers() -> None:
    """The operator's own RouteMonitor watch can deliver the patched status before the patch's
    answer is read: no second copy is kept then either, and nothing is written again."""
    rec, kube, _, clock, _ = setup()
    patch = kube.patch_status

    async def patch_then_event_first(namespace: str, name: str, status: Any) -> None:
        await patch(namespace, name, status)
        rec.world.observe("routemonitor", "MODIFIED", {**rec.world.monitors[KEY], "status": status})
        rec.status.seen(KEY)

    kube.patch_status = patch_then_event_first  # type: ignore[method-assign]
    rec.results[KEY] = probe(True, 1000.0)
    await rec.reconcile(KEY)
    assert kube.names().count("status") == 1
    assert KEY not in rec.status.written
    clock.now = 1030.0
    await rec.reconcile(KEY)
    assert kube.names().count("status") == 1


async def test_a_taken_over_monitor_is_probed_before_its_reconcile_and_a_lost_one_stops_at_once() -> None:
    """Replicas: start_probing needs no API call (the reconcile's writes come later, in the queue);
    release stops probing and keeps nothing of the status written, but what is known of the rule."""
    rec, kube, engine, _clock, _ = setup()
    rec.start_probing(KEY)
    assert engine.monitors == {KEY: "http://127.0.0.1:8080/"} and kube.calls == []
    await rec.reconcile(KEY)
    writes = len(kube.calls)
    rec.release(KEY)
    assert engine.monitors == {}
    rec.results[KEY] = probe(True, 1000.0)
    await rec.reconcile(KEY)  # owned again: the rule is known, so no create and no read
    assert kube.names()[writes:] == ["status"]


async def test_the_status_written_is_kept_once_the_watch_brings_it_back() -> None:
    """The world's copy of the monitor, with the status as written, is the only one kept; nothing
    is written again for it."""
    rec, kube, _, clock, _ = setup()
    rec.results[KEY] = probe(True, 1000.0)
    await rec.reconcile(KEY)
    [(_, written)] = [c for c in kube.calls if c[0] == "status"]
    body = rec.world.monitors[KEY]
    rec.world.observe("routemonitor", "MODIFIED", {**body, "status": written})
    rec.status.seen(KEY)
    assert KEY not in rec.status.written
    clock.now = 1030.0
    await rec.reconcile(KEY)
    assert kube.names().count("status") == 1


async def test_a_first_result_alone_is_written_with_the_held_status_without_parsing_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What only a first probe result changes (the supervisor's queue knows: no watch event, no
    reference or membership change) is one status write, the held status plus the result: no
    second pass over the spec, its target and its rules."""
    import route_monitor.operator.reconcile as reconcile_module
    rec, kube, _, clock, _ = setup()
    await rec.reconcile(KEY)
    assert kube.names() == ["apply_rule"] and rec.status.held(KEY) is not None
    cancelled: list[object] = []
    monkeypatch.setattr(rec.status, "_unschedule", cancelled.append)
    parses: list[object] = []
    real = reconcile_module.parse_routemonitor
    monkeypatch.setattr(reconcile_module, "parse_routemonitor", lambda body: parses.append(body) or real(body))
    rec.results[KEY] = probe(False, 1000.5, FailureReason.HTTP_STATUS)
    clock.now = 1000.5
    await rec.reconcile(KEY, result_only=True)
    assert parses == [] and kube.names() == ["apply_rule", "status"]
    written = kube.calls[1][1]
    assert (written["lastProbe"]["result"], written["lastProbe"]["reason"]) == ("failure", "http_status")
    assert rec.status.held(KEY) is None and cancelled == [KEY], "the held status's deadline timer is cancelled"
    await rec.reconcile(KEY, result_only=True)  # nothing held any more: a whole reconcile
    assert len(parses) == 1 and kube.names() == ["apply_rule", "status"]
