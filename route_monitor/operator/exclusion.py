"""Why a monitor's results would not count right now, before any probe result says so; pure.

The ``Probing`` condition's reason (``WarmingUp``, ``InMaintenance``, ``Paused``) normally comes
from the last probe result. After a restart, or when a replica takes a monitor over, there is no
result yet; taking that as "results count" rewrote a status that was right (reason ``Probing``)
and wrote it back after the first probe, seconds later. Most of the answer does not need a
probe: the spec says paused, the clock and the spec's windows say in a window, and
``creationTimestamp`` plus ``warmup`` say whether warm-up can still run. Only a past probe can
tell that a success ended warm-up early; that is what the status already written says, so it
is kept until a new result brings news.

Same precedence as the probe engine's gate (:mod:`route_monitor.probe.gate`): paused, then
maintenance, then warm-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from route_monitor.probe.result import Exclusion
from route_monitor.spec.maintenance import state_at
from route_monitor.spec.monitor import MonitorSpec

COUNTED_REASON = "Probing"
"""The ``Probing`` condition's reason while results count."""


def written_reason(status: Mapping[str, Any] | None) -> str | None:
    """The reason of the ``Probing`` condition already written, if it is True."""
    for c in (status or {}).get("conditions") or []:
        if c.get("type") == "Probing" and c.get("status") == "True":
            return str(c.get("reason"))
    return None


def known(spec: MonitorSpec, now: float, written: Mapping[str, Any] | None) -> Exclusion | None:
    """The exclusion the next result will most likely get, from the spec, ``now`` and the status
    ``written`` so far (None: results count)."""
    if spec.paused:
        return Exclusion.PAUSED
    if spec.maintenance and state_at(spec.maintenance, now)[0]:
        return Exclusion.MAINTENANCE
    warmup = spec.probe.warmup_ms / 1000
    if warmup <= 0 or (spec.created is not None and now >= spec.created + warmup):
        return None
    # warm-up may still run, unless a success ended it: the status written says whether one did
    return None if written_reason(written) == COUNTED_REASON else Exclusion.WARMUP
