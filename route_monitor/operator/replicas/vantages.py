"""Which members probe a monitor asked to be probed from ``vantages`` locations (pure).

The owners of a monitor are taken down its rendezvous ranking (:func:`sharding.ranking`, over the
members that may own: :func:`sharding.eligible`, so blind members drop out while one sees), one
per location: the first member of each location met, until ``vantages`` locations are taken. So
the first owner is the monitor's owner of one vantage (it alone writes the generated objects, the
rules and the status), a member joining or leaving moves only the monitors it ranks into or out
of, and two owners never share a location (their series would be one location's twice).
Fewer live locations than asked: all of them, and the monitor's ``Probing`` condition says how
many (:func:`shortfall`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from route_monitor.operator.replicas.sharding import Key, Shard, eligible, owner_of, ranking
from route_monitor.spec.vantages import MAX_VANTAGES

DEFAULT_LOCATION = "cluster"
"""A member that knows no zone and was given no ``--location``."""


def owners(key: Key, locations: Mapping[str, str], blind: frozenset[str], vantages: int) -> tuple[str, ...]:
    """The members that probe ``key``, first owner first. ``locations``: every live member's
    location; a member missing from it is at :data:`DEFAULT_LOCATION`."""
    taken: list[str] = []
    seen: set[str] = set()
    for member in ranking(key, eligible(frozenset(locations), blind)):
        where = locations.get(member) or DEFAULT_LOCATION
        if where in seen:
            continue
        taken.append(member)
        seen.add(where)
        if len(taken) == max(vantages, 1):
            break
    return tuple(taken)


def shortfall(found: int, vantages: int) -> str | None:
    """The ``Probing`` condition's words when fewer locations probe than asked (None: enough)."""
    if found >= vantages:
        return None
    return (f"probed from {found} of {vantages} locations: only {found} live location(s) have an operator "
            "replica that sees (add replicas in other zones, or remote vantages)")


def of_shard(shard: Shard, key: Key, vantages: int) -> tuple[str, ...]:
    """:func:`owners` as ``shard`` (this replica's view of the live members) sees them."""
    if vantages <= 1:
        owner = owner_of(key, shard.owners)
        return () if owner is None else (owner,)
    where = dict(shard.locations)
    return owners(key, {m: where.get(m, "") for m in shard.members}, shard.blind, vantages)


def location_of(shard: Shard, member: str) -> str:
    return dict(shard.locations).get(member) or DEFAULT_LOCATION


Placed = tuple[tuple[str, str], ...]
"""(member, location) of a monitor's owners, first owner first."""


def placed(shard: Shard, key: Key, vantages: int) -> Placed:
    return tuple((m, location_of(shard, m)) for m in of_shard(shard, key, vantages))


def vantage_count(body: Mapping[str, Any] | None) -> int:
    """``spec.probe.vantages`` as written (1 when absent or invalid: the parser reports it), read
    without parsing the whole monitor: ownership asks for it on every membership change."""
    probe = ((body or {}).get("spec") or {}).get("probe") if isinstance(body, Mapping) else None
    value = probe.get("vantages") if isinstance(probe, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_VANTAGES:
        return 1
    return value
