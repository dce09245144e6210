"""Does this probe result count? One decision per probe (Contract 9), made here and nowhere else.

A result is *excluded* from the SLI (``route_monitor_probes_excluded_total{reason}`` instead of
``route_monitor_probes_total``) when, in this order of precedence:

- ``paused``: the monitor is paused;
- ``maintenance``: the probe started inside a maintenance window;
- ``warmup``: the monitor is warming up: since it was created or its URL changed, no probe has
  succeeded yet and ``warmup`` has not passed. The first success counts and ends warm-up; a
  success taken during a window or a pause ends it too (the target is up).

The hot path is a comparison: whether "now" is inside a window is recomputed only when the
next boundary (a window's end or the next start) has passed, so no cron expression is
evaluated per probe. Time is the probe's own wall-clock timestamp (windows are wall-clock).
"""

from __future__ import annotations

from dataclasses import dataclass

from route_monitor.probe.result import Exclusion
from route_monitor.spec.maintenance import Window, state_at


@dataclass(frozen=True, slots=True)
class Policy:
    windows: tuple[Window, ...] = ()
    paused: bool = False
    warmup_seconds: float = 0.0


class Gate:
    """One monitor's exclusion state. Mutated only by the monitor's own worker."""

    __slots__ = ("_boundary", "_in_window", "policy", "since", "warm_until")

    def __init__(self, policy: Policy, *, warming_since: float | None) -> None:
        self.policy = policy
        self.since = warming_since
        """When warm-up began (creation or URL change); None once it is over."""
        self.warm_until = 0.0 if warming_since is None else warming_since + policy.warmup_seconds
        """Results before this are warm-up unless one succeeds (0: warm-up is over)."""
        self._boundary = float("-inf")
        self._in_window = False

    def with_policy(self, policy: Policy) -> Gate:
        """The same warm-up state under a changed policy (windows, pause or warm-up edited)."""
        return Gate(policy, warming_since=self.since if self.warm_until else None)

    def in_window(self, now: float) -> bool:
        if now >= self._boundary:
            self._in_window, self._boundary = state_at(self.policy.windows, now)
        return self._in_window

    def decide(self, now: float, success: bool) -> Exclusion | None:
        """The exclusion of a result of a probe started at ``now``, or None: it counts."""
        if self.policy.paused:
            reason: Exclusion | None = Exclusion.PAUSED
        elif self.policy.windows and self.in_window(now):
            reason = Exclusion.MAINTENANCE
        elif self.warm_until and now < self.warm_until:
            reason = None if success else Exclusion.WARMUP
        else:
            reason = None
            self.warm_until, self.since = 0.0, None
        if success:
            self.warm_until, self.since = 0.0, None
        return reason
