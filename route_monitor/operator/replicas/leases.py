"""The live members, as this replica observes their Leases (pure; the clock is injected).

A member is live while less than its ``leaseDurationSeconds`` has passed *on this replica's
clock* since this replica saw its ``renewTime`` change. The holder's timestamp is compared only
with itself (changed or not), never with the local clock, so clock skew between nodes cannot make
a live member look dead or a dead one look live (client-go's leader election does the same).
A Lease first seen counts as just renewed. This replica always counts itself live: when it
cannot reach the API server it keeps probing what it owns rather than going blind.

A Lease annotated ``routemonitor.io/blind: "true"`` belongs to a member whose canary is
unreachable (Contract 11): it stays live, and :meth:`LeaseTable.blind` names it, so ownership
can rank the others first (:func:`route_monitor.operator.replicas.sharding.eligible`). While this replica
is blind itself, its view of the others is held (:meth:`LeaseTable.hold`): renewals it cannot see
are likely its own network's fault, so the members live when it went blind stay live (while their
Leases are listed) and it keeps its own share instead of taking every monitor as if alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from alert_rules import names


@dataclass
class _Seen:
    member: str
    uid: str
    renew: str
    duration: float
    observed: float
    """Local clock when ``renew`` last changed (or when the Lease was first seen)."""
    blind: bool = False
    """The Lease carries ``routemonitor.io/blind: "true"``."""
    location: str = ""
    """``routemonitor.io/location`` of the Lease (Contract 12; empty: the default location)."""


def location_of(meta: Mapping[str, Any]) -> str:
    return str((meta.get("annotations") or {}).get(names.ANN_LOCATION, ""))


def is_blind(meta: Mapping[str, Any]) -> bool:
    return str((meta.get("annotations") or {}).get(names.ANN_BLIND, "")).lower() == "true"


class LeaseTable:
    def __init__(self, me: str, clock: Callable[[], float]) -> None:
        self.me = me
        self._clock = clock
        self._seen: dict[str, _Seen] = {}
        self._held: frozenset[str] = frozenset()
        """Members kept live whatever their renewals while this replica is blind."""

    def hold(self, on: bool) -> None:
        """Keep the members live now live (``on``), or judge them by their renewals again."""
        self._held = self.live() - {self.me} if on else frozenset()

    def observe(self, lease: Mapping[str, Any]) -> None:
        meta, spec = lease.get("metadata") or {}, lease.get("spec") or {}
        name = str(meta.get("name"))
        member = str(spec.get("holderIdentity") or "")
        if not member:
            self._seen.pop(name, None)  # released: no holder, not live
            return
        renew = str(spec.get("renewTime") or spec.get("acquireTime") or "")
        duration = float(spec.get("leaseDurationSeconds") or 0)
        old = self._seen.get(name)
        if old is not None and old.renew == renew and old.member == member:
            old.duration, old.blind, old.location = duration, is_blind(meta), location_of(meta)
            return
        self._seen[name] = _Seen(member, str(meta.get("uid") or ""), renew, duration, self._clock(), is_blind(meta),
                                 location_of(meta))

    def remove(self, name: str) -> None:
        self._seen.pop(name, None)

    def replace_all(self, leases: Iterable[Mapping[str, Any]]) -> None:
        """After a (re)list: keep what is listed, forget the rest; unchanged renewals keep their age."""
        listed = {str((lease.get("metadata") or {}).get("name")) for lease in leases}
        for name in set(self._seen) - listed:
            del self._seen[name]
        for lease in leases:
            self.observe(lease)

    def live(self) -> frozenset[str]:
        now = self._clock()
        return frozenset({s.member for s in self._seen.values() if now - s.observed < s.duration
                          or s.member in self._held} | {self.me})

    def blind(self) -> frozenset[str]:
        """Live members whose Lease is marked blind (this replica's own as last seen on its Lease)."""
        live = self.live()
        return frozenset(s.member for s in self._seen.values() if s.blind and s.member in live)

    def locations(self) -> tuple[tuple[str, str], ...]:
        """(member, location) of the live members, sorted (a member not seen yet: no entry)."""
        live = self.live()
        return tuple(sorted((s.member, s.location) for s in self._seen.values() if s.member in live))

    def next_deadline(self) -> float | None:
        """The earliest local time at which a member now live expires (None: nothing to expire)."""
        now = self._clock()
        deadlines = [s.observed + s.duration for s in self._seen.values()
                     if now - s.observed < s.duration and s.member != self.me and s.member not in self._held]
        return min(deadlines, default=None)

    def abandoned(self, grace: float) -> list[tuple[str, str]]:
        """(name, uid) of other members' Leases expired for longer than ``grace`` seconds: left by
        replicas that died (a clean stop deletes its own), safe for anyone to delete."""
        now = self._clock()
        return [(name, s.uid) for name, s in self._seen.items()
                if s.member != self.me and s.member not in self._held and now - s.observed >= s.duration + grace]
