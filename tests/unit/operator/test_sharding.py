"""Rendezvous hashing of monitors over replicas (Contract 6), pure:

- every monitor has exactly one owner, the same on every replica, whatever order the members are in;
- the share of each of N members is even within a few percent over many monitors;
- a member joining takes only monitors it now owns (from every other member); a member leaving
  hands over only its own; nothing else moves;
- one replica (or none named) owns everything;
- blind members (Contract 11) own nothing while a member that sees is live: going blind hands
  exactly the blind member's monitors to their runners-up, seeing again takes exactly those back;
  when every member is blind the ranking is the usual one (someone must probe).
"""

from __future__ import annotations

import pytest

from route_monitor.operator.replicas.sharding import Shard, eligible, moved, owner_of, ranking

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


@pytest.mark.parametrize(("members", "blind", "owners"), [
    pytest.param("abc", "", "abc", id="none-blind"),
    pytest.param("abc", "b", "ac", id="one-blind-ranks-the-others"),
    pytest.param("abc", "ab", "c", id="one-seeing-member-owns-everything"),
    pytest.param("abc", "abc", "abc", id="all-blind-everyone-ranks"),
    pytest.param("ab", "x", "ab", id="a-mark-of-a-member-not-live-changes-nothing"),
])
def test_only_members_that_see_own_while_one_exists(members: str, blind: str, owners: str) -> None:
    assert eligible(frozenset(members), frozenset(blind)) == frozenset(owners)


def test_going_blind_hands_exactly_its_monitors_to_their_runners_up_and_back() -> None:
    live = frozenset("abc")
    seeing, b_blind = Shard("b", live), Shard("b", live, frozenset("b"))
    b_had = seeing.owned(KEYS)
    gained, lost = moved(KEYS, seeing, b_blind)
    assert gained == set() and lost == b_had
    for other in "ac":  # each of the others gains exactly the monitors it ranks second to b
        gained, lost = moved(KEYS, Shard(other, live), Shard(other, live, frozenset("b")))
        assert lost == set()
        assert gained == {k for k in b_had if ranking(k, live)[1] == other}
    assert moved(KEYS, b_blind, seeing) == (b_had, set())  # back: exactly its share, nothing else


def test_when_every_member_is_blind_nothing_moves() -> None:
    live = frozenset("abc")
    for member in live:
        assert moved(KEYS, Shard(member, live), Shard(member, live, live)) == (set(), set())
