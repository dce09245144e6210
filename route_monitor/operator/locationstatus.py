"""``status.locations`` of a monitor probed from several locations (Contract 12), pure.

A map keyed by location: ``{zone-a: {member, result, time[, reason]}}``. Each owner writes only
its own location's entry, with a JSON merge patch of that one key, when its result (success or
failure, and why) or its member changes: owners never overwrite each other, and no owner needs
the others' results. The first owner (the one that writes the rest of the status) also drops the
entries of locations that no longer probe the monitor (a member gone, a lower ``vantages``).
Monitors of one vantage have no ``locations``: ``lastProbe`` says it all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from route_monitor.operator.status import timestamp
from route_monitor.probe.result import Exclusion, ProbeResult

FIELD = "locations"


def entry(member: str, result: ProbeResult) -> dict[str, Any]:
    out: dict[str, Any] = {"member": member, "result": "success" if result.success else "failure",
                           "time": timestamp(result.timestamp)}
    if result.reason is not None:
        out["reason"] = result.reason.value
    if result.excluded is not None:
        out["excluded"] = result.excluded.value
    return out


def _significant(e: Mapping[str, Any] | None) -> object:
    if not e:
        return None
    return (e.get("member"), e.get("result"), e.get("reason"), e.get("excluded"))


def own_patch(status: Mapping[str, Any] | None, location: str, member: str,
              result: ProbeResult | None) -> dict[str, Any] | None:
    """The status merge patch writing this owner's entry, or None when the written one says the same
    or this owner is blind: a blind result says nothing of the target, and the owner is being
    replaced (its Lease marked), so a write racing the first owner's prune of its location would
    put back an entry no one drops."""
    if result is None or result.excluded is Exclusion.BLIND:
        return None
    new = entry(member, result)
    old = ((status or {}).get(FIELD) or {}).get(location)
    if _significant(old) == _significant(new):
        return None
    cleared = {k: None for k in (old or {}) if k not in new}  # a merge patch keeps what it does not mention
    return {FIELD: {location: {**new, **cleared}}}


def prune_patch(status: Mapping[str, Any] | None, probing: Iterable[str]) -> dict[str, Any] | None:
    """The status merge patch dropping the entries of locations not in ``probing`` (None: none)."""
    keep = set(probing)
    gone = sorted(set((status or {}).get(FIELD) or {}) - keep)
    return {FIELD: dict.fromkeys(gone)} if gone else None
