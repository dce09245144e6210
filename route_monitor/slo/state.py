"""A monitor's SLO as read back from Prometheus, for ``status.slo`` and the ``BudgetExhausted``
condition (Contract 10); pure.

From one pass of queries (``alert_rules.readback``) a monitor gets a :class:`Reading`: failed
and all probes over its SLO period, and the recorded 1h error ratio. With its objective that
gives :class:`SloValues`: availability over the period, the share of the period's error budget
left (1 = untouched, 0 = spent, negative = overspent) and the 1h burn rate (1 = spending the
budget exactly over the period). A monitor of several vantages (Contract 12) also gets its last
hour twice: under the quorum (``uptime1h``, what pages and the budget count) and from all probes
of every location (``reachability1h``, the recorded ``_reachability`` ratio), so a place that
fails alone shows as reachability below uptime; and its period twice: the availability (under the
quorum) and its ``reachability`` over the period (the period's reachability tiles). Both
reachabilities are shown while the 1h one is recorded (the monitor is of several vantages now).
:func:`advance` turns the previous :class:`SloStatus` and a pass into the next one, keeping the
previous one (same object, nothing to write) while the values moved less than :data:`TOLERANCE`
and the condition is the same. Prometheus unreachable: the last values stay, reason
``SLOUnknown``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

Reason = Literal["BudgetRemaining", "BudgetExhausted", "SLOUnknown", "NoData"]
CONDITION = "BudgetExhausted"
_STATUS: dict[Reason, str] = {"BudgetRemaining": "False", "BudgetExhausted": "True", "SLOUnknown": "Unknown",
                              "NoData": "Unknown"}


@dataclass(frozen=True)
class Tolerance:
    """Changes smaller than these are not written (they are below what the status shows)."""

    availability: float = 1e-6
    """As a ratio: 0.0001 percentage points, the last digit written."""
    budget_remaining: float = 1e-3
    """As a ratio of the budget: 0.1 percentage points."""
    burn_rate: float = 0.01


TOLERANCE = Tolerance()


@dataclass(frozen=True)
class Reading:
    """What one pass of queries returned for one monitor."""

    failed: float
    """Failed probes over the SLO period (summed tiles)."""
    probes: float
    """All probes over the SLO period."""
    error_ratio_1h: float | None = None
    """The recorded 1h error ratio; None when Prometheus has none (no probes in the last hour)."""
    reachability_ratio_1h: float | None = None
    """A monitor of several vantages: the recorded 1h error ratio of all probes of every location
    (no quorum); None for one vantage (no such record)."""
    reachability_ratio: float | None = None
    """A monitor of several vantages: the error ratio of all probes of every location over the SLO
    period (its reachability tiles); None for one vantage (no such tiles)."""


@dataclass(frozen=True)
class SloValues:
    availability: float
    """Good probes / all probes over the period, 0..1."""
    budget_remaining: float
    """1 - (error ratio / error budget): 1 untouched, <= 0 spent."""
    burn_rate_1h: float | None
    uptime_1h: float | None = None
    """Several vantages only: good probes under the quorum over the last hour, 0..1."""
    reachability_1h: float | None = None
    """Several vantages only: good probes of every location over the last hour (no quorum), 0..1."""
    reachability: float | None = None
    """Several vantages only: good probes of every location over the period (no quorum), 0..1."""


def _good(ratio: float | None) -> float | None:
    return None if ratio is None or ratio != ratio else 1.0 - min(max(ratio, 0.0), 1.0)


@dataclass(frozen=True)
class SloStatus:
    window: str
    """The SLO period, as written in the spec's duration form (``30d``)."""
    reason: Reason
    message: str
    values: SloValues | None = None
    updated: float | None = None
    """When ``values`` were read (epoch seconds)."""


def values_of(reading: Reading, objective: Decimal) -> SloValues | None:
    """None when the period holds no probes (nothing to compute an availability from)."""
    if not reading.probes > 0:
        return None
    budget = float((Decimal(100) - objective) / Decimal(100))
    error_ratio = min(max(reading.failed / reading.probes, 0.0), 1.0)
    burn = None if reading.error_ratio_1h is None or reading.error_ratio_1h != reading.error_ratio_1h \
        else reading.error_ratio_1h / budget
    several = reading.reachability_ratio_1h is not None
    return SloValues(availability=1.0 - error_ratio, budget_remaining=1.0 - error_ratio / budget, burn_rate_1h=burn,
                     uptime_1h=_good(reading.error_ratio_1h) if several else None,
                     reachability_1h=_good(reading.reachability_ratio_1h),
                     reachability=_good(reading.reachability_ratio) if several else None)


