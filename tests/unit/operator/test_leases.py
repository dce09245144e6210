"""The live set as one replica observes the others' Leases (pure, fake clocks):

- a member is live for ``leaseDurationSeconds`` on the *observer's* clock after its renewTime was
  seen to change; a holder whose clock is hours off is judged the same as one in sync;
- a Lease first seen counts as just renewed; an unchanged renewTime does not extend it;
- a relist forgets Leases that are gone and keeps the age of unchanged ones;
- the observer always counts itself; expired Leases are offered for deletion after a grace time;
- the ``routemonitor.io/blind: "true"`` annotation names a live member as blind, follows the Lease
  without a renewal, and an expired blind member is not listed;
- while the observer is blind its view is held: the members live then stay live (and are not
  offered for deletion) while their Leases are listed, one already expired stays dead, one that
  left goes; the hold ended, expiry is judged as before.
"""

from __future__ import annotations

from typing import Any

import pytest

from route_monitor.operator.replicas.leases import LeaseTable


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lease(member: str, renew: str, duration: int = 15, uid: str = "", blind: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"route-monitor-{member}", "uid": uid or f"uid-{member}"}
    if blind is not None:
        meta["annotations"] = {"routemonitor.io/blind": blind}
    return {"metadata": meta, "spec": {"holderIdentity": member, "renewTime": renew, "leaseDurationSeconds": duration}}


@pytest.mark.parametrize("holder_clock", ["2026-11-23T10:00:00.000000Z", "1999-01-01T00:00:00.000000Z",
                                          "2099-01-01T00:00:00.000000Z"], ids=["in-sync", "hours-behind",
                                                                               "years-ahead"])
def test_expiry_is_judged_on_the_observers_clock_whatever_the_holders_clock(holder_clock: str) -> None:
    clock = Clock()
    table = LeaseTable("me", clock)
    table.observe(lease("other", holder_clock))
    clock.now += 14.9
    assert table.live() == {"me", "other"}
    table.observe(lease("other", holder_clock.replace("00.000000Z", "05.000000Z")))  # renewed
    clock.now += 14.9
    assert table.live() == {"me", "other"}
    table.observe(lease("other", holder_clock.replace("00.000000Z", "05.000000Z")))  # same renewTime again
    clock.now += 0.2
    assert table.live() == {"me"}, "an unchanged renewTime must not keep a member alive"


def test_next_deadline_is_the_earliest_expiry_of_a_live_member() -> None:
    clock = Clock()
    table = LeaseTable("me", clock)
    assert table.next_deadline() is None
    table.observe(lease("a", "t1"))
    clock.now += 5
    table.observe(lease("b", "t1"))
    assert table.next_deadline() == 1015.0
    clock.now += 11
    assert table.next_deadline() == 1020.0


def test_relist_forgets_deleted_leases_and_keeps_ages() -> None:
    clock = Clock()
    table = LeaseTable("me", clock)
    table.replace_all([lease("a", "t1"), lease("b", "t1")])
    clock.now += 10
    table.replace_all([lease("a", "t1")])
    assert table.live() == {"me", "a"}
    clock.now += 6
    assert table.live() == {"me"}, "a relist with the same renewTime must not renew"


def test_a_lease_without_holder_is_not_live_and_the_observer_always_is() -> None:
    table = LeaseTable("me", Clock())
    table.observe({"metadata": {"name": "route-monitor-x"}, "spec": {"holderIdentity": ""}})
    assert table.live() == {"me"}


def test_leases_expired_longer_than_the_grace_are_abandoned() -> None:
    clock = Clock()
    table = LeaseTable("me", clock)
    table.observe(lease("dead", "t1"))
    table.observe(lease("me", "t1"))
    clock.now += 15 + 59
    assert table.abandoned(60) == []
    clock.now += 1
    assert table.abandoned(60) == [("route-monitor-dead", "uid-dead")]


def test_the_blind_mark_names_live_members_and_follows_the_lease() -> None:
    clock = Clock()
    table = LeaseTable("me", clock)
    table.replace_all([lease("a", "t1", blind="true"), lease("b", "t1", blind="false"), lease("me", "t1")])
    assert table.blind() == {"a"}
    table.observe(lease("b", "t1", blind="true"))  # marked without a renewal
    table.observe(lease("a", "t2"))  # mark removed with a renewal
    assert table.blind() == {"b"}
    table.observe(lease("me", "t1", blind="true"))  # the observer's own mark, as the API returned it
    assert table.blind() == {"b", "me"}
    clock.now += 15
    assert table.blind() == {"me"}  # b expired: not live, so not listed as blind


def test_a_blind_observer_holds_its_view_of_the_others() -> None:
    clock = Clock()
    table = LeaseTable("me", clock)
    table.replace_all([lease("a", "t1"), lease("b", "t1"), lease("dead", "t0")])
    clock.now += 10
    table.observe(lease("a", "t2"))
    table.observe(lease("b", "t2"))
    clock.now += 10  # "dead" expired before the observer went blind
    table.hold(True)
    clock.now += 60  # no renewal seen for a minute: its own network, most likely
    assert table.live() == {"me", "a", "b"}
    assert table.next_deadline() is None and [n for n, _ in table.abandoned(30)] == ["route-monitor-dead"]
    table.remove("route-monitor-b")  # a clean leave is seen (or relisted) as such
    assert table.live() == {"me", "a"}
    table.hold(False)
    assert table.live() == {"me"}
