"""Stage 1 of the generator: an SLO period -> alert windows and burn-rate factors (numbers only).

The table is the SRE Workbook's recommendation for multiwindow, multi-burn-rate alerts
(*The Site Reliability Workbook*, chapter 5 "Alerting on SLOs", table 5-8; the same rows as
Sloth's ``internal/alert/windows/google-30d.yaml`` and ``google-28d.yaml``):

============  ======  =======  ===============  ======================
severity      long    short    budget consumed  burn factor, 30d
============  ======  =======  ===============  ======================
page          1h      5m       2%               14.4
page          6h      30m      5%               6
ticket        1d      2h       10%              3
ticket        3d      6h       10%              1
============  ======  =======  ===============  ======================

The windows are detection choices (how soon a burn should be noticed) and stay the same for
every period; the factor is derived from the period, never hard-coded:
``factor = budget share x period / long window`` (an alert on the 1h window fires when 2% of
the period's budget is spent within that hour). For 28d that gives 13.44, 5.6, 2.8 and 0.93;
for 7d 3.36, 1.4, 0.7 and 0.23 (``findings`` warns about factors below 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from alert_rules import durations

Severity = Literal["page", "ticket"]

_H = 3_600_000
_M = 60_000


@dataclass(frozen=True)
class WindowRow:
    """One row of the cited table: independent of the SLO period."""

    severity: Severity
    long_ms: int
    short_ms: int
    budget_share: Decimal
    """Share of the period's error budget that, spent within ``long_ms``, should alert."""


WORKBOOK_WINDOWS: tuple[WindowRow, ...] = (
    WindowRow("page", 1 * _H, 5 * _M, Decimal("0.02")),
    WindowRow("page", 6 * _H, 30 * _M, Decimal("0.05")),
    WindowRow("ticket", 24 * _H, 2 * _H, Decimal("0.10")),
    WindowRow("ticket", 72 * _H, 6 * _H, Decimal("0.10")),
)
"""SRE Workbook table 5-8 (see the module docstring)."""


@dataclass(frozen=True)
class AlertWindow:
    """A row of the table resolved for one SLO period."""

    severity: Severity
    long_ms: int
    short_ms: int
    budget_share: Decimal
    factor: Decimal
    """Burn rate that spends ``budget_share`` of the period's budget within ``long_ms``."""

    @property
    def long(self) -> str:
        """The long window as a Prometheus duration (``1h``): also the ``long`` alert label."""
        return durations.format_ms(self.long_ms)

    @property
    def short(self) -> str:
        return durations.format_ms(self.short_ms)

    def threshold(self, budget: Decimal) -> Decimal:
        """The bad-event ratio above which this window alerts (``factor x budget``)."""
        return self.factor * budget


def burn_factor(row: WindowRow, period_ms: int) -> Decimal:
    """``budget share x period / long window``, exact (Decimal) for the periods people use."""
    return row.budget_share * Decimal(period_ms) / Decimal(row.long_ms)


def alert_windows(period_ms: int, rows: tuple[WindowRow, ...] = WORKBOOK_WINDOWS) -> tuple[AlertWindow, ...]:
    """The table for an SLO period, in table order (pages first, then tickets; short to long)."""
    return tuple(
        AlertWindow(r.severity, r.long_ms, r.short_ms, r.budget_share, burn_factor(r, period_ms)) for r in rows
    )


def windows_of(windows: tuple[AlertWindow, ...]) -> tuple[int, ...]:
    """Every distinct window length (ms) used by ``windows``, shortest first."""
    return tuple(sorted({w.long_ms for w in windows} | {w.short_ms for w in windows}))
