"""``spec.probe.vantages`` and ``spec.probe.quorum``: from how many places a monitor is probed,
and how many of them must see a failure for a probe slot to count as failed.

One vantage is one point of view: a broken node, zone network or resolver makes every target
look down from there. ``vantages`` members in distinct locations probe the monitor
(:func:`route_monitor.operator.vantages.owners`); the rules count a failure only as far as at
least ``quorum`` locations see it, so one blind place neither pages nor spends budget.
Default: one vantage (as before), quorum a majority (``vantages // 2 + 1``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from alert_rules.fielderrors import Collect, InvalidSpec

MAX_VANTAGES = 16
"""More places than this add cost and no confidence (commercial tools stop at a handful)."""


@dataclass(frozen=True)
class Vantages:
    count: int = 1
    """Locations that probe the monitor (``spec.probe.vantages``)."""
    quorum: int = 1
    """Failing locations needed for a probe slot to count as failed (``spec.probe.quorum``)."""

    @property
    def single(self) -> bool:
        return self.count == 1

    def describe(self) -> str:
        """``3 locations, a failure counts when 2 of them see it`` (for ``check`` and conditions)."""
        if self.single:
            return "1 location"
        return f"{self.count} locations, a failure counts when {self.quorum} of them see it"


ONE = Vantages()


def majority(count: int) -> int:
    return count // 2 + 1


def _count(value: object, field: str, upper: int, what: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidSpec(field, value, "expected a whole number")
    if not 1 <= value <= upper:
        raise InvalidSpec(field, value, f"must be between 1 and {what or upper}")
    return value


def vantages_settings(probe: Mapping[str, Any], field: str, c: Collect) -> Vantages:
    """``vantages`` and ``quorum`` of ``spec.probe`` (already a mapping), every error kept in ``c``;
    quorum is checked against vantages only when vantages itself is valid."""
    count = c.get(lambda: _count(probe.get("vantages", 1), f"{field}.vantages", MAX_VANTAGES), 1)
    if "quorum" not in probe:
        return Vantages(count, majority(count))
    if c.failed(f"{field}.vantages"):
        c.get(lambda: _count(probe["quorum"], f"{field}.quorum", MAX_VANTAGES), 1)
        return ONE
    quorum = c.get(lambda: _count(probe["quorum"], f"{field}.quorum", count, f"{field}.vantages ({count})"), 1)
    return Vantages(count, quorum)
