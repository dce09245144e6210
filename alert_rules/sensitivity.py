"""What a burn alert means in probes at a monitor's interval (numbers only).

Shared by ``findings`` (is an alert able to fire, is it as sensitive as the budget math says),
``explain`` (the human text of ``route-monitor check``) and ``fixtures`` (promtool scenarios).
Counts assume one probe per interval and windows fully covered by probes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from alert_rules.alerts import GUARD_MIN_BAD_PROBES
from alert_rules.windows import AlertWindow


def probes_in(window_ms: int, interval_ms: int) -> int:
    """Probes that fit in a window (at least 1)."""
    return max(1, window_ms // interval_ms)


def more_than(threshold: Decimal, probes: int) -> int:
    """The fewest bad probes among ``probes`` whose ratio is strictly above ``threshold``."""
    return math.floor(threshold * probes) + 1


@dataclass(frozen=True)
class Trip:
    """How one alert window pair trips at a given probe interval."""

    window: AlertWindow
    threshold: Decimal
    """Bad ratio above which both windows alert (``factor x budget``)."""
    long_probes: int
    short_probes: int
    bad_long: int
    """Bad probes needed within the long window (budget math and the 2-probe guard)."""
    bad_short: int
    """Bad probes needed within the short window."""
    possible: bool
    """False when the threshold is 100% or more: the alert can never fire."""

    @property
    def guard_binds(self) -> bool:
        """One bad probe alone would exceed the threshold: the guard waits for a second one."""
        return more_than(self.threshold, self.long_probes) < GUARD_MIN_BAD_PROBES

    @property
    def effective_factor(self) -> Decimal:
        """The burn rate that really trips the long window (higher than the factor if the guard binds)."""
        budget = self.threshold / self.window.factor
        return Decimal(self.bad_long) / Decimal(self.long_probes) / budget

    def outage_ms(self, interval_ms: int) -> int:
        """Full outage needed before both windows hold enough failed probes."""
        return max(self.bad_long, self.bad_short) * interval_ms

    def reset_ms(self, interval_ms: int) -> int:
        """After a long full outage, time until the short window falls back to the threshold."""
        return max(interval_ms, (self.short_probes - (self.bad_short - 1)) * interval_ms)


def trip(window: AlertWindow, budget: Decimal, interval_ms: int) -> Trip:
    threshold = window.threshold(budget)
    n_long = probes_in(window.long_ms, interval_ms)
    n_short = probes_in(window.short_ms, interval_ms)
    return Trip(
        window=window, threshold=threshold, long_probes=n_long, short_probes=n_short,
        bad_long=max(GUARD_MIN_BAD_PROBES, more_than(threshold, n_long)),
        bad_short=more_than(threshold, n_short),
        possible=threshold < 1,
    )


def interval_for_factor(window: AlertWindow, budget: Decimal) -> int:
    """The longest probe interval (ms) at which two bad probes in the long window are no more
    than the threshold, i.e. at which the guard does not make the alert less sensitive."""
    threshold = window.threshold(budget)
    return int(Decimal(window.long_ms) * threshold / GUARD_MIN_BAD_PROBES)
