"""Joining the replicas (Contract 6), with a scripted stand-in for the Lease API:

- a Lease of this member's name left by its previous run is taken over (409 -> patch);
- one that vanishes between the two (deleted as abandoned by another replica) fails the join with
  that 404, and the start's patience (``route_monitor.operator.patience``) joins again: created;
- any other failure (a 500) reaches the caller as lightkube raised it;
- the live set after joining is the listed Leases plus this member.
The real Lease traffic (renewals, watches, expiry, SIGTERM/SIGKILL) is covered against the real
control plane in test_operator_replicas.py.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from lightkube import ApiError
from prometheus_client import CollectorRegistry

from route_monitor.operator.membership import Membership, MembershipSettings
from route_monitor.operator.metrics import OperatorMetrics
from route_monitor.operator.patience import until_answered


def refused(code: int) -> ApiError:
    """What lightkube raises for an error answer of the API server."""
    request = httpx2.Request("POST", "https://api.example:6443/apis/coordination.k8s.io/v1/namespaces/rm/leases")
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "no", "code": code}
    return ApiError(request=request, response=httpx2.Response(code, json=body, request=request))


class Leases:
    def __init__(self, script: list[str]) -> None:
        self.script = script
        self.calls: list[str] = []

    def _next(self, verb: str, lease: Any) -> dict[str, Any]:
        self.calls.append(verb)
        outcome = self.script.pop(0)
        if outcome != "ok":
            raise refused(int(outcome))
        return {"metadata": {"uid": "u1"}}

    async def create_lease(self, lease: Any) -> dict[str, Any]:
        return self._next("create", lease)

    async def patch_lease(self, namespace: str, name: str, spec: Any) -> dict[str, Any]:
        return self._next("patch", spec)

    async def list_leases(self, namespace: str, labels: Any) -> tuple[list[dict[str, Any]], str]:
        other = {"metadata": {"name": "route-monitor-b", "uid": "u2"},
                 "spec": {"holderIdentity": "b", "renewTime": "t", "leaseDurationSeconds": 15}}
        return [other], "1"


def member(script: list[str]) -> tuple[Membership, Leases]:
    kube = Leases(script)
    m = Membership(kube=kube, metrics=OperatorMetrics(CollectorRegistry()),  # type: ignore[arg-type]
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
    assert failed.value.status.code == 404 and kube.calls == ["create", "patch"]
    m, kube = member(["409", "404", "ok"])
    await until_answered("taking the Lease of member a", m.join, sleep=no_sleep)
    assert kube.calls == ["create", "patch", "create"]
    assert m.shard.members == {"a", "b"}


async def test_another_failure_reaches_the_caller_as_raised() -> None:
    m, kube = member(["409", "500"])
    with pytest.raises(ApiError) as failed:
        await m.join()
    assert failed.value.status.code == 500 and kube.calls == ["create", "patch"]
