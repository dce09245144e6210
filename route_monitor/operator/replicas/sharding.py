"""Which replica owns which monitor: rendezvous (highest random weight) hashing.

Every replica computes the same owner for a monitor from the same member set, with no
coordination beyond the set itself (:mod:`route_monitor.operator.replicas.membership`): the owner of
``namespace/name`` is the member with the highest ``hash(member, namespace/name)``. A member
joining takes only the monitors it now wins; a member leaving hands only its own monitors to the
others (each to its runner-up), so a change of the member set moves about ``1/N`` of the monitors
and nothing else. :func:`ranking` orders all members, so probing one monitor from the top ``k``
is a later step, not a redesign.

Members marked blind (Contract 11: their canary is unreachable, so their probes say nothing about
the targets) are ranked only when every live member is blind: :func:`eligible`. A member going
blind hands its monitors to their runners-up; back, it takes exactly those again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

Key = tuple[str, str]


def weight(member: str, key: Key) -> int:
    """A stable 64-bit weight of (member, monitor): the same on every replica and every Python."""
    data = f"{member}\x00{key[0]}/{key[1]}".encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def ranking(key: Key, members: Iterable[str]) -> list[str]:
    """Members by preference for ``key``, best first (ties, which need a 64-bit collision, by name)."""
    return sorted(members, key=lambda m: (-weight(m, key), m))


def eligible(members: frozenset[str], blind: frozenset[str]) -> frozenset[str]:
    """The members that may own monitors: those not blind, while at least one exists; else all."""
    seeing = members - blind
    return seeing if seeing else members


def owner_of(key: Key, members: Iterable[str]) -> str | None:
    best: tuple[int, str] | None = None
    for member in members:
        w = weight(member, key)
        if best is None or w > best[0] or (w == best[0] and member < best[1]):
            best = (w, member)
    return None if best is None else best[1]


@dataclass(frozen=True)
class Shard:
    """This replica's view: its own name, the live members (itself included) and which of them are blind."""

    member: str
    members: frozenset[str]
    blind: frozenset[str] = frozenset()
    locations: tuple[tuple[str, str], ...] = ()
    """(member, location) as their Leases say (Contract 12); a member missing: the default location."""

    @property
    def owners(self) -> frozenset[str]:
        """The members that own monitors (:func:`eligible`)."""
        return eligible(self.members, self.blind)

    def owns(self, key: Key) -> bool:
        return owner_of(key, self.owners) == self.member

    def owned(self, keys: Iterable[Key]) -> set[Key]:
        return {k for k in keys if self.owns(k)}


def moved(keys: Iterable[Key], before: Shard, after: Shard) -> tuple[set[Key], set[Key]]:
    """(gained, lost): the monitors this replica starts and stops owning when ``before`` becomes ``after``."""
    gained: set[Key] = set()
    lost: set[Key] = set()
    for key in keys:
        was, now = before.owns(key), after.owns(key)
        if now and not was:
            gained.add(key)
        elif was and not now:
            lost.add(key)
    return gained, lost