def _apart(a: float | None, b: float | None, tolerance: float) -> bool:
    return (a is None) != (b is None) or (a is not None and b is not None and abs(a - b) >= tolerance)


def _moved(a: SloValues, b: SloValues, tol: Tolerance) -> bool:
    if (a.burn_rate_1h is None) != (b.burn_rate_1h is None):
        return True
    if any(_apart(x, y, tol.availability) for x, y in ((a.uptime_1h, b.uptime_1h),
                                                        (a.reachability_1h, b.reachability_1h),
                                                        (a.reachability, b.reachability))):
        return True
    burn = a.burn_rate_1h is not None and b.burn_rate_1h is not None \
        and abs(a.burn_rate_1h - b.burn_rate_1h) >= tol.burn_rate
    return (burn or abs(a.availability - b.availability) >= tol.availability
            or abs(a.budget_remaining - b.budget_remaining) >= tol.budget_remaining)


def percent(ratio: float, digits: int) -> str:
    text = f"{ratio * 100:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def rate_text(rate: float) -> str:
    """``0.4``, ``14.4``, ``0.04``, ``1.0``: two decimals at most, one at least."""
    text = f"{rate:.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def advance(previous: SloStatus | None, *, window: str, objective: Decimal, reading: Reading | None,
            now: float, error: str | None = None, tolerance: Tolerance = TOLERANCE) -> SloStatus:
    """The next status of one monitor after a pass (``error``: the pass failed)."""
    kept = previous if previous is not None and previous.window == window else None
    if error is not None:
        since = f"; values read at {timestamp(kept.updated)} kept" if kept and kept.updated else ""
        new = SloStatus(window, "SLOUnknown", f"cannot read the SLO from Prometheus: {error}{since}",
                        kept.values if kept else None, kept.updated if kept else None)
        return kept if kept is not None and (kept.reason, kept.message) == (new.reason, new.message) else new
    values = values_of(reading, objective) if reading is not None else None
    if values is None:
        new = SloStatus(window, "NoData", f"Prometheus has no probe results for this monitor over {window} yet")
        return kept if kept == new else new
    reason: Reason = "BudgetExhausted" if values.budget_remaining <= 0 else "BudgetRemaining"
    if kept is not None and kept.values is not None and kept.reason == reason \
            and not _moved(kept.values, values, tolerance):
        return kept
    spent = "error budget spent" if reason == "BudgetExhausted" else "of the error budget left"
    message = (f"availability {percent(values.availability, 4)}% over {window} (objective {objective}%): "
               f"{percent(values.budget_remaining, 1)}% {spent}{_locations_text(values, window)}")
    return SloStatus(window, reason, message, values, now)


def _locations_text(values: SloValues, window: str) -> str:
    """Several vantages: reachability over the period, and the last hour under the quorum beside
    all probes of every location."""
    if values.reachability_1h is None:
        return ""
    period = "" if values.reachability is None else \
        f"; reachability {percent(values.reachability, 4)}% over {window} from every location"
    uptime = "" if values.uptime_1h is None else f"uptime {percent(values.uptime_1h, 4)}% under the quorum, "
    return f"{period}; last hour: {uptime}reachability {percent(values.reachability_1h, 4)}% from every location"


def timestamp(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def fields(s: SloStatus) -> dict[str, Any]:
    """``status.slo``: numbers as strings, like ``spec.slo.availability`` (percent)."""
    out: dict[str, Any] = {"window": s.window}
    if s.values is not None:
        out["availability"] = percent(s.values.availability, 4)
        if s.values.reachability is not None:
            out["reachability"] = percent(s.values.reachability, 4)
        out["budgetRemaining"] = percent(s.values.budget_remaining, 1)
        if s.values.burn_rate_1h is not None:
            out["burnRate1h"] = rate_text(s.values.burn_rate_1h)
        if s.values.uptime_1h is not None:
            out["uptime1h"] = percent(s.values.uptime_1h, 4)
        if s.values.reachability_1h is not None:
            out["reachability1h"] = percent(s.values.reachability_1h, 4)
    if s.updated is not None:
        out["updated"] = timestamp(s.updated)
    return out


def condition(s: SloStatus) -> dict[str, Any]:
    return {"type": CONDITION, "status": _STATUS[s.reason], "reason": s.reason, "message": s.message}
