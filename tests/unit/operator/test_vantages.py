"""Owners of a monitor probed from several locations (pure): the first ``vantages`` members of
its rendezvous ranking in distinct locations, the first of them the one-vantage owner, blind
members left out while one sees, and only the monitors a member ranks into or out of move."""

from __future__ import annotations

import pytest

from route_monitor.operator.replicas.sharding import Shard, owner_of, ranking
from route_monitor.operator.replicas.vantages import DEFAULT_LOCATION, location_of, of_shard, owners, shortfall

KEYS = [(f"ns{i % 7}", f"m{i}") for i in range(400)]
ZONES = {"a1": "a", "a2": "a", "b1": "b", "b2": "b", "c1": "c"}


def test_one_vantage_is_the_owner_of_one() -> None:
    for key in KEYS:
        assert owners(key, ZONES, frozenset(), 1) == (owner_of(key, ZONES),)


@pytest.mark.parametrize("vantages", [1, 2, 3])
def test_distinct_locations_in_ranking_order(vantages: int) -> None:
    for key in KEYS:
        taken = owners(key, ZONES, frozenset(), vantages)
        assert len(taken) == vantages
        assert len({ZONES[m] for m in taken}) == vantages
        order = ranking(key, ZONES)
        assert list(taken) == sorted(taken, key=order.index)
        # each owner is the best-ranked member of its location
        for m in taken:
            assert all(order.index(m) <= order.index(o) for o in ZONES if ZONES[o] == ZONES[m])


def test_fewer_locations_than_asked_gives_all_of_them() -> None:
    for key in KEYS:
        taken = owners(key, ZONES, frozenset(), 5)
        assert sorted(ZONES[m] for m in taken) == ["a", "b", "c"]
    assert shortfall(3, 5) is not None and "3 of 5" in str(shortfall(3, 5))
    assert shortfall(3, 3) is None


def test_members_without_a_location_share_one() -> None:
    members = {"x": "", "y": DEFAULT_LOCATION, "z": "zone-z"}
    for key in KEYS:
        taken = owners(key, members, frozenset(), 3)
        assert len(taken) == 2 and "z" in taken


def test_blind_members_are_left_out_while_one_sees() -> None:
    blind = frozenset({"a1", "a2"})
    for key in KEYS:
        taken = owners(key, ZONES, blind, 3)
        assert not set(taken) & blind
        assert sorted(ZONES[m] for m in taken) == ["b", "c"]
    # a blind member of a zone with a seeing one: the zone is kept, by the seeing member
    for key in KEYS:
        taken = owners(key, ZONES, frozenset({"a1"}), 3)
        assert "a2" in taken and "a1" not in taken
    # every member blind: all of them rank (nothing would watch otherwise)
    assert len(owners(KEYS[0], ZONES, frozenset(ZONES), 3)) == 3


def test_a_member_leaving_moves_only_what_it_probed() -> None:
    after = {m: z for m, z in ZONES.items() if m != "b1"}
    for key in KEYS:
        was, now = owners(key, ZONES, frozenset(), 2), owners(key, after, frozenset(), 2)
        if "b1" not in was:
            assert was == now
        else:
            assert set(was) - {"b1"} <= set(now)


def test_a_member_joining_takes_only_what_it_ranks_into() -> None:
    after = {**ZONES, "d1": "d"}
    for key in KEYS:
        was, now = owners(key, ZONES, frozenset(), 3), owners(key, after, frozenset(), 3)
        if "d1" not in now:
            assert was == now
        else:
            assert len(set(was) - set(now)) <= 1


def test_a_shard_sees_the_same_owners() -> None:
    shard = Shard("b1", frozenset(ZONES), frozenset({"c1"}), tuple(sorted(ZONES.items())))
    for key in KEYS[:50]:
        assert of_shard(shard, key, 3) == owners(key, ZONES, frozenset({"c1"}), 3)
        assert of_shard(shard, key, 1) == (owner_of(key, set(ZONES) - {"c1"}),)
        assert of_shard(shard, key, 1)[0] == of_shard(shard, key, 3)[0]
    assert location_of(shard, "a1") == "a"
    assert location_of(Shard("x", frozenset({"x"})), "x") == DEFAULT_LOCATION
