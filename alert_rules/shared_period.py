"""The availability over the SLO period and the budget left, computed once for the usual periods.

Each monitor's period ratio sums its hourly tiles over its own period (``alert_rules.rules``'s
period group, once an hour): the period is a range, which no series can set, so one expression
cannot serve every period. But periods are few in practice (a week, two or four weeks, 30 days):
for each of :data:`SHARED_PERIODS_MS` one expression sums every monitor's hourly tiles and keeps
the monitors whose recorded period (:data:`~alert_rules.names.SLO_PERIOD_RECORD`) it is, all in
one rule, then the budget left follows from each monitor's recorded objective. A monitor with
another period keeps its own period group (the only group it then has besides its two others).

Why it matters: a rule group costs Prometheus memory and a goroutine whatever it holds, and each
monitor had three (``benchmarks/RESULTS-rules-cost.md``); with these records shared, a monitor of
a usual period has two. Computing every shared period for every monitor reads each hourly tile
once per shared period, once an hour: at 10,000 monitors of 30 days, 4 x 720 samples per monitor
an hour, against 720 when each monitor summed its own (a few seconds of CPU an hour).
"""

from __future__ import annotations

from typing import Any

from alert_rules import durations, names, promql
from alert_rules.model import DAY_MS, MonitorSLO
from alert_rules.tiles import recent

SHARED_PERIODS_MS = (7 * DAY_MS, 14 * DAY_MS, 28 * DAY_MS, 30 * DAY_MS)


def shares_period(slo: MonitorSLO) -> bool:
    """Whether the shared rules compute the monitor's period records (else its period group does)."""
    return slo.objective.period_ms in SHARED_PERIODS_MS


def _of_period(period_ms: int, tile_ms: int) -> str:
    return f"{recent(names.SLO_PERIOD_RECORD, tile_ms)} == {period_ms // 1000}"


def _ratio_over(period_ms: int, hour: str, tile_ms: int) -> str:
    period = durations.format_ms(period_ms)
    errors, probes = (promql.sparse_tiles_sum(record(hour), period, hour)
                      for record in (names.errors_increase_record, names.probes_increase_record))
    return f"(\n{promql.ratio(errors, probes)}\n)\nand on ({promql.BY_MONITOR})\n({_of_period(period_ms, tile_ms)})"


def period_rules(hour: str, tile_ms: int) -> list[dict[str, Any]]:
    """The period ratio of every monitor of a shared period, then the budget left of each (after the
    hourly tiles, in the group that records them)."""
    on = f"on ({promql.BY_MONITOR})"
    ratios = "\nor\n".join(f"(\n{_ratio_over(ms, hour, tile_ms)}\n)" for ms in SHARED_PERIODS_MS)
    budget = f"(1 - {recent(names.SLO_OBJECTIVE_RECORD, tile_ms)})"
    shared = " or ".join(f"({_of_period(ms, tile_ms)})" for ms in SHARED_PERIODS_MS)
    remaining = f"(\n1 - {names.PERIOD_ERROR_RATIO_RECORD} / {on} {budget}\n)\nand {on}\n({shared})"
    return [{"record": names.PERIOD_ERROR_RATIO_RECORD, "expr": ratios},
            {"record": names.BUDGET_REMAINING_RECORD, "expr": remaining}]
