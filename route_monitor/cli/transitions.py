"""``standalone``'s log of what changed for a monitor: up, down, warming up, warm-up over.

One line per change, never per probe. Warm-up is said out loud because it hides failures: while
a new monitor warms up (``spec.probe.warmup``, 10 minutes by default) its failing probes do not
count, so its SLO series look clean; the line (and ``route_monitor_warming_up`` on /metrics)
tells someone watching that the target is in fact failing.
"""

from __future__ import annotations

import logging

from route_monitor.logs import monitor_extra
from route_monitor.probe.result import Exclusion, ProbeResult

Key = tuple[str, str]


class Transitions:
    """``on_result`` of the engine: logs a monitor's transitions on ``log``."""

    def __init__(self, log: logging.Logger) -> None:
        self._last: dict[Key, bool] = {}
        self._warming: set[Key] = set()
        self._log = log

    def __call__(self, r: ProbeResult) -> None:
        warming = r.excluded is Exclusion.WARMUP
        if self._last.get(r.key) == r.success and warming is (r.key in self._warming):
            return  # nothing changed: every probe comes here, so this path builds nothing
        name = f"{r.key[0]}/{r.key[1]}"
        extra = monitor_extra(r.key)
        if warming and r.key not in self._warming:
            self._warming.add(r.key)
            self._log.warning("%s: warming up: failing probes are not counted until one succeeds or the warm-up "
                              "(spec.probe.warmup) has passed", name, extra=extra)
        if self._last.get(r.key) != r.success:
            self._last[r.key] = r.success
            state = "UP" if r.success else f"DOWN ({r.reason.value if r.reason else 'other'}: {r.detail})"
            counted = f"  (not counted: {r.excluded.value})" if r.excluded is not None else ""
            self._log.log(logging.INFO if r.success else logging.WARNING, "%s: %s  %s%s", name, state, r.url,
                          counted, extra=extra)
        if not warming and r.key in self._warming:
            self._warming.discard(r.key)
            self._log.info("%s: warm-up over: %s", name, "a probe succeeded" if r.success else "its results count now",
                           extra=extra)

    def forget(self, key: Key) -> None:
        """A monitor removed from the files."""
        self._last.pop(key, None)
        self._warming.discard(key)
