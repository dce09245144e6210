"""Stage 1 of the generator: SLO period -> alert windows and burn factors.

Covers: the SRE Workbook's 30-day table (chapter 5, table 5-8) reproduced exactly, factors
derived for other periods (28d, 7d, 90d) by ``budget share x period / long window``, table
order and immutability, and the distinct window lengths the rules record.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from alert_rules import durations
from alert_rules.windows import WORKBOOK_WINDOWS, alert_windows, windows_of

DAY = 86_400_000


def table(period: str) -> list[tuple[str, str, str, Decimal]]:
    return [(w.severity, w.long, w.short, w.factor) for w in alert_windows(durations.parse_ms(period))]


def test_30d_is_the_sre_workbook_table() -> None:
    assert table("30d") == [
        ("page", "1h", "5m", Decimal("14.4")),
        ("page", "6h", "30m", Decimal("6")),
        ("ticket", "1d", "2h", Decimal("3")),
        ("ticket", "3d", "6h", Decimal("1")),
    ]


@pytest.mark.parametrize(("period", "factors"), [
    pytest.param("30d", ["14.4", "6", "3", "1"], id="30d"),
    pytest.param("28d", ["13.44", "5.6", "2.8", "0.9333"], id="28d-sloth-google-28d"),
    pytest.param("7d", ["3.36", "1.4", "0.7", "0.2333"], id="7d"),
    pytest.param("90d", ["43.2", "18", "9", "3"], id="90d"),
])
def test_factor_is_budget_share_times_period_over_long_window(period: str, factors: list[str]) -> None:
    got = [round(f, 4) for *_, f in table(period)]
    assert got == [Decimal(f) for f in factors]


@pytest.mark.parametrize("period", ["30d", "28d", "7d"])
def test_windows_do_not_depend_on_the_period(period: str) -> None:
    assert [(s, lo, sh) for s, lo, sh, _ in table(period)] == [(s, lo, sh) for s, lo, sh, _ in table("30d")]


def test_budget_spent_within_the_long_window_is_the_budget_share() -> None:
    for w in alert_windows(30 * DAY):
        spent = w.factor * Decimal(w.long_ms) / Decimal(30 * DAY)
        assert spent == w.budget_share


def test_rows_are_frozen_and_pages_come_first() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        WORKBOOK_WINDOWS[0].long_ms = 1  # type: ignore[misc]
    assert [r.severity for r in WORKBOOK_WINDOWS] == ["page", "page", "ticket", "ticket"]
    assert all(r.short_ms < r.long_ms for r in WORKBOOK_WINDOWS)


def test_distinct_windows_shortest_first() -> None:
    assert [durations.format_ms(ms) for ms in windows_of(alert_windows(30 * DAY))] == \
        ["5m", "30m", "1h", "2h", "6h", "1d", "3d"]


def test_threshold_is_factor_times_budget() -> None:
    page = alert_windows(30 * DAY)[0]
    assert page.threshold(Decimal("0.001")) == Decimal("0.0144")
