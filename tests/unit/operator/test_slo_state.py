"""``status.slo`` and the ``BudgetExhausted`` condition from what Prometheus returned (pure):

- values: availability, budget left (negative when overspent), 1h burn rate; no probes -> NoData;
  a NaN 1h ratio (no probes in the hour) -> no burn rate;
- several vantages: reachability over the period and the last hour beside the availability, in
  the fields and the message; none for a monitor of one vantage now;
- formatting as the status shows it (percent strings, never ``-0.0``);
- a change below the tolerance writes nothing (the same status object comes back); a change of
  condition always does; Prometheus unreachable keeps the values with reason ``SLOUnknown``;
- in the whole status: the condition sits beside the others without touching Ready; before a
  first read after a restart the previous ``status.slo`` and condition are kept; without
  ``--prometheus-url`` they are removed.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from route_monitor.operator import status
from route_monitor.operator.plan import Unresolved
from route_monitor.slo import state as slo_state
from route_monitor.slo.state import Reading, SloStatus, advance, fields

NOW = 1_795_000_000.0


def step(previous: SloStatus | None, reading: Reading | None, *, objective: str = "99.9", error: str | None = None,
         window: str = "30d") -> SloStatus:
    return advance(previous, window=window, objective=Decimal(objective), reading=reading, now=NOW, error=error)


@pytest.mark.parametrize(("reading", "objective", "want"), [
    pytest.param(Reading(269, 1_000_000, 0.0004), "99.9",
                 {"availability": "99.9731", "budgetRemaining": "73.1", "burnRate1h": "0.4"}, id="contract-example"),
    pytest.param(Reading(0, 5000, 0.0), "99.9", {"availability": "100.0000", "budgetRemaining": "100.0",
                                                  "burnRate1h": "0.0"}, id="untouched"),
    pytest.param(Reading(25, 5000, 0.0144), "99.9", {"availability": "99.5000", "budgetRemaining": "-400.0",
                                                      "burnRate1h": "14.4"}, id="overspent"),
    pytest.param(Reading(1, 1000, float("nan")), "99.9", {"availability": "99.9000", "budgetRemaining": "0.0"},
                 id="nan-ratio-no-burn"),
    pytest.param(Reading(10, 1000, None), "99", {"availability": "99.0000", "budgetRemaining": "0.0"},
                 id="exactly-spent"),
])
def test_values_as_the_status_shows_them(reading: Reading, objective: str, want: dict[str, str]) -> None:
    got = fields(step(None, reading, objective=objective))
    assert got == {"window": "30d", **want, "updated": "2026-11-18T11:06:40Z"}


@pytest.mark.parametrize(("reading", "status_", "reason"), [
    pytest.param(Reading(0, 100), "False", "BudgetRemaining", id="remaining"),
    pytest.param(Reading(1, 1000), "True", "BudgetExhausted", id="zero-left-is-exhausted"),
    pytest.param(Reading(0, 0), "Unknown", "NoData", id="no-probes"),
    pytest.param(None, "Unknown", "NoData", id="no-series"),
])
def test_condition(reading: Reading | None, status_: str, reason: str) -> None:
    c = slo_state.condition(step(None, reading))
    assert (c["type"], c["status"], c["reason"]) == ("BudgetExhausted", status_, reason)


def test_small_changes_keep_the_same_status_and_real_ones_do_not() -> None:
    first = step(None, Reading(269, 1_000_000, 0.0004))
    assert step(first, Reading(269, 1_000_100, 0.000401)) is first, "below every tolerance"
    assert step(first, Reading(280, 1_000_000, 0.0004)) is not first, "availability moved 0.0011 points"
    assert step(first, Reading(269, 1_000_000, 0.0005)) is not first, "burn rate moved 0.1"
    assert step(first, Reading(269, 1_000_000, None)) is not first, "burn rate gone"
    assert step(first, Reading(269, 1_000_000, 0.0004), window="7d") is not first, "another period"


def test_prometheus_unreachable_keeps_values_with_reason_slo_unknown() -> None:
    first = step(None, Reading(269, 1_000_000, 0.0004))
    down = step(first, None, error="http://prom:9090 unreachable after 3 attempts (ConnectError)")
    assert down.reason == "SLOUnknown" and down.values == first.values and down.updated == first.updated
    assert "values read at 2026-11-18T11:06:40Z kept" in down.message
    assert step(down, None, error="http://prom:9090 unreachable after 3 attempts (ConnectError)") is down
    back = step(down, Reading(269, 1_000_000, 0.0004))
    assert back.reason == "BudgetRemaining" and fields(back) == fields(first)
    never = step(None, None, error="down")
    assert never.values is None and fields(never) == {"window": "30d"}


def test_several_vantages_show_reachability_over_the_period_and_the_last_hour() -> None:
    several = step(None, Reading(100, 1000, 0.1, 0.2, 0.25), objective="99")
    assert fields(several) == {"window": "30d", "availability": "90.0000", "reachability": "75.0000",
                               "budgetRemaining": "-900.0", "burnRate1h": "10.0", "uptime1h": "90.0000",
                               "reachability1h": "80.0000", "updated": "2026-11-18T11:06:40Z"}
    assert several.message.endswith("error budget spent; reachability 75.0000% over 30d from every location; "
                                    "last hour: uptime 90.0000% under the quorum, reachability 80.0000% from "
                                    "every location")
    assert step(several, Reading(100, 1000, 0.1, 0.2, 0.25000001), objective="99") is several, "below tolerance"
    assert step(several, Reading(100, 1000, 0.1, 0.2, 0.2501), objective="99") is not several, "moved 0.01 points"
    gone = fields(step(several, Reading(100, 1000, 0.1, 0.2, None), objective="99"))
    assert "reachability" not in gone and gone["reachability1h"] == "80.0000", "no tiles: the period's is not shown"


def test_one_vantage_now_shows_no_reachability_from_tiles_of_earlier_in_the_period() -> None:
    """Its reachability is its availability; tiles left from days with several vantages are not shown."""
    assert set(fields(step(None, Reading(10, 1000, 0.01, None, 0.5)))) == {
        "window", "availability", "budgetRemaining", "burnRate1h", "updated"}


def test_no_negative_zero() -> None:
    assert slo_state.percent(-0.00001, 1) == "0.0"
    assert slo_state.rate_text(0.004) == "0.0" and slo_state.rate_text(1) == "1.0"


# --- in the whole status -------------------------------------------------------------------------
def build(obs: status.Observed, previous: dict[str, Any] | None = None) -> dict[str, Any]:
    return status.build(obs, previous, NOW, None)


def test_budget_exhausted_sits_beside_the_other_conditions_and_not_in_ready() -> None:
    exhausted = step(None, Reading(25, 5000, 0.0144))
    new = build(status.Observed(generation=1, target=Unresolved("NotFound", "no Route"), slo=exhausted))
    assert [c["type"] for c in new["conditions"]] == ["Ready", "TargetResolved", "Probing", "RulesApplied",
                                                      "BudgetExhausted"]
    assert new["conditions"][-1]["status"] == "True" and new["conditions"][0]["reason"] == "NotFound"
    assert new["slo"]["budgetRemaining"] == "-400.0"


def test_before_a_first_read_the_previous_slo_is_kept_and_without_the_option_removed() -> None:
    previous = build(status.Observed(generation=1, slo=step(None, Reading(0, 100))))
    restarted = build(status.Observed(generation=1, slo_enabled=True), previous)
    assert restarted["slo"] == previous["slo"]
    assert restarted["conditions"][-1] == previous["conditions"][-1]
    assert status.significant(restarted) == status.significant(previous), "nothing to write"
    off = build(status.Observed(generation=1), previous)
    assert off["slo"] is None, "a merge patch with null removes status.slo"
    assert "BudgetExhausted" not in [c["type"] for c in off["conditions"]]
    assert status.significant(off) != status.significant(previous)


def test_only_the_read_time_changing_is_not_significant() -> None:
    a = build(status.Observed(generation=1, slo=step(None, Reading(0, 100))))
    b = {**a, "slo": {**a["slo"], "updated": "2030-01-01T00:00:00Z"}}
    assert status.significant(a) == status.significant(b)
