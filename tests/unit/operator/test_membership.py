"""Joining the replicas (Contract 6), with a scripted stand-in for the Lease API:

- a Lease of this member's name left by its previous run is taken over (409 -> patch);
- one that vanishes between the two (deleted as abandoned by another replica) fails the join with
  that 404, and the start's patience (``route_monitor.kube.patience``) joins again: created;
- any other failure (a 500) reaches the caller as lightkube raised it;
- the live set after joining is the listed Leases plus this member;
- a renewal on its way when the replica leaves (answered 404: the Lease is gone) does not
  join again;
- a blind replica's Lease carries ``routemonitor.io/blind: "true"`` from its creation, and a
  renewal sends the mark (or its removal, null) with the spec; the mark counts in this replica's
  own shard once the API returned it.
The real Lease traffic (renewals, watches, expiry, SIGTERM/SIGKILL) is covered against the real
control plane in test_operator_replicas.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from route_monitor.kube.apierrors import ApiError
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.kube.patience import until_answered
from route_monitor.kube.reflector import Reflector
from route_monitor.kube.watched import Watched
from route_monitor.operator.replicas.membership import Membership, MembershipSettings
from tests.support.apierror import api_error


def refused(code: int) -> ApiError:
    return api_error(code, "POST", "https://api.example:6443/apis/coordination.k8s.io/v1/namespaces/rm/leases")


class Leases:
    def __init__(self, script: list[str]) -> None:
        self.script = script
        self.calls: list[str] = []
        self.sent: list[Any] = []
        self.own: dict[str, Any] | None = None
        """This replica's Lease as last written."""

    def _next(self, verb: str, lease: Any) -> dict[str, Any]:
        self.calls.append(verb)
        outcome = self.script.pop(0)
        if outcome != "ok":
            raise refused(int(outcome))
        return {"metadata": {"uid": "u1"}}

    async def create_lease(self, lease: Any) -> dict[str, Any]:
        self.sent.append(lease["metadata"].get("annotations"))
        answer = self._next("create", lease)
        self.own = {**lease, "metadata": {**lease["metadata"], **answer["metadata"]}}
        return self.own

    async def patch_lease(self, namespace: str, name: str, spec: Any, annotations: Any = None) -> dict[str, Any]:
        self.sent.append(annotations)
        answer = self._next("patch", spec)
        marks = {k: v for k, v in (annotations or {}).items() if v is not None}
        self.own = {"metadata": {**answer["metadata"], "name": "route-monitor-a", "annotations": marks},
                    "spec": {**spec, "holderIdentity": "a"}}
        return self.own

    def reflector(self, namespace: str, labels: Any, on_change: Any, **handlers: Any) -> Reflector:
        """The real reflector, on this stand-in's list (the other member's Lease and this one's)."""
        watched = Watched(api_version="coordination.k8s.io/v1", kind="Lease", plural="leases", namespace=namespace)
        return Reflector(self, watched, on_change, **handlers)  # type: ignore[arg-type]

    async def get(self, where: str, query: Any) -> dict[str, Any]:
        other = {"metadata": {"name": "route-monitor-b", "uid": "u2"},
                 "spec": {"holderIdentity": "b", "renewTime": "t", "leaseDurationSeconds": 15}}
        return {"items": [other, *([self.own] if self.own else [])], "metadata": {"resourceVersion": "1"}}

    async def watch(self, where: str, query: Any, read_timeout: float) -> AsyncIterator[dict[str, Any]]:
        await asyncio.Event().wait()  # no change from the others
        yield {}


def member(script: list[str]) -> tuple[Membership, Leases]:
    kube = Leases(script)
    m = Membership(leases=kube, metrics=OperatorMetrics(CollectorRegistry()),  # type: ignore[arg-type]
                   settings=MembershipSettings(member="a", namespace="route-monitor"), on_change=lambda b, a: None)
    return m, kube


async def test_a_lease_left_by_the_previous_run_is_taken_over() -> None:
    m, kube = member(["409", "ok"])
    await m.join()
    assert kube.calls == ["create", "patch"]
    assert m.shard.members == {"a", "b"}


async def no_sleep(seconds: float) -> None:
    pass


async def test_a_lease_deleted_between_create_and_patch_is_joined_again_by_the_start() -> None:
    m, kube = member(["409", "404", "ok"])
    with pytest.raises(ApiError) as failed:
        await m.join()
    assert failed.value.status == 404 and kube.calls == ["create", "patch"]
    m, kube = member(["409", "404", "ok"])
    await until_answered("taking the Lease of member a", m.join, sleep=no_sleep)
    assert kube.calls == ["create", "patch", "create"]
    assert m.shard.members == {"a", "b"}


async def test_another_failure_reaches_the_caller_as_raised() -> None:
    m, kube = member(["409", "500"])
    with pytest.raises(ApiError) as failed:
        await m.join()
    assert failed.value.status == 500 and kube.calls == ["create", "patch"]


async def test_a_blind_replica_marks_its_lease_and_counts_its_mark_once_written() -> None:
    m, kube = member(["ok"] * 10)
    m.set_blind(True)
    await m.join()
    assert kube.sent == [{"routemonitor.io/blind": "true"}]
    task = asyncio.create_task(m.run())
    try:
        async with asyncio.timeout(2):  # the renewal is sent at once, not after the 5 s period
            while len(kube.sent) < 2:
                await asyncio.sleep(0.01)
        assert kube.sent[1] == {"routemonitor.io/blind": "true"}
        assert m.shard.blind == {"a"} and not m.shard.owns(("shop", "web"))  # b sees: b owns
        m.set_blind(False)
        async with asyncio.timeout(2):
            while len(kube.sent) < 3:
                await asyncio.sleep(0.01)
        assert kube.sent[2] == {"routemonitor.io/blind": None}
        assert m.shard.blind == frozenset()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


class RenewalOnItsWay(Leases):
    """A renewal sent just before this replica leaves, reaching the API just after its delete."""

    def __init__(self) -> None:
        super().__init__(["ok"] * 10)
        self.renewing, self.arrive = asyncio.Event(), asyncio.Event()
        self.deleted = False

    async def patch_lease(self, namespace: str, name: str, spec: Any, annotations: Any = None) -> dict[str, Any]:
        self.renewing.set()
        await self.arrive.wait()
        if self.deleted:
            self.calls.append("patch")
            raise refused(404)
        return await super().patch_lease(namespace, name, spec, annotations)

    async def delete_lease(self, namespace: str, name: str, uid: str) -> None:
        self.calls.append("delete")
        self.deleted = True
        self.arrive.set()


async def test_a_renewal_on_its_way_when_leaving_does_not_take_the_lease_again() -> None:
    """Its 404 used to join again: the Lease of a replica gone was live for 15 s more, and the
    monitors it had were probed by nobody until it expired (a rolling update's 18 s gap)."""
    kube = RenewalOnItsWay()
    m = Membership(leases=kube, metrics=OperatorMetrics(CollectorRegistry()),  # type: ignore[arg-type]
                   settings=MembershipSettings(member="a", namespace="route-monitor", renew=0.01),
                   on_change=lambda b, a: None)
    await m.join()
    task = asyncio.create_task(m.run())
    try:
        async with asyncio.timeout(2):
            await kube.renewing.wait()
        await m.leave()
        async with asyncio.timeout(2):
            while "patch" not in kube.calls:
                await asyncio.sleep(0.01)
        assert kube.calls == ["create", "delete", "patch"], "the Lease was taken again after leaving"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
