"""The idealised burn-rate math: when may a window pair fire, and when must it stop, for an outage.

Continuous time, no probe granularity, no evaluation interval, no ``for``: an error ratio ``r``
(1 for a hard outage) starts at t=0 and lasts ``outage_s``; a window ``W`` sees the ratio
``r * overlap([0, outage], [t-W, t]) / W``; a pair fires while both its windows exceed
``factor * budget``. Windows and factors are the SRE Workbook's for a 30-day period
(factor = budget share x period / long window).
"""

from __future__ import annotations

from decimal import Decimal

PERIOD_S = 30 * 86_400
PAIRS = (  # severity, long, short, budget share (SRE Workbook, table 5-8)
    ("critical", 3_600, 300, 0.02),
    ("critical", 6 * 3_600, 1_800, 0.05),
    ("warning", 86_400, 7_200, 0.10),
    ("warning", 3 * 86_400, 6 * 3_600, 0.10),
)


def _ratio(window: int, t: int, outage_s: int, r: float) -> float:
    overlap = max(0, min(t, outage_s) - max(0, t - window))
    return r * overlap / window


def firing(objective: Decimal, severity: str, r: float, outage_s: int, t: int) -> bool:
    budget = float((100 - objective) / 100)
    for sev, long, short, share in PAIRS:
        limit = share * PERIOD_S / long * budget
        if sev == severity and _ratio(long, t, outage_s, r) > limit and _ratio(short, t, outage_s, r) > limit:
            return True
    return False


def first_fire(objective: Decimal, severity: str, failure_every: int, outage_s: int, step_s: int = 1) -> int | None:
    """Seconds after the start when the math first allows ``severity`` to fire (None: never)."""
    del step_s  # the math is continuous; kept for symmetry with the measured columns
    r = 1 / failure_every
    return next((t for t in range(0, outage_s + 1) if firing(objective, severity, r, outage_s, t)), None)


def reset(objective: Decimal, severity: str, failure_every: int, outage_s: int, horizon_s: int = 4 * 86_400) -> int:
    """Seconds after the outage ends until ``severity`` must have stopped firing."""
    r = 1 / failure_every
    last = outage_s
    for t in range(outage_s, outage_s + horizon_s, 5):
        if firing(objective, severity, r, outage_s, t):
            last = t
    return last - outage_s
