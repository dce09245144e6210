"""Joining the replicas (Contract 6), with a scripted stand-in for the Lease API:

- a Lease of this member's name left by its previous run is taken over (409 -> patch);
- one that vanishes between the two (deleted as abandoned by another replica) is created again
  instead of crashing the replica (404 on the patch -> create);
- the live set after joining is the listed Leases plus this member.
The real Lease traffic (renewals, watches, expiry, SIGTERM/SIGKILL) is covered against the real
control plane in test_operator_replicas.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from prometheus_client import CollectorRegistry

from route_monitor.operator.membership import Membership, MembershipSettings
from route_monitor.operator.metrics import OperatorMetrics


class Refused(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.response = SimpleNamespace(status_code=code)  # read by kube.status_code


class Leases:
    def __init__(self, script: list[str]) -> None:
        self.script = script
        self.calls: list[str] = []

    def _next(self, verb: str, lease: Any) -> dict[str, Any]:
        self.calls.append(verb)
        outcome = self.script.pop(0)
        if outcome != "ok":
            raise Refused(int(outcome))
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


async def test_a_lease_deleted_between_create_and_patch_is_created_again() -> None:
    m, kube = member(["409", "404", "ok"])
    await m.join()
    assert kube.calls == ["create", "patch", "create"]
    assert m.shard.members == {"a", "b"}
