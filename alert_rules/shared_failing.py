"""Contract 11's failing records, computed once for every monitor probed at least once a minute.

A rule costs Prometheus about as much to evaluate whatever it selects (``benchmarks/RESULTS-rules-cost.md``:
at 500 monitors each monitor's failing record and its per-path record were 30 % of all rule
evaluation time, a ``vector(0.999)`` constant 5 %): one rule per monitor at every evaluation is
what makes the rules' cost grow with the monitor count. The failing record's window follows the
probe interval (``max(2 x interval, 1m)``, ``alert_rules.path_rules``), so one expression cannot
serve every monitor; but the intervals people use fall into few windows: every interval up to
30s has the 1m window, 1m has 2m. One rule computes the record for every monitor over each of
:data:`SHARED_WINDOWS_MS` and keeps, for each window, the monitors whose own window it is, and a
second one its ``reason="dns_error"`` series from the first one's (not computing the failing
condition twice, as one rule must: ``promql.with_reason``) (the series
:data:`~alert_rules.names.FAILING_WINDOW_RECORD`, recorded by the shared group from the interval
the engine exports: ``alert_rules.params``); a monitor probed less often keeps its own failing
record in its own fast group
(``alert_rules.rules``), which these rules leave alone (its window matches none of theirs).

The per-path record (:data:`~alert_rules.names.FAILING_ON_PATH_RECORD`) is computed here for every
monitor, right after the failing records, from every monitor's failing record (its own group's,
for a monitor probed less often, then up to one evaluation late).

Timing: every monitor's failing series is written at the same instant, by this group. A monitor's
page (its own fast group) reads them at most one evaluation late, its own included, which its
settle (``path_rules.settle_ms``) already covers for its siblings' (``alert_rules.path_verdict``).
A monitor's window series is recorded by this group from the engine's series, so its failing
record starts with its first scrape.
"""

from __future__ import annotations

from typing import Any

from alert_rules import names, path_rules, path_verdict, promql
from alert_rules.model import MonitorSLO
from alert_rules.tiles import recent

SHARED_WINDOWS_MS = (60_000, 120_000)
"""Failing windows computed here: probe intervals up to 30s (1m) and of 1m (2m)."""


def shares_failing(slo: MonitorSLO) -> bool:
    """Whether the shared rules compute the monitor's failing record (else its own group does)."""
    return path_rules.failing_window_ms(slo.interval_ms) in SHARED_WINDOWS_MS


def _of_window(expr: str, window_ms: int, tile_ms: int) -> str:
    recorded = recent(names.FAILING_WINDOW_RECORD, tile_ms)
    return f"(\n(\n{expr}\n)\nand on ({promql.BY_MONITOR})\n({recorded} == {window_ms // 1000})\n)"


def failing_rules(tile_ms: int) -> list[dict[str, Any]]:
    """The failing records of the shared windows (the failing series, then the DNS series from it,
    read in this very evaluation), then every monitor's per-path failing record."""
    parts = {ms: path_rules.failing_parts((), ms) for ms in SHARED_WINDOWS_MS}
    failing = "\nor\n".join(_of_window(one, ms, tile_ms) for ms, (one, _) in parts.items())
    by_dns = "\nor\n".join(_of_window(dns, ms, tile_ms) for ms, (_, dns) in parts.items())
    just_written = promql.selector(names.FAILING_RECORD, ((names.LABEL_REASON, ""),))
    every_monitor = path_verdict.failing_on_paths(f"{names.MONITOR_PATH_INFO}{{}}", f"{names.FAILING_RECORD}{{}}")
    return [{"record": names.FAILING_RECORD, "expr": failing},
            {"record": names.FAILING_RECORD, "expr": f"{just_written}\nand on ({promql.BY_MONITOR})\n(\n{by_dns}\n)",
             "labels": {names.LABEL_REASON: names.REASON_DNS_ERROR}},
            {"record": names.FAILING_ON_PATH_RECORD, "expr": every_monitor}]
