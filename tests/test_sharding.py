"""Rendezvous hashing of monitors over replicas (Contract 6), pure:

- every monitor has exactly one owner, the same on every replica, whatever order the members are in;
- the share of each of N members is even within a few percent over many monitors;
- a member joining takes only monitors it now owns (from every other member); a member leaving
  hands over only its own; nothing else moves;
- one replica (or none named) owns everything.
"""

from __future__ import annotations

import pytest

from route_monitor.operator.sharding import Shard, moved, owner_of, ranking

KEYS = [(f"ns{i % 37}", f"monitor-{i}") for i in range(6000)]


def shares(members: list[str]) -> dict[str, int]:
    out = dict.fromkeys(members, 0)
    for key in KEYS:
        owner = owner_of(key, members)
        assert owner is not None
        out[owner] += 1
    return out


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_shares_are_even(n: int) -> None:
    members = [f"route-monitor-7c9f-{i}" for i in range(n)]
    even = len(KEYS) / n
    for member, count in shares(members).items():
        assert abs(count - even) / even < 0.1, (member, count, even)


def test_the_owner_does_not_depend_on_member_order_and_is_the_top_of_the_ranking() -> None:
    members = ["a", "b", "c", "d"]
    for key in KEYS[:500]:
        owner = owner_of(key, members)
        assert owner == owner_of(key, list(reversed(members))) == ranking(key, members)[0]
        assert sum(Shard(m, frozenset(members)).owns(key) for m in members) == 1


def test_a_joining_member_only_takes_and_a_leaving_member_only_gives() -> None:
    before = ["a", "b", "c"]
    after = [*before, "d"]
    for member in before:
        gained, lost = moved(KEYS, Shard(member, frozenset(before)), Shard(member, frozenset(after)))
        assert not gained, "an old member gained monitors when one joined"
        assert all(owner_of(k, after) == "d" for k in lost)
    gained, lost = moved(KEYS, Shard("d", frozenset(before)), Shard("d", frozenset(after)))
    assert not lost and abs(len(gained) - len(KEYS) / 4) / (len(KEYS) / 4) < 0.1
    # leaving is the same change backwards: only d's monitors move, each to its runner-up
    for key in KEYS:
        if owner_of(key, after) != "d":
            assert owner_of(key, before) == owner_of(key, after)
        else:
            assert owner_of(key, before) == ranking(key, after)[1]


def test_alone_a_replica_owns_everything() -> None:
    assert all(Shard("only", frozenset({"only"})).owns(k) for k in KEYS)
    assert all(Shard("", frozenset({""})).owns(k) for k in KEYS)
