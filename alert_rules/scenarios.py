"""A margin-aware model of the generated burn alerts, to pick promtool check times whose
outcome is certain (numbers only; the real verdict is promtool's).

Prometheus' ratios are extrapolated and the long windows are summed from 5-minute tiles read
at aligned steps, so a window may end up to one tile (5 minutes by default) early and span
up to one tile more;
counts of bad probes are exact or lower. :meth:`Sim.fires` answers True or False only when
every such variant agrees with a 5% margin on the ratios, else None.
"""

from __future__ import annotations

import math
from decimal import Decimal

from alert_rules import params
from alert_rules.model import MonitorSLO
from alert_rules.rules import enabled_windows, is_fast
from alert_rules.sensitivity import trip
from alert_rules.sli import slis
from alert_rules.timeline import Timeline, steps
from alert_rules.windows import AlertWindow

_EVAL_MS = 60_000
MAX_SCENARIO_MS = 8 * 3_600_000
MARGIN = 0.05
SLOW_BURN_RATES = (5.0, 4.0, 3.0, 2.5, 2.0, 1.5, 1.25)
"""Burn rates (multiples of the budget) tried for the slow-burn scenario, first that works wins."""


class Sim:
    def __init__(self, tl: Timeline, interval_ms: int, tile_ms: int) -> None:
        self.tl = tl
        self.interval_ms = interval_ms
        self.tile_ms = tile_ms

    def _one(self, kind: str, w: AlertWindow, thr: float, at_ms: int, lag: int, extra: int) -> bool | None:
        end = (at_ms - lag) // self.interval_ms
        bad_l, n_l = self.tl.bad(end - (w.long_ms + extra) // self.interval_ms, end, kind)
        bad_s, n_s = self.tl.bad(end - (w.short_ms + extra) // self.interval_ms, end, kind)
        r_l = bad_l / n_l if n_l else 0.0
        r_s = bad_s / n_s if n_s else 0.0
        if r_l > thr * (1 + MARGIN) and r_s > thr * (1 + MARGIN) and bad_l >= 3:
            return True
        if r_l < thr * (1 - MARGIN) or r_s < thr * (1 - MARGIN) or bad_l < 2:
            return False
        return None

    def fires(self, kind: str, w: AlertWindow, threshold: Decimal, at_ms: int) -> bool | None:
        tile = self.tile_ms
        combos = [(0, 0)] if is_fast(w) else [(0, 0), (tile, 0), (0, tile), (tile, tile)]
        verdicts = {self._one(kind, w, float(threshold), at_ms, lag, extra) for lag, extra in combos}
        return verdicts.pop() if len(verdicts) == 1 else None


def slow_burn_period(slo: MonitorSLO) -> tuple[Timeline, AlertWindow, int] | None:
    """A steady failure pattern (one failure every k probes) that surely opens a ticket and
    surely never pages, within eight hours, and when to check the ticket; None if none exists."""
    sli = slis(slo)[0]
    possible = [w for w in enabled_windows(slo) if trip(w, sli.budget, slo.interval_ms).possible]
    pages = [w for w in possible if w.severity == "page"]
    tickets = [w for w in possible if w.severity == "ticket"]
    if not tickets:
        return None
    interval = slo.interval_ms
    history = 1_800_000 // interval
    for rate in SLOW_BURN_RATES:
        k = math.ceil(1 / (rate * float(sli.budget)))
        if k < 2:
            continue
        length = history + 3 * k + 3_600_000 // interval
        if length * interval > MAX_SCENARIO_MS:
            continue
        parts = steps("ok", history)
        while len(parts) < length:
            parts += steps("ok", k - 1) + steps("fail", 1)
        tl = Timeline(slo.namespace, slo.name, tuple(parts), params=params.values(slo.objective, slo.interval_ms))
        sim = Sim(tl, interval, slo.tile_ms)
        every = min(_EVAL_MS, slo.tile_ms)
        times = range(every, len(parts) * interval + 1, every)
        if any(sim.fires("availability", w, w.threshold(sli.budget), t) is not False for w in pages for t in times):
            continue
        for t in reversed(times):
            for w in tickets:
                if sim.fires("availability", w, w.threshold(sli.budget), t):
                    return tl, w, t
    return None
